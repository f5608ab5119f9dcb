{{/* The chart's name, at most 63 characters (a DNS label). */}}
{{- define "vigil.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name when it holds the chart's. */}}
{{- define "vigil.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "vigil.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "vigil.labels" -}}
helm.sh/chart: {{ include "vigil.chart" . }}
{{ include "vigil.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vigil
{{- end }}

{{/* The labels that select Vigil's pods. */}}
{{- define "vigil.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vigil.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "vigil.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "vigil.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "vigil.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The labels of the dcgm-exporter DaemonSet's pods: app.kubernetes.io/name
is dcgm-exporter, as NVIDIA's chart sets it, so the dcgm-exporter scrape job
finds them like any other dcgm-exporter. */}}
{{- define "vigil.dcgmExporterSelectorLabels" -}}
app.kubernetes.io/name: dcgm-exporter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* What Prometheus's Kubernetes discovery reads for the rendered scrape
configs, one "group/resource" a line (core for the core group): the built-in
jobs use role pod; extraScrapeConfigs add their roles' and attach_metadata's
resources. */}}
{{- define "vigil.discoveryResources" -}}
{{- $res := list }}
{{- $s := .Values.scrape }}
{{- if or $s.dcgmExporter.enabled $s.inference.enabled $s.kubeStateMetrics.enabled $s.nodeExporter.enabled }}
{{- $res = append $res "core/pods" }}
{{- end }}
{{- range $s.extraScrapeConfigs }}
{{- range (get . "kubernetes_sd_configs" | default list) }}
{{- $role := get . "role" }}
{{- if eq $role "pod" }}{{ $res = append $res "core/pods" }}
{{- else if eq $role "node" }}{{ $res = append $res "core/nodes" }}
{{- else if eq $role "service" }}{{ $res = append $res "core/services" }}
{{- else if eq $role "endpoints" }}{{ $res = concat $res (list "core/endpoints" "core/services" "core/pods") }}
{{- else if eq $role "endpointslice" }}{{ $res = concat $res (list "discovery.k8s.io/endpointslices" "core/services" "core/pods") }}
{{- else if eq $role "ingress" }}{{ $res = append $res "networking.k8s.io/ingresses" }}
{{- else }}{{ fail (printf "scrape.extraScrapeConfigs: kubernetes_sd_configs role %q is not pod, node, service, endpoints, endpointslice or ingress" $role) }}
{{- end }}
{{- $meta := get . "attach_metadata" | default dict }}
{{- if get $meta "node" }}{{ $res = append $res "core/nodes" }}{{ end }}
{{- if get $meta "namespace" }}{{ $res = append $res "core/namespaces" }}{{ end }}
{{- if get $meta "deployment" }}{{ $res = append $res "apps/replicasets" }}{{ end }}
{{- if or (get $meta "job") (get $meta "cronjob") }}{{ $res = append $res "batch/jobs" }}{{ end }}
{{- end }}
{{- end }}
{{- range ($res | uniq | sortAlpha) }}
{{ . }}
{{- end }}
{{- end }}

{{/* host:port for a listen flag; an IPv6 host goes in brackets. */}}
{{- define "vigil.listen" -}}
{{- $host := index . 0 }}
{{- $port := index . 1 }}
{{- if contains ":" $host }}
{{- printf "[%s]:%v" $host $port }}
{{- else }}
{{- printf "%s:%v" $host $port }}
{{- end }}
{{- end }}

{{/*
The scheme and headers of the probes' httpGet: HTTPS when the web
configuration serves TLS, the probe user's header with basic auth.
*/}}
{{- define "vigil.probeAuth" -}}
{{- if .Values.security.tls }}
scheme: HTTPS
{{- end }}
{{- with .Values.security.probeHeaders }}
httpHeaders:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
