package diagnose

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// The counters internal/logsignals derives from logs (kernel logs, the
// pods' output, access logs), by its names.
const (
	metricLogEvents = "vigil_log_events_total"
	metricLogXID    = "vigil_log_xid_total"
)

// The events of vigil_log_events_total the diagnosis reads.
const (
	logNCCLTimeout   = "nccl_timeout"
	logNCCLError     = "nccl_error"
	logCUDAError     = "cuda_error"
	logCUDAOOM       = "cuda_oom"
	logOOMKilled     = "oom_killed"
	logSystemOOM     = "system_oom"
	logHTTP5xx       = "http_5xx"
	logFellOffTheBus = "gpu_fell_off_bus"
	// logXID is the event of vigil_log_xid_total's series.
	logXID = "xid"
)

// logRise is one log-derived counter series that rose inside the window:
// something was logged.
type logRise struct {
	event                  string
	node, ns, pod, service string
	// xid and pci are vigil_log_xid_total's: the code and the GPU's PCI
	// address as the driver writes it.
	xid int
	pci string
	// per is the increase per step (0 where none); first the first step
	// it rose, total the sum.
	per   []float64
	first int
	total float64
}

// logRises reads the log-derived counters that rose inside the window,
// ordered by first step, then series. They are cached: several
// hypotheses read them.
func (an *analysis) logRises(ctx context.Context) ([]logRise, error) {
	if an.logs != nil {
		return *an.logs, nil
	}
	var out []logRise
	for _, metric := range []string{metricLogEvents, metricLogXID} {
		if !an.v.have.Has(metric) {
			continue
		}
		raw, err := an.v.fetch(ctx, metric)
		if err != nil {
			return nil, err
		}
		for _, r := range raw {
			if r.lset.Get("otel_metric_overflow") != "" {
				continue // the overflow series names no entity
			}
			if metric == metricLogEvents && r.lset.Get("event") == logXID {
				continue // vigil_log_xid_total has them with their code
			}
			per := counterRises(r.v)
			first := slices.IndexFunc(per, func(x float64) bool { return x > 0 })
			if first < 0 {
				continue
			}
			lr := logRise{
				event: r.lset.Get("event"), node: an.logNode(r.lset.Get("node")),
				ns: r.lset.Get("namespace"), pod: r.lset.Get("pod"), service: r.lset.Get("service"),
				per: per, first: first,
			}
			for _, x := range per {
				lr.total += x
			}
			if metric == metricLogXID {
				code, err := strconv.Atoi(r.lset.Get("xid"))
				if err != nil {
					continue
				}
				lr.event, lr.xid, lr.pci = logXID, code, r.lset.Get("pci")
			}
			out = append(out, lr)
		}
	}
	slices.SortStableFunc(out, func(a, b logRise) int { return a.first - b.first })
	an.logs = &out
	return out, nil
}

// logNode maps the node a log record named (k8s.node.name, else
// host.name) to the node the metrics name, where an address maps.
func (an *analysis) logNode(node string) string {
	if mapped, ok := an.v.addrs[node]; ok {
		return mapped
	}
	return node
}

// counterRises turns a log counter's aligned values into increases per
// step. Its writer appends a series only when it changes, so a series
// goes stale between events: a sample after a gap rises from the last
// value seen, not from nothing. A value present at the window's first
// step is history; a series that first appears later with a value above
// zero rose then (by at least one).
func counterRises(v []float64) []float64 {
	out := make([]float64, len(v))
	last, seen := math.NaN(), false
	for i, x := range v {
		if math.IsNaN(x) {
			continue
		}
		switch {
		case !seen:
			if i > 0 && x > 0 {
				out[i] = 1
			}
		case x > last:
			out[i] = x - last
		case x < last:
			out[i] = x // a reset: the writer restarted
		}
		last, seen = x, true
	}
	return out
}

// risesOf returns the rises of an event.
func risesOf(rs []logRise, event string) []logRise {
	var out []logRise
	for _, r := range rs {
		if r.event == event {
			out = append(out, r)
		}
	}
	return out
}

// logEvidence is the evidence a log counter gives.
func (an *analysis) logEvidence(r logRise, summary string) Evidence {
	var m []string
	for _, kv := range [][2]string{{"event", r.event}, {"node", r.node}, {"namespace", r.ns}, {"pod", r.pod}, {"service", r.service}} {
		if kv[1] != "" && !(r.event == logXID && kv[0] == "event") {
			m = append(m, fmt.Sprintf("%s=%q", kv[0], kv[1]))
		}
	}
	metric := metricLogEvents
	if r.event == logXID {
		metric = metricLogXID
		m = append(m, fmt.Sprintf("xid=%q", strconv.Itoa(r.xid)))
	}
	return Evidence{Signal: metric,
		Query:   fmt.Sprintf("increase(%s{%s}[%s])", metric, strings.Join(m, ", "), an.v.e.opts.Window),
		Summary: summary}
}

// pciKey normalises a PCI address, dcgm-exporter's "00000000:3B:00.0" or
// the driver's "0000:3b:00", to domain:bus:device ("" if it is none).
func pciKey(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return ""
	}
	var n [3]uint64
	for i, p := range parts {
		x, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return ""
		}
		n[i] = x
	}
	return fmt.Sprintf("%x:%02x:%02x", n[0], n[1], n[2])
}

// gpusByPCI maps node and PCI address (pciKey) to the GPU index, from
// dcgm-exporter's pci_bus_id label.
func (an *analysis) gpusByPCI(ctx context.Context) (map[string]string, error) {
	t, err := an.v.sig(ctx, "gpu.temp", "pci_bus_id")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range t.rows {
		if k := pciKey(r.extra["pci_bus_id"]); k != "" {
			out[r.ent[catalog.KeyNode]+"|"+k] = r.ent[catalog.KeyGPU]
		}
	}
	return out, nil
}

// logXIDEvents are the XIDs the kernel logged inside the window, with the
// GPU named where dcgm-exporter gives its PCI address. A GPU that fell off
// the bus with no XID line (the driver's "GPU has fallen off the bus")
// counts as XID 79.
func (an *analysis) logXIDEvents(ctx context.Context) ([]xidEvent, error) {
	rs, err := an.logRises(ctx)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, nil
	}
	pci, err := an.gpusByPCI(ctx)
	if err != nil {
		return nil, err
	}
	var out []xidEvent
	for _, r := range risesOf(rs, logXID) {
		if r.node == "" {
			continue
		}
		gpu := pci[r.node+"|"+pciKey(r.pci)]
		out = append(out, xidEvent{node: r.node, gpu: gpu, code: r.xid, step: r.first, logStep: r.first, count: r.total, logged: true, pci: r.pci})
	}
	for _, r := range risesOf(rs, logFellOffTheBus) {
		if r.node == "" || slices.ContainsFunc(out, func(e xidEvent) bool { return e.node == r.node && e.code == 79 }) {
			continue
		}
		out = append(out, xidEvent{node: r.node, code: 79, step: r.first, logStep: r.first, count: r.total, logged: true, offBus: true})
	}
	return out, nil
}

// mergeLoggedXIDs adds the kernel's XIDs to dcgm-exporter's: one the
// exporter saw too (same node and code, the same GPU where the log names
// it, within precedenceSlack) marks that event as logged; the rest are
// events of their own.
func (an *analysis) mergeLoggedXIDs(evs, logged []xidEvent) []xidEvent {
	slack := int(precedenceSlack / an.v.step)
	for _, l := range logged {
		i := slices.IndexFunc(evs, func(e xidEvent) bool {
			return !e.logged && e.node == l.node && e.code == l.code && (l.gpu == "" || l.gpu == e.gpu) && absDiff(e.step, l.step) <= slack
		})
		if i < 0 {
			evs = append(evs, l)
			continue
		}
		evs[i].logged, evs[i].pci, evs[i].offBus, evs[i].logStep = true, l.pci, l.offBus, l.step
	}
	return evs
}
