{{/*
vigil.yaml: the chart's values in vigil serve's configuration format
(internal/config; examples/vigil.yaml), then the scrape configs in
Prometheus's own format. `vigil manifests` loads the result with vigil
serve's loader, and its tests with Prometheus's.
*/}}
{{- define "vigil.config" -}}
{{- $v := .Values.vigil }}
{{- $cfg := dict "storage" (dict "retention" $v.retention) }}
{{- if $v.memoryBudget }}
{{- $_ := set $cfg "memory" (dict "budget" $v.memoryBudget) }}
{{- end }}
{{- $alerting := dict }}
{{- with $v.alerting.alertmanagers }}{{ $_ := set $alerting "alertmanagers" . }}{{ end }}
{{- with $v.alerting.webhooks }}{{ $_ := set $alerting "webhooks" . }}{{ end }}
{{- with $v.alerting.externalUrl }}{{ $_ := set $alerting "external_url" . }}{{ end }}
{{- with $v.alerting.externalLabels }}{{ $_ := set $alerting "external_labels" . }}{{ end }}
{{- if $alerting }}{{ $_ := set $cfg "alerting" $alerting }}{{ end }}
{{- if $v.source.url }}
{{- $source := dict "url" $v.source.url "timeout" $v.source.timeout }}
{{- with $v.source.selector }}{{ $_ := set $source "selector" . }}{{ end }}
{{- if $v.source.headers }}
{{- $headers := dict }}
{{- range $name, $value := $v.source.headers }}
{{- $_ := set $headers $name (dict "values" (list $value)) }}
{{- end }}
{{- $_ := set $source "http_headers" $headers }}
{{- end }}
{{- $_ := set $cfg "source" $source }}
{{- end }}
{{- if $v.forwarding.endpoint }}
{{- $_ := set $cfg "forwarding" (dict "endpoint" $v.forwarding.endpoint "headers" $v.forwarding.headers) }}
{{- end }}
{{- $cfg = mergeOverwrite $cfg (deepCopy $v.extraConfig) }}
{{- toYaml $cfg }}
{{- $jobs := include "vigil.scrapeConfigs" . | trim }}
{{- $global := dict }}
{{- if $jobs }}{{ $_ := set $global "scrape_interval" .Values.scrape.interval }}{{ end }}
{{- with $v.externalLabels }}{{ $_ := set $global "external_labels" . }}{{ end }}
{{- if $global }}
global:
  {{- toYaml $global | nindent 2 }}
{{- end }}
{{- /* Prometheus's sections' lists are indented: vigil serve reads a
Prometheus section up to the next line that starts in column 0. */}}
{{- with $v.remoteWrite }}
remote_write:
{{ toYaml . | indent 2 }}
{{- end }}
{{- if $jobs }}
scrape_configs:
{{ $jobs | indent 2 }}
{{- end }}
{{- end }}

{{/* The scrape jobs; each drops pods that are not running. */}}
{{- define "vigil.scrapeConfigs" -}}
{{- $s := .Values.scrape }}
{{- if $s.dcgmExporter.enabled }}
# dcgm-exporter's pods, as NVIDIA's chart labels them
# (app.kubernetes.io/name: dcgm-exporter) or the GPU operator does
# (app: nvidia-dcgm-exporter), on their "metrics" port. honor_labels keeps the
# pod, namespace and container of the workload that holds each GPU (from the
# kubelet's pod-resources socket) as dcgm-exporter reports them.
- job_name: dcgm-exporter
  honor_labels: true
  kubernetes_sd_configs:
    - role: pod
  relabel_configs:
    - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name, __meta_kubernetes_pod_label_app]
      separator: ;
      regex: dcgm-exporter;.*|.*;nvidia-dcgm-exporter
      action: keep
    - source_labels: [__meta_kubernetes_pod_container_port_name]
      regex: metrics
      action: keep
    - source_labels: [__meta_kubernetes_pod_phase]
      regex: Running
      action: keep
    - source_labels: [__meta_kubernetes_pod_node_name]
      target_label: node
{{- end }}
{{- if $s.inference.enabled }}
# Inference servers (vLLM, SGLang, TGI, Triton, NIM).{{ if $s.inference.annotations }} Pods annotated
# prometheus.io/scrape: "true" are scraped at prometheus.io/port,
# prometheus.io/path and prometheus.io/scheme.{{ end }}{{ if $s.inference.appLabels }} Pods whose
# app.kubernetes.io/name or app label is one of {{ $s.inference.appLabels }}
# are scraped at /metrics on container ports named {{ $s.inference.portNames }}.{{ end }}
- job_name: inference
  kubernetes_sd_configs:
    - role: pod
  relabel_configs:
    - source_labels: [__meta_kubernetes_pod_phase]
      regex: Running
      action: keep
    {{- $keep := list }}
    {{- if $s.inference.annotations }}
    {{- $keep = append $keep "true;.*" }}
    {{- end }}
    {{- if $s.inference.appLabels }}
    {{- $keep = append $keep (printf "[^;]*;(%s);[^;]*;(%s)" $s.inference.appLabels $s.inference.portNames) }}
    {{- $keep = append $keep (printf "[^;]*;[^;]*;(%s);(%s)" $s.inference.appLabels $s.inference.portNames) }}
    {{- end }}
    {{- if not $keep }}
    {{- fail "scrape.inference: enabled needs annotations: true or appLabels" }}
    {{- end }}
    - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape, __meta_kubernetes_pod_label_app_kubernetes_io_name, __meta_kubernetes_pod_label_app, __meta_kubernetes_pod_container_port_name]
      separator: ;
      regex: {{ join "|" $keep | quote }}
      action: keep
    # Never the exporters the other jobs scrape, even when annotated.
    - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name]
      regex: dcgm-exporter|kube-state-metrics|prometheus-node-exporter|{{ include "vigil.name" . }}
      action: drop
    {{- if $s.inference.annotations }}
    - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
      regex: (.+)
      target_label: __metrics_path__
    - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scheme]
      regex: (https?)
      target_label: __scheme__
    - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
      regex: '(.+?)(?::\d+)?;(\d+)'
      replacement: '$1:$2'
      target_label: __address__
    {{- end }}
    - source_labels: [__meta_kubernetes_namespace]
      target_label: namespace
    - source_labels: [__meta_kubernetes_pod_name]
      target_label: pod
    - source_labels: [__meta_kubernetes_pod_node_name]
      target_label: node
{{- end }}
{{- if $s.kubeStateMetrics.enabled }}
# kube-state-metrics, as its chart labels its pods
# (app.kubernetes.io/name: kube-state-metrics), on its "http" port (metrics
# at 8080 in its chart). Its series name the pod, namespace and node they
# describe: honor_labels keeps them, and no target label is added, since
# kube-state-metrics' own pod is no workload.
- job_name: kube-state-metrics
  honor_labels: true
  kubernetes_sd_configs:
    - role: pod
  relabel_configs:
    - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name]
      regex: kube-state-metrics
      action: keep
    - source_labels: [__meta_kubernetes_pod_container_port_name]
      regex: http|http-metrics
      action: keep
    - source_labels: [__meta_kubernetes_pod_phase]
      regex: Running
      action: keep
{{- end }}
{{- if $s.nodeExporter.enabled }}
# node-exporter, as the prometheus-node-exporter chart labels its pods
# (app.kubernetes.io/name: prometheus-node-exporter), on its "metrics" port.
# node and instance are the node's name, as kube-prometheus-stack relabels
# them.
- job_name: node-exporter
  kubernetes_sd_configs:
    - role: pod
  relabel_configs:
    - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name]
      regex: prometheus-node-exporter
      action: keep
    - source_labels: [__meta_kubernetes_pod_container_port_name]
      regex: metrics
      action: keep
    - source_labels: [__meta_kubernetes_pod_phase]
      regex: Running
      action: keep
    - source_labels: [__meta_kubernetes_pod_node_name]
      target_label: node
    - source_labels: [__meta_kubernetes_pod_node_name]
      target_label: instance
{{- end }}
{{- with $s.extraScrapeConfigs }}
{{ toYaml . }}
{{- end }}
{{- end }}
