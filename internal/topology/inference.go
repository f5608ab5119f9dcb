package topology

import (
	"context"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// modelSignals are the inference signals whose series name the served
// model of every server that has one (vLLM, NIM, SGLang, Triton, ...).
var modelSignals = [...]string{"infer.requests_running", "infer.queue_depth"}

// modelIndex holds the served models found.
type modelIndex struct {
	rows []modelRow
}

// modelRow is one server's model, and what names its pod.
type modelRow struct {
	model    string
	pod      podKey
	instance string
	service  string
	metric   string
}

// readModels reads which model each inference server serves, and from
// which pod.
func (b *builder) readModels(ctx context.Context) error {
	m := &modelIndex{}
	b.model = m
	var names, by []string
	vocabs := map[string]catalog.Vocabulary{}
	for _, s := range modelSignals {
		sig, ok := b.cat.Signal(s)
		if !ok {
			continue
		}
		for _, src := range sig.Sources {
			if !slices.Contains(names, src.Metric) {
				names = append(names, src.Metric)
				vocabs[src.Metric] = src.Vocabulary
			}
			for _, a := range b.cat.Aliases(src.Vocabulary) {
				for _, l := range a.Labels {
					if !slices.Contains(by, l) {
						by = append(by, l)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	if !slices.Contains(by, "instance") {
		by = append(by, "instance")
	}
	qs := "group by (__name__, " + strings.Join(by, ", ") + ") ({__name__=~\"" + strings.Join(names, "|") + "\"})"
	seen := map[modelRow]bool{}
	return b.each(ctx, qs, func(lset labels.Labels, _ float64) {
		name := lset.Get(model.MetricNameLabel)
		res := b.cat.Resolve(vocabs[name], lset)
		r := modelRow{
			model:    res.Entity[catalog.KeyModel],
			pod:      podKey{res.Entity[catalog.KeyNamespace], res.Entity[catalog.KeyPod]},
			instance: lset.Get("instance"),
			service:  res.Entity[catalog.KeyService],
			metric:   name,
		}
		if r.model == "" {
			return
		}
		key := r
		key.metric = ""
		if !seen[key] {
			seen[key] = true
			m.rows = append(m.rows, r)
		}
	})
}

// podOf returns the pod serving a model row: the pod its labels name, or
// the only pod kube-state-metrics gives its scrape address.
func (k *kubeIndex) podOf(r modelRow) (podKey, bool) {
	if r.pod.ns != "" && r.pod.name != "" {
		return r.pod, true
	}
	kind, host := classifyHost(r.instance)
	if kind != hostAddress {
		return podKey{}, false
	}
	if pods := k.podsByIP[host]; len(pods) == 1 {
		return pods[0].key, true
	}
	return podKey{}, false
}
