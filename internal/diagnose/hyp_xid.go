package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// xidEvent is one XID that happened inside the window: the sticky XID
// gauge changed to it, or dcgm-exporter's XID count for it rose.
type xidEvent struct {
	node, gpu string
	code      int
	step      int
	// count is how many times it happened, where the exporter counts.
	count float64
	// logged: the kernel logged it too (or only the kernel did: dcgm is
	// false), at logStep, for the GPU at pci; offBus: as "GPU has fallen
	// off the bus" with no XID line.
	logged, dcgm, offBus bool
	logStep              int
	pci                  string
}

// xidEvents reads the XIDs raised inside the window. DCGM_FI_DEV_XID_ERRORS
// keeps the last XID, so only a change is news: a value already there at
// the first sample, or at the first sample of a series that appears later
// (an exporter restart), is history.
func (an *analysis) xidEvents(ctx context.Context) ([]xidEvent, error) {
	if an.xids != nil {
		return *an.xids, nil
	}
	evs, err := an.readXIDEvents(ctx)
	if err != nil {
		return nil, err
	}
	an.xids = &evs
	return evs, nil
}

// readXIDEvents is xidEvents without the cache.
func (an *analysis) readXIDEvents(ctx context.Context) ([]xidEvent, error) {
	var out []xidEvent
	t, err := an.v.sig(ctx, "gpu.xid")
	if err != nil {
		return nil, err
	}
	for _, r := range t.rows {
		prev := math.NaN()
		for i, x := range r.v {
			if math.IsNaN(x) {
				continue
			}
			if !math.IsNaN(prev) && x != prev && x > 0 {
				out = append(out, xidEvent{node: r.ent[catalog.KeyNode], gpu: r.ent[catalog.KeyGPU], code: int(x), step: i, count: 1, dcgm: true})
			}
			prev = x
		}
	}
	tc, err := an.v.sig(ctx, "gpu.xid_count", "xid")
	if err != nil {
		return nil, err
	}
	for _, r := range tc.rows {
		code, err := strconv.Atoi(r.extra["xid"])
		if err != nil {
			continue
		}
		first := firstValid(r.v)
		for i := max(first, 0); i < len(r.v) && first >= 0; i++ {
			x := r.v[i]
			prev := 0.0
			if i > 0 && !math.IsNaN(r.v[i-1]) {
				prev = r.v[i-1]
			}
			// A count present from the window's first step is history; one
			// that appears or rises later is news.
			if x > prev && (i > 0 && first > 0 || i > first) {
				out = append(out, xidEvent{node: r.ent[catalog.KeyNode], gpu: r.ent[catalog.KeyGPU], code: code, step: i, count: x - prev, dcgm: true})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b xidEvent) int {
		if a.step != b.step {
			return a.step - b.step
		}
		if c := compareGPU(a.node, a.gpu, b.node, b.gpu); c != 0 {
			return c
		}
		return a.code - b.code
	})
	// The gauge and the count report the same XID: keep the first of each
	// GPU and code.
	out = slices.CompactFunc(out, func(a, b xidEvent) bool {
		return a.node == b.node && a.gpu == b.gpu && a.code == b.code
	})
	logged, err := an.logXIDEvents(ctx)
	if err != nil {
		return nil, err
	}
	return an.mergeLoggedXIDs(out, logged), nil
}

// appXIDStrength is the evidence of an application XID that names no
// part of the GPU: under 0.5 however it merges.
const appXIDStrength = 0.25

// xidStrength is how strongly an XID of a severity shows a fault.
func xidStrength(s catalog.Severity) float64 {
	switch s {
	case catalog.SeverityCritical:
		return 0.95
	case catalog.SeverityApp:
		return 0.55
	}
	return 0.1
}

// hypXID: an XID raised inside the window is a fault of the kind NVIDIA's
// catalog gives it (74 NVLink, 79 fallen off the bus, 48/94/95 memory, …,
// the rest gpu_xid_error), as strong as its severity; XIDs that are events
// rather than faults (43, 45, 63, …) stay weak.
func hypXID(ctx context.Context, an *analysis) ([]*candidate, error) {
	evs, err := an.xidEvents(ctx)
	if err != nil {
		return nil, err
	}
	cat := an.v.e.opts.Catalog
	var out []*candidate
	for _, ev := range evs {
		x, ok := cat.XID(ev.code)
		kind, strength := KindGPUXIDError, 0.5
		what := fmt.Sprintf("XID %d", ev.code)
		action := fmt.Sprintf("look up XID %d in NVIDIA's XID catalog; drain %s if it repeats", ev.code, ev.node)
		if ok {
			kind, strength = x.Cause, xidStrength(x.Severity)
			if kind == KindGPUXIDError && x.Severity == catalog.SeverityApp {
				// An application's own fault (13, 31): the GPU stays
				// healthy, and the application restarts. It names no
				// hardware cause, however often it repeats.
				strength = appXIDStrength
			}
			what = fmt.Sprintf("XID %d (%s)", ev.code, x.Mnemonic)
			action = xidAction(x, ev.node)
		}
		c := an.gpuCandidate(kind, ev.node, ev.gpu)
		c.onset, c.strength, c.direct = an.v.time(ev.step), strength, strength >= 0.5
		// A GPU the kernel names by a PCI address no exporter maps.
		gpu := cmp.Or(ev.gpu, "at PCI "+cmp.Or(ev.pci, "?"))
		c.headline = fmt.Sprintf("%s GPU %s %s", ev.node, gpu, what)
		if kind != KindGPUXIDError {
			c.headline = fmt.Sprintf("%s (XID %d)", kindHeadline(kind, ev.node, gpu), ev.code)
		}
		c.action = action
		if ev.dcgm {
			c.evidence = append(c.evidence, Evidence{
				Signal:  "DCGM_FI_DEV_XID_ERRORS",
				Query:   fmt.Sprintf("changes(%s[%s])", an.v.query("gpu.xid", gpuMatchers(an.v, ev.node, ev.gpu)), an.v.e.opts.Window),
				Summary: fmt.Sprintf("%s on %s GPU %s at %s", what, ev.node, ev.gpu, an.v.time(ev.step).Format(time.TimeOnly)),
			})
		}
		if ev.logged {
			c.evidence = append(c.evidence, an.loggedXIDEvidence(ev, what))
		}
		out = append(out, c)
	}
	return out, nil
}

// loggedXIDEvidence is the kernel log's evidence of an XID.
func (an *analysis) loggedXIDEvidence(ev xidEvent, what string) Evidence {
	r := logRise{event: logXID, node: ev.node, xid: ev.code}
	where := ev.node
	if ev.pci != "" {
		where += " PCI " + ev.pci
	}
	summary := fmt.Sprintf("kernel log: %s on %s at %s", what, where, an.v.time(ev.logStep).Format(time.TimeOnly))
	if ev.offBus {
		r = logRise{event: logFellOffTheBus, node: ev.node}
		summary = fmt.Sprintf("kernel log: a GPU of %s has fallen off the bus at %s", ev.node, an.v.time(ev.logStep).Format(time.TimeOnly))
	}
	return an.logEvidence(r, summary)
}

// kindHeadline names a GPU fault of a kind, for the page's headline.
func kindHeadline(kind, node, gpu string) string {
	what := map[string]string{
		KindNVLinkDegraded:     "NVLink degradation",
		KindGPULost:            "lost (fell off the bus)",
		KindGPUMemoryErrors:    "memory errors",
		KindPCIeDegraded:       "PCIe link degraded",
		KindGPUPowerThrottle:   "power throttling",
		KindGPUThermalThrottle: "thermal throttling",
	}[kind]
	if what == "" {
		what = kind
	}
	if kind == KindNVLinkDegraded || gpu == "" {
		return node + " " + what
	}
	return fmt.Sprintf("%s GPU %s %s", node, gpu, what)
}

// xidAction turns the catalog's immediate action into words.
func xidAction(x catalog.XID, node string) string {
	switch x.Action {
	case catalog.ResetGPU:
		return fmt.Sprintf("drain %s and reset the GPU (XID %d: %s); restart the job on healthy nodes", node, x.Code, x.Bucket)
	case catalog.RestartBM:
		return fmt.Sprintf("cordon %s and reboot it (XID %d: %s); restart the job on healthy nodes", node, x.Code, x.Bucket)
	case catalog.ContactSupport:
		return fmt.Sprintf("cordon %s and open a hardware case with the vendor (XID %d: %s)", node, x.Code, x.Bucket)
	case catalog.RestartApp:
		return fmt.Sprintf("restart the application on %s; drain the node if XID %d repeats", node, x.Code)
	}
	return fmt.Sprintf("no action needed for XID %d alone; follow any other XID", x.Code)
}

// gpuCandidate starts a candidate on a GPU (gpu "" for the whole node).
func (an *analysis) gpuCandidate(kind, node, gpu string) *candidate {
	c := &candidate{kind: kind, ent: Entity{catalog.KeyNode: node}, nodes: []string{node}}
	if gpu != "" {
		c.ent[catalog.KeyGPU] = gpu
	}
	return c
}

// gpuMatchers returns PromQL matchers naming a GPU in the data's own
// labels (Hostname or hostname), for evidence queries.
func gpuMatchers(v *view, node, gpu string) string {
	host := "Hostname"
	if v.have.Has("DCGM_FI_DEV_GPU_TEMP") {
		for _, id := range v.nodeIdentities(node) {
			if id == "hostname" {
				host = "hostname"
			}
		}
	}
	m := fmt.Sprintf("%s=%q", host, node)
	if gpu != "" {
		m += fmt.Sprintf(", gpu=%q", gpu)
	}
	return m
}

// nodeIdentities lists the labels that name a node in the data.
func (v *view) nodeIdentities(node string) []string {
	var out []string
	for _, n := range v.topo.Nodes {
		if n.Name != node {
			continue
		}
		for _, id := range n.Identities {
			out = append(out, id.Label)
		}
	}
	return out
}
