package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/topology"
)

// Coverage is what a diagnosis could see: for each layer of the cluster,
// how many of its entities the data names and in which vocabularies, and
// what Vigil is blind to. A verdict of healthy needs the layers to be
// present (DESIGN.md): with no telemetry in a vocabulary Vigil knows, the
// report is blind, not healthy.
type Coverage struct {
	// Layers has every layer, even those the data says nothing about.
	Layers Layers `json:"layers"`
	// Blind names what Vigil cannot see though it should: a node whose
	// GPUs dcgm-exporter stopped reporting while the node is up (or one GPU
	// of it), a node with GPUs and no dcgm-exporter series, or, with an
	// empty entity, the whole cluster when no series is in a vocabulary
	// Vigil knows.
	Blind []BlindSpot `json:"blind"`
}

// Layers holds one Layer per layer of the cluster, in DESIGN.md's keys.
type Layers struct {
	// GPU counts the GPUs of the topology at the evaluation time: those
	// dcgm-exporter reports, and those it stopped reporting on a node
	// that is still up (Blind says which).
	GPU Layer `json:"gpu"`
	// Node counts the nodes node-exporter reports.
	Node Layer `json:"node"`
	// Kubernetes counts the nodes and pods kube-state-metrics reports; a
	// training job's own progress metric (the training vocabulary) is read
	// here too, as it describes a Kubernetes workload.
	Kubernetes Layer `json:"kubernetes"`
	// Inference counts the model servers (pods) and the models they serve.
	Inference Layer `json:"inference"`
	// RequestPath counts the services of the span metrics and the service
	// graph.
	RequestPath Layer `json:"request_path"`
	// Logs counts the nodes, pods and services Vigil's log-derived counters
	// name.
	Logs Layer `json:"logs"`
	// Generic is set with an entity label only: the entities the generic
	// layer ranks, counted under the label's name, in any vocabulary.
	Generic *Layer `json:"generic,omitempty"`
}

// Layer is what the data shows of one layer.
type Layer struct {
	// Entities counts the layer's entities the data names: the sum of
	// Counts.
	Entities int `json:"entities"`
	// Vocabularies are the vocabularies the layer was read in, sorted: the
	// catalog's (dcgm-exporter, kube-state-metrics, node-exporter, vllm,
	// ...) and Vocabulary* for what the catalog does not hold.
	Vocabularies []string `json:"vocabularies"`
	// Counts breaks Entities down by what they are: gpu, node, pod,
	// server, model, service.
	Counts map[string]int `json:"counts,omitempty"`
}

// MarshalJSON writes a layer without vocabularies as [], not null.
func (l Layer) MarshalJSON() ([]byte, error) {
	type plain Layer
	if l.Vocabularies == nil {
		l.Vocabularies = []string{}
	}
	return json.Marshal(plain(l))
}

// MarshalJSON writes a coverage without blind spots as [], not null.
func (c Coverage) MarshalJSON() ([]byte, error) {
	type plain Coverage
	if c.Blind == nil {
		c.Blind = []BlindSpot{}
	}
	return json.Marshal(plain(c))
}

// BlindSpot is something Vigil cannot see, and why.
type BlindSpot struct {
	// Entity is a node, a GPU ({node, gpu}) or, empty, the whole cluster.
	Entity Entity `json:"entity"`
	// Reason says why, in one sentence.
	Reason string `json:"reason"`
	// Since is when it went dark, where known.
	Since *time.Time `json:"since,omitempty"`
}

// Blind reports whether the diagnosis saw no telemetry in a vocabulary
// Vigil knows and had no entity label to rank: nothing can be said about
// the cluster's health, so it is not healthy either.
func (r *Report) Blind() bool {
	return slices.ContainsFunc(r.Coverage.Blind, func(b BlindSpot) bool { return len(b.Entity) == 0 })
}

// The names of the vocabularies the catalog does not hold, as
// Layer.Vocabularies lists them.
const (
	// VocabularySpanMetrics is the OpenTelemetry spanmetrics connector's
	// traces_span_metrics_*.
	VocabularySpanMetrics = "spanmetrics"
	// VocabularyServiceGraph is the OpenTelemetry servicegraph connector's
	// traces_service_graph_*.
	VocabularyServiceGraph = "servicegraph"
	// VocabularyLogs is the counters Vigil derives from logs
	// (vigil_log_events_total, vigil_log_xid_total).
	VocabularyLogs = "vigil-logs"
	// VocabularyDrift is Vigil's model drift scores (vigil_feature_drift).
	VocabularyDrift = "vigil-drift"
	// VocabularyModelAccuracy is a model's quality metric (model_accuracy).
	VocabularyModelAccuracy = "model-accuracy"
)

// The layers, as layerVocabularies keys them.
const (
	layerGPU         = "gpu"
	layerNode        = "node"
	layerKubernetes  = "kubernetes"
	layerInference   = "inference"
	layerRequestPath = "request_path"
	layerLogs        = "logs"
)

// layerOf is the layer a catalog vocabulary describes.
func layerOf(voc catalog.Vocabulary) string {
	switch voc {
	case catalog.DCGMExporter:
		return layerGPU
	case catalog.NodeExporter:
		return layerNode
	case catalog.KubeStateMetrics, catalog.CAdvisor, catalog.Training:
		return layerKubernetes
	}
	return layerInference
}

// layerVocabularies lists, per layer, the vocabularies the window's metric
// names are in, sorted.
func (v *view) layerVocabularies() map[string][]string {
	out := map[string][]string{}
	for _, voc := range v.knownVocabularies() {
		l := layerOf(voc)
		out[l] = append(out[l], string(voc))
	}
	for _, x := range []struct {
		layer, voc string
		metrics    []string
	}{
		{layerRequestPath, VocabularyServiceGraph, []string{graphRequests, graphFailed}},
		{layerRequestPath, VocabularySpanMetrics, []string{spanCalls, "traces_span_metrics_duration_seconds_bucket"}},
		{layerLogs, VocabularyLogs, []string{metricLogEvents, metricLogXID}},
		{layerInference, VocabularyDrift, []string{metricDrift}},
		{layerInference, VocabularyModelAccuracy, []string{metricAccuracy}},
	} {
		if slices.ContainsFunc(x.metrics, v.have.Has) {
			out[x.layer] = append(out[x.layer], x.voc)
		}
	}
	for _, vs := range out {
		slices.Sort(vs)
	}
	return out
}

// coverage says what the diagnosis saw, from what it already read: the
// metric names, the topology, the inference tables and, when the
// knowledge layer ran (an is not nil), the service graph and the
// exporter_down candidates of hypExporterDown — Vigil is blind to what
// those name. Only the log counters, the drift scores and the names of
// span metrics' and the graph's services (when the knowledge layer did
// not read the graph) are listed here, without their samples where the
// store allows. blind says that no vocabulary Vigil knows was read and no
// entity label asks for the generic layer.
func (v *view) coverage(ctx context.Context, an *analysis, blind bool) (Coverage, error) {
	vocs := v.layerVocabularies()
	var gpus, hostNodes, kubeNodes, pods int
	for _, n := range v.topo.Nodes {
		gpus += len(n.GPUs)
		if hasSource(n.Identities, catalog.NodeExporter) {
			hostNodes++
		}
		if hasSource(n.Identities, catalog.KubeStateMetrics) {
			kubeNodes++
		}
		pods += len(n.Pods)
	}
	if !slices.Contains(vocs[layerKubernetes], string(catalog.KubeStateMetrics)) {
		pods = 0 // dcgm-exporter's pod labels alone are not Kubernetes' view
	}
	servers, models, err := v.inferenceEntities(ctx)
	if err != nil {
		return Coverage{}, err
	}
	services, err := v.requestPathServices(ctx, an)
	if err != nil {
		return Coverage{}, err
	}
	logged, err := v.loggedEntities(ctx, an)
	if err != nil {
		return Coverage{}, err
	}
	c := Coverage{
		Layers: Layers{
			GPU:         newLayer(vocs[layerGPU], "gpu", gpus),
			Node:        newLayer(vocs[layerNode], "node", hostNodes),
			Kubernetes:  newLayer(vocs[layerKubernetes], "node", kubeNodes, "pod", pods),
			Inference:   newLayer(vocs[layerInference], "server", servers, "model", models),
			RequestPath: newLayer(vocs[layerRequestPath], "service", services),
			Logs:        newLayer(vocs[layerLogs], "node", logged["node"], "pod", logged["pod"], "service", logged["service"]),
		},
		Blind: []BlindSpot{},
	}
	if label := v.e.opts.EntityLabel; label != "" {
		vals, err := v.labelValues(ctx, label, "")
		if err != nil {
			return Coverage{}, err
		}
		g := newLayer(nil, label, len(vals))
		c.Layers.Generic = &g
	}
	if blind {
		c.Blind = append(c.Blind, BlindSpot{Entity: Entity{}, Reason: v.blindReason()})
	}
	c.Blind = append(c.Blind, v.blindGPUs(an)...)
	return c, nil
}

// newLayer is a layer with its vocabularies and its counts, given as
// pairs of what and how many; the counts at zero are left out.
func newLayer(vocs []string, counts ...any) Layer {
	l := Layer{Vocabularies: vocs}
	if l.Vocabularies == nil {
		l.Vocabularies = []string{}
	}
	for i := 0; i+1 < len(counts); i += 2 {
		what, n := counts[i].(string), counts[i+1].(int)
		if n == 0 {
			continue
		}
		if l.Counts == nil {
			l.Counts = map[string]int{}
		}
		l.Counts[what] = n
		l.Entities += n
	}
	return l
}

// hasSource reports whether a source of the catalog's vocabulary names the
// node.
func hasSource(ids []topology.Identity, voc catalog.Vocabulary) bool {
	return slices.ContainsFunc(ids, func(id topology.Identity) bool { return id.Source == string(voc) })
}

// inferenceEntities counts the model servers (pods) and the models (per
// namespace) the topology places, with those of the inference tables the
// engine read and the models the drift scores name; a model named without
// a namespace counts where no namespace serves it.
func (v *view) inferenceEntities(ctx context.Context) (servers, models int, err error) {
	pods, names := map[string]bool{}, map[string]bool{}
	for _, n := range v.topo.Nodes {
		for _, p := range n.Pods {
			if p.Model != "" {
				pods[podKey(p.Namespace, p.Pod)] = true
			}
		}
	}
	var found []Entity
	for _, m := range v.topo.Models {
		found = append(found, Entity{catalog.KeyNamespace: m.Namespace, catalog.KeyModel: m.Name})
	}
	v.mu.Lock()
	tables := slices.Collect(maps.Values(v.cache))
	v.mu.Unlock()
	for _, t := range tables {
		voc, ok := v.e.opts.Catalog.Vocabulary(t.metric)
		if !ok || layerOf(voc) != layerInference {
			continue
		}
		for _, r := range t.rows {
			if p := r.ent[catalog.KeyPod]; p != "" {
				pods[podKey(r.ent[catalog.KeyNamespace], p)] = true
			}
			found = append(found, r.ent)
		}
	}
	if v.have.Has(metricDrift) || v.have.Has(metricAccuracy) {
		ls, err := v.seriesLabels(ctx, metricDrift, metricAccuracy)
		if err != nil {
			return 0, 0, err
		}
		for _, l := range ls {
			found = append(found, Entity{catalog.KeyNamespace: l.Get("namespace"), catalog.KeyModel: l.Get("model")})
		}
	}
	served := map[string]bool{}
	for _, e := range found {
		if m, ns := e[catalog.KeyModel], e[catalog.KeyNamespace]; m != "" && ns != "" {
			names[ns+"/"+m], served[m] = true, true
		}
	}
	for _, e := range found {
		if m := e[catalog.KeyModel]; m != "" && e[catalog.KeyNamespace] == "" && !served[m] {
			names["/"+m] = true
		}
	}
	return len(pods), len(names), nil
}

// requestPathServices counts the services of the service graph (the one
// the knowledge layer read, else its label values) and of the span
// metrics, the connectors' virtual user aside.
func (v *view) requestPathServices(ctx context.Context, an *analysis) (int, error) {
	svcs := map[string]bool{}
	switch {
	case an != nil && an.rp != nil:
		for _, s := range an.rp.g.services {
			svcs[s] = true
		}
	case v.hasGraph():
		servers, err := v.labelValues(ctx, "server", graphRequests)
		if err != nil {
			return 0, err
		}
		clients, err := v.labelValues(ctx, "client", graphRequests)
		if err != nil {
			return 0, err
		}
		for _, s := range servers {
			svcs[s] = true
		}
		for _, c := range clients {
			if c != virtualUser || svcs[virtualUser] {
				svcs[c] = true
			}
		}
	}
	if v.have.Has(spanCalls) {
		names, err := v.labelValues(ctx, "service_name", spanCalls)
		if err != nil {
			return 0, err
		}
		for _, s := range names {
			svcs[s] = true
		}
	}
	delete(svcs, "")
	return len(svcs), nil
}

// loggedEntities counts the nodes, pods and services the log-derived
// counters name, by kind (node, pod, service).
func (v *view) loggedEntities(ctx context.Context, an *analysis) (map[string]int, error) {
	if !v.have.Has(metricLogEvents) && !v.have.Has(metricLogXID) {
		return nil, nil
	}
	ls, err := v.seriesLabels(ctx, metricLogEvents, metricLogXID)
	if err != nil {
		return nil, err
	}
	seen := map[string]map[string]bool{"node": {}, "pod": {}, "service": {}}
	for _, l := range ls {
		if l.Get("otel_metric_overflow") != "" {
			continue // the overflow series names no entity
		}
		if node := l.Get("node"); node != "" {
			if an != nil {
				node = an.logNode(node)
			}
			seen["node"][node] = true
		}
		if pod := l.Get("pod"); pod != "" {
			seen["pod"][podKey(l.Get("namespace"), pod)] = true
		}
		if svc := l.Get("service"); svc != "" {
			seen["service"][svc] = true
		}
	}
	out := map[string]int{}
	for k, s := range seen {
		out[k] = len(s)
	}
	return out, nil
}

// labelValues lists the values of a label on a metric's series (metric
// empty: on every series) in the view's window.
func (v *view) labelValues(ctx context.Context, label, metric string) ([]string, error) {
	q, err := v.src.Querier(v.start.Add(-lookbackFor(v.step)).UnixMilli(), v.at.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	var ms []*labels.Matcher
	if metric != "" {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, metric))
	}
	vals, _, err := q.LabelValues(ctx, label, nil, ms...)
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", label, metric, err)
	}
	return vals, nil
}

// seriesLabels lists the label sets of the metrics' series in the view's
// window; the embedded store answers from its index without reading a
// sample.
func (v *view) seriesLabels(ctx context.Context, metrics ...string) ([]labels.Labels, error) {
	startMs, endMs := v.start.Add(-lookbackFor(v.step)).UnixMilli(), v.at.UnixMilli()
	q, err := v.src.Querier(startMs, endMs)
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	re := strings.Join(metrics, "|")
	ss := q.Select(ctx, false, &storage.SelectHints{Start: startMs, End: endMs, Func: "series"},
		labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, re))
	var out []labels.Labels
	for ss.Next() {
		out = append(out, ss.At().Labels())
	}
	if err := ss.Err(); err != nil {
		return nil, fmt.Errorf("list the series of %s: %w", re, err)
	}
	return out, nil
}

// maxBlindExamples is how many metric names the blind verdict quotes.
const maxBlindExamples = 3

// blindReason says why the whole cluster is unseen: the window's metric
// names, a few quoted, are in no vocabulary Vigil knows.
func (v *view) blindReason() string {
	names := slices.Sorted(maps.Keys(v.have))
	quoted := strings.Join(names[:min(len(names), maxBlindExamples)], ", ")
	if len(names) > maxBlindExamples {
		quoted += ", …"
	}
	what := fmt.Sprintf("%d metric names", len(names))
	if len(names) == 1 {
		what = "1 metric name"
	}
	return fmt.Sprintf("no telemetry Vigil knows (%s: %s; none is dcgm-exporter's, kube-state-metrics', node-exporter's, "+
		"an inference server's, span metrics, a service graph or Vigil's log counters)", what, quoted)
}

// blindGPUs names the nodes and GPUs Vigil cannot see while the node is
// up: those hypExporterDown names exporter_down (dcgm-exporter's series
// stopped while the node stays Ready and node-exporter answers), then the
// nodes kube-state-metrics gives GPUs (capacity, or pods that request
// them) that no dcgm-exporter series names.
func (v *view) blindGPUs(an *analysis) []BlindSpot {
	var out []BlindSpot
	named := map[string]bool{}
	if an != nil {
		for _, c := range an.cands {
			if c.kind != KindExporterDown {
				continue
			}
			node, gpu := c.ent[catalog.KeyNode], c.ent[catalog.KeyGPU]
			named[node] = true
			b := BlindSpot{Entity: maps.Clone(c.ent)}
			when := "in the window"
			if !c.onset.IsZero() {
				t := c.onset
				b.Since = &t
				when = "at " + t.UTC().Format(time.TimeOnly)
			}
			b.Reason = fmt.Sprintf("dcgm-exporter stopped reporting its GPUs %s while the node is up", when)
			if gpu != "" {
				b.Reason = fmt.Sprintf("dcgm-exporter stopped reporting GPU %s %s while the node's other GPUs still report", gpu, when)
			}
			out = append(out, b)
		}
	}
	for _, n := range v.topo.Nodes {
		if n.Name == "" || named[n.Name] || len(n.GPUs) > 0 || n.Ready != nil && !*n.Ready {
			continue
		}
		requested := 0
		for _, p := range n.Pods {
			requested += p.GPURequest
		}
		var why string
		switch {
		case n.GPUCapacity > 0:
			why = fmt.Sprintf("kube-state-metrics gives it %d GPUs (nvidia.com/gpu capacity) and no dcgm-exporter series names them", n.GPUCapacity)
		case requested > 0:
			why = fmt.Sprintf("its pods request %d GPUs (nvidia.com/gpu) and no dcgm-exporter series names them", requested)
		default:
			continue
		}
		out = append(out, BlindSpot{Entity: Entity{catalog.KeyNode: n.Name}, Reason: why})
	}
	return out
}
