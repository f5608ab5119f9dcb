package topology

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// dcgmPresenceMetrics are dcgm-exporter series of its default counters
// that every GPU has: a GPU that had one within the history and none within
// the window stopped reporting.
var dcgmPresenceMetrics = [...]string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED"}

// dcgmInstanceMetric is read with the health series because in MIG mode
// dcgm-exporter reports it per instance, so that instances without
// profiling series are found too.
const dcgmInstanceMetric = "DCGM_FI_DEV_FB_USED"

// missingHostsBatch is how many host names one query for hosts without
// health or presence series names.
const missingHostsBatch = 200

// dcgmIndex is what dcgm-exporter reports: its hosts (one per exporter)
// and their GPUs.
type dcgmIndex struct {
	labels []string
	// hostLabels name the host in group-by clauses: the node aliases and
	// instance.
	hostLabels []string
	hosts      map[string]*dcgmHost
	gpus       map[gpuKey]*dcgmGPU
	// seen holds, per host label, the values the series read had.
	seen map[string]map[string]bool
	// order keeps hosts in the order first seen, for stable output.
	order []*dcgmHost
}

// gpuKey names a physical GPU: its exporter's host and its index.
type gpuKey struct{ host, index string }

// dcgmHost is one dcgm-exporter, named by the first label that names its
// host (Label=value).
type dcgmHost struct {
	key string
	// claims are the labels naming the node, in order of preference.
	claims []Identity
	// exporterPod is the exporter's own pod, when the scrape added it.
	exporterPod podKey
	instance    string
	// attributed are the pods dcgm-exporter attributes GPUs to.
	attributed map[podKey]bool
	fresh      bool
	gpus       []*dcgmGPU
}

// dcgmGPU is one physical GPU as dcgm-exporter reports it.
type dcgmGPU struct {
	host      *dcgmHost
	index     string
	uuid      string
	model     string
	fresh     bool
	instances map[string]*Instance
	pods      []PodRef
	signals   gpuSignals
}

// readDCGM finds every GPU with a series in the window, with its latest
// health values, and the GPUs with a presence series within the history
// only.
//
// Reading every dcgm-exporter series would cost most of a topology build
// (25 or more per GPU), so the GPUs are found from the health series, which
// every dcgm-exporter configuration has some of; the hosts
// whose exporter has none of them (a custom counter list) are then found
// from the store's label index and read in full.
func (b *builder) readDCGM(ctx context.Context) error {
	d := &dcgmIndex{hosts: map[string]*dcgmHost{}, gpus: map[gpuKey]*dcgmGPU{}, seen: map[string]map[string]bool{}}
	b.dcgm = d
	d.hostLabels = nodeLabels(b.cat, catalog.DCGMExporter)
	d.labels = slices.Clone(d.hostLabels)
	for _, a := range b.cat.Aliases(catalog.DCGMExporter) {
		for _, l := range a.Labels {
			if !slices.Contains(d.labels, l) {
				d.labels = append(d.labels, l)
			}
		}
	}
	if err := b.readCurrent(ctx); err != nil {
		return err
	}
	if err := b.readMissingHosts(ctx); err != nil {
		return err
	}
	by := strings.Join(d.labels, ", ")
	history := "group by (" + by + ") ({__name__=~\"" + strings.Join(dcgmPresenceMetrics[:], "|") + "\"})"
	return b.eachBack(ctx, history, b.opts.History, func(lset labels.Labels, _ float64) { b.addDCGMSeries(lset, false) })
}

// readCurrent reads the latest value of every health series (and of
// dcgmInstanceMetric): one query finds the GPUs and their health values. It is a plain selector,
// the cheapest query there is; aggregation and the blank sentinels are
// handled here.
func (b *builder) readCurrent(ctx context.Context) error {
	srcs := healthSources(b.cat)
	names := []string{dcgmInstanceMetric}
	for m := range srcs {
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	qs := fmt.Sprintf(`{__name__=~"%s"}`, strings.Join(names, "|"))
	// The series of one GPU share their labels but the name: resolve them
	// once.
	gpus := map[uint64]*dcgmGPU{}
	var buf []byte
	return b.each(ctx, qs, func(lset labels.Labels, v float64) {
		var h uint64
		h, buf = lset.HashWithoutLabels(buf)
		g, ok := gpus[h]
		if !ok {
			g = b.addDCGMSeries(lset, true)
			gpus[h] = g
		}
		if src, ok := srcs[lset.Get(model.MetricNameLabel)]; ok && g != nil && !catalog.IsBlank(v) {
			if f := g.signals.field(src.signal); f != nil {
				*f = maxKnown(*f, v*src.factor)
			}
		}
	})
}

// readMissingHosts reads in full the hosts the label index knows with a
// dcgm-exporter series in the window that the current read did not see.
func (b *builder) readMissingHosts(ctx context.Context) error {
	d := b.dcgm
	q, err := b.src.Querier(b.at.Add(-b.opts.Window).UnixMilli(), b.at.UnixMilli())
	if err != nil {
		return fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	dcgmSeries := labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, "DCGM_.+")
	by := strings.Join(d.labels, ", ")
	for _, l := range d.hostLabels {
		values, _, err := q.LabelValues(ctx, l, nil, dcgmSeries)
		if err != nil {
			return fmt.Errorf("list %s values of dcgm-exporter series: %w", l, err)
		}
		var missing []string
		for _, v := range values {
			if !d.seen[l][v] {
				missing = append(missing, regexp.QuoteMeta(v))
			}
		}
		for len(missing) > 0 {
			n := min(len(missing), missingHostsBatch)
			qs := fmt.Sprintf(`group by (%s) ({__name__=~"DCGM_.+", %s=~%s})`, by, l, strconv.Quote(strings.Join(missing[:n], "|")))
			if err := b.each(ctx, qs, func(lset labels.Labels, _ float64) { b.addDCGMSeries(lset, true) }); err != nil {
				return err
			}
			missing = missing[n:]
		}
	}
	return nil
}

// hostOf returns the exporter host a dcgm-exporter series comes from,
// creating it.
func (d *dcgmIndex) hostOf(lset labels.Labels) *dcgmHost {
	label, value := "", ""
	for _, l := range d.hostLabels {
		if v := lset.Get(l); v != "" {
			label, value = l, v
			break
		}
	}
	key := label + "=" + value
	h := d.hosts[key]
	if h == nil {
		h = &dcgmHost{key: key, instance: lset.Get("instance"), attributed: map[podKey]bool{}}
		for _, l := range d.hostLabels {
			if v := lset.Get(l); v != "" && l != "instance" {
				h.claims = append(h.claims, Identity{Source: sourceDCGM, Label: l, Value: v})
			}
		}
		if p := lset.Get(exportedLabelPre + "pod"); p != "" {
			h.exporterPod = podKey{lset.Get("namespace"), lset.Get("pod")}
		}
		d.hosts[key] = h
		d.order = append(d.order, h)
		for _, l := range d.hostLabels {
			if v := lset.Get(l); v != "" {
				if d.seen[l] == nil {
					d.seen[l] = map[string]bool{}
				}
				d.seen[l][v] = true
			}
		}
	}
	return h
}

// addDCGMSeries adds the GPU (and MIG instance, and pod) one grouped
// dcgm-exporter series names, and returns the GPU. A series of the history
// only adds a GPU not seen in the window.
func (b *builder) addDCGMSeries(lset labels.Labels, fresh bool) *dcgmGPU {
	d := b.dcgm
	res := b.cat.Resolve(catalog.DCGMExporter, lset)
	index := res.Entity[catalog.KeyGPU]
	if index == "" {
		index = res.Entity[catalog.KeyUUID]
	}
	if index == "" {
		b.warn.add("dcgm-exporter series without a gpu or UUID label are left out", lset.Get("instance"))
		return nil
	}
	h := d.hostOf(lset)
	key := gpuKey{h.key, index}
	g := d.gpus[key]
	if g == nil {
		g = &dcgmGPU{host: h, index: index, instances: map[string]*Instance{}, signals: newGPUSignals()}
		d.gpus[key] = g
		h.gpus = append(h.gpus, g)
	} else if !fresh {
		return g
	}
	if fresh {
		g.fresh, h.fresh = true, true
	}
	g.uuid = cmpOr(g.uuid, res.Entity[catalog.KeyUUID])
	g.model = cmpOr(g.model, res.Attributes[catalog.AttrGPUModel])
	inst := res.Entity[catalog.KeyGPUInstance]
	if inst != "" && g.instances[inst] == nil {
		g.instances[inst] = &Instance{ID: inst, Profile: res.Attributes[catalog.AttrMIGProfile], Pods: []PodRef{}}
	}
	pod := podKey{res.Entity[catalog.KeyNamespace], res.Entity[catalog.KeyPod]}
	// The catalog drops the exporter's own pod (a scrape target label).
	if pod.name == "" {
		return g
	}
	ref := PodRef{Namespace: pod.ns, Pod: pod.name, Container: res.Entity[catalog.KeyContainer], By: AttributedByDCGM}
	if pod.ns == "" {
		b.warn.add("dcgm-exporter attributes GPUs to pods without a namespace label; those attributions are left out", pod.name)
		return g
	}
	h.attributed[pod] = true
	if inst != "" {
		g.instances[inst].Pods = appendRef(g.instances[inst].Pods, ref)
	} else {
		g.pods = appendRef(g.pods, ref)
	}
	return g
}

// appendRef adds r unless already there.
func appendRef(refs []PodRef, r PodRef) []PodRef {
	if slices.Contains(refs, r) {
		return refs
	}
	return append(refs, r)
}

// cmpOr returns a unless it is empty, else b.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// resolveHost picks the node of a dcgm-exporter host: the host name the
// exporter reports, else the node of its own pod, else its scrape address,
// else the node of the pods it attributes GPUs to.
func (k *kubeIndex) resolveHost(h *dcgmHost) (node string, ids []Identity, why string) {
	claims := make([]claim, 0, len(h.claims)+3)
	for _, id := range h.claims {
		claims = append(claims, claim{Identity: id, res: k.resolveValue(id.Label, id.Value)})
	}
	if h.exporterPod.name != "" {
		claims = append(claims, claim{
			Identity: Identity{Source: sourceDCGM, Label: "pod", Value: h.exporterPod.String()},
			res:      k.resolvePod(h.exporterPod, "the exporter's pod"),
			fallback: true,
		})
	}
	if h.instance != "" {
		if kind, _ := classifyHost(h.instance); kind == hostAddress {
			claims = append(claims, claim{
				Identity: Identity{Source: sourceDCGM, Label: "instance", Value: h.instance},
				res:      k.resolveValue("instance", h.instance),
				fallback: true,
			})
		}
	}
	if c, ok := k.attributedNode(h); ok {
		claims = append(claims, c)
	}
	return pickNode(claims)
}

// attributedNode is the node of the pods an exporter attributes GPUs to,
// when kube-state-metrics places them all on one node.
func (k *kubeIndex) attributedNode(h *dcgmHost) (claim, bool) {
	node, first := "", podKey{}
	for p := range h.attributed {
		r := k.resolvePod(p, "pod")
		if r.node == "" || node != "" && r.node != node {
			return claim{}, false
		}
		if node == "" || p.String() < first.String() {
			first = p
		}
		node = r.node
	}
	if node == "" {
		return claim{}, false
	}
	return claim{
		Identity: Identity{Source: sourceDCGM, Label: "pod", Value: first.String()},
		res:      resolution{node: node, via: "kube_pod_info node of the pods it attributes GPUs to", confirmed: true},
		fallback: true,
	}, true
}
