package catalog

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// domains names the signal domains in the order the reference lists them.
var domains = [...]struct{ prefix, title string }{
	{"gpu.", "GPU (dcgm-exporter, Triton)"},
	{"infer.", "Inference (vLLM, NIM, SGLang, TGI, Triton, TensorRT-LLM, KServe, Ray Serve, OpenTelemetry GenAI)"},
	{"k8s.", "Kubernetes (kube-state-metrics)"},
	{"node.", "Hosts and network (node-exporter)"},
	{"container.", "Containers (cAdvisor)"},
	{"train.", "Training progress (configured)"},
}

// WriteMarkdown writes the reference page docs/signals.md: every signal with
// its sources and meaning, the entity label aliases, the XID table, the
// clock-event reasons, the DCGM blanks and the ignored metrics.
func (c *Catalog) WriteMarkdown(w io.Writer) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	sigs := c.Signals()
	p("# Signals\n\n")
	p("<!-- Generated from internal/catalog by `go test ./internal/catalog -update`. Do not edit. -->\n\n")
	p("Every signal Vigil understands: its canonical name, the entity one series describes, its **true** type\n")
	p("(whatever an exporter's `# TYPE` line claims), its unit, what it means, the healthy range where the vendor\n")
	p("documents one, and the metrics that carry it in each vocabulary, preferred first. Counters are read through\n")
	p("`rate()`, gauges as they are, histograms by quantile; a source's scale converts it to the signal's unit.\n\n")
	p("%d signals from %d metrics; %d metrics ignored on purpose; %d XIDs.\n\n", len(sigs), len(c.byMetric), len(c.ignored), len(c.xids))
	for _, d := range domains {
		var in []*Signal
		for _, s := range sigs {
			if strings.HasPrefix(s.Name, d.prefix) {
				in = append(in, s)
			}
		}
		if len(in) == 0 {
			continue
		}
		p("## %s\n\n", d.title)
		for _, s := range in {
			writeSignal(p, s)
		}
	}
	c.writeAliases(p)
	c.writeXIDs(p)
	writeClockReasons(p)
	writeBlanks(p)
	c.writeIgnored(p)
	return b.Flush()
}

func writeSignal(p func(string, ...any), s *Signal) {
	p("### %s\n\n", s.Name)
	agg := s.Agg
	if agg == "" {
		agg = Sum
	}
	p("**%s** · unit `%s` · entity %s · across entities: %s\n\n%s\n\n", s.Type, s.Unit, s.Level, agg, s.Meaning)
	if s.Healthy != nil {
		p("Healthy: %s", formatRange(*s.Healthy))
		if s.Healthy.Note != "" {
			p(" — %s", cell(s.Healthy.Note))
		}
		p("\n\n")
	}
	p("| vocabulary | metric | notes |\n|---|---|---|\n")
	for _, src := range s.Sources {
		p("| %s | `%s` | %s |\n", src.Vocabulary, src.Metric, cell(sourceNotes(s, src)))
	}
	p("\n")
}

func sourceNotes(s *Signal, src Source) string {
	var parts []string
	if src.Type != "" && src.Type != s.Type {
		parts = append(parts, "a "+string(src.Type))
	}
	if src.Declared != "" {
		parts = append(parts, "# TYPE says "+string(src.Declared)+", read as "+string(src.TrueType(*s)))
	}
	if src.CheckMonotonic {
		parts = append(parts, "type in doubt: check monotonicity")
	}
	if f := src.Factor(); f != 1 {
		parts = append(parts, "× "+strconv.FormatFloat(f, 'g', -1, 64))
	}
	if src.Field != 0 {
		parts = append(parts, "field "+strconv.Itoa(src.Field))
	}
	if len(src.Labels) > 0 {
		parts = append(parts, "labels "+strings.Join(src.Labels, ", "))
	}
	if src.Versions != "" {
		parts = append(parts, src.Versions)
	}
	if src.Note != "" {
		parts = append(parts, src.Note)
	}
	return strings.Join(parts, "; ")
}

func formatRange(r Range) string {
	switch {
	case r.Min == r.Max:
		return "= " + strconv.FormatFloat(r.Min, 'g', -1, 64)
	case math.IsInf(r.Min, -1):
		return "≤ " + strconv.FormatFloat(r.Max, 'g', 6, 64)
	case math.IsInf(r.Max, 1):
		return "≥ " + strconv.FormatFloat(r.Min, 'g', 6, 64)
	}
	return fmt.Sprintf("%g to %g", r.Min, r.Max)
}

func (c *Catalog) writeAliases(p func(string, ...any)) {
	p("## Entity labels\n\n")
	p("Which labels carry each canonical entity key, per vocabulary, the first present winning. Every vocabulary\n")
	p("also accepts the labels Prometheus's Kubernetes discovery adds, after its own:\n\n")
	p("| key | labels | notes |\n|---|---|---|\n")
	for _, a := range c.target {
		p("| %s | %s | %s |\n", a.Key, code(a.Labels), cell(a.Note))
	}
	p("\n")
	for _, v := range Vocabularies() {
		own := c.own[v]
		if len(own) == 0 {
			continue
		}
		p("### %s\n\n| key | labels | notes |\n|---|---|---|\n", v)
		for _, a := range own {
			note := a.Note
			if a.Versions != "" {
				note = strings.TrimPrefix(a.Versions+"; "+note, "; ")
				note = strings.TrimSuffix(note, "; ")
			}
			p("| %s | %s | %s |\n", a.Key, code(a.Labels), cell(note))
		}
		p("\n")
	}
}

func (c *Catalog) writeXIDs(p func(string, ...any)) {
	p("## XID errors\n\n")
	p("From NVIDIA's XID catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), for\n")
	p("Ampere and newer. Action is the immediate step; bucket is the catalog's own resolution bucket.\n\n")
	p("| XID | mnemonic | meaning | action | bucket | severity | evidences |\n|---|---|---|---|---|---|---|\n")
	for _, x := range c.XIDs() {
		p("| %d | %s | %s | %s | %s | %s | %s |\n", x.Code, x.Mnemonic, cell(x.Meaning), x.Action, x.Bucket, x.Severity, x.Cause)
	}
	p("\n")
}

func writeClockReasons(p func(string, ...any)) {
	p("## Clock-event reasons\n\n")
	p("Bits of `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` (formerly `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`).\n\n")
	p("| bit | name | meaning | evidences |\n|---|---|---|---|\n")
	for _, r := range ClockReasons() {
		kind := "no fault"
		switch {
		case r.Thermal && r.Power:
			kind = "thermal or power throttling"
		case r.Thermal:
			kind = "thermal throttling"
		case r.Power:
			kind = "power throttling"
		}
		p("| 0x%x | %s | %s | %s |\n", uint64(r.Bit), r.Name, cell(r.Meaning), kind)
	}
	p("\n")
}

func writeBlanks(p func(string, ...any)) {
	p("## DCGM blank values\n\n")
	p("DCGM writes a sentinel where it has no value and dcgm-exporter prints it as a number: such samples mean\n")
	p("\"no value\", never a measurement (`IsBlank`).\n\n")
	p("| family | blank | not found | not supported | not permissioned |\n|---|---|---|---|---|\n")
	i := DCGMInt64Blank
	p("| int64 | %d | %d | %d | %d |\n", i, i+1, i+2, i+3)
	f := DCGMFP64Blank
	p("| float64 | %.0f | %.0f | %.0f | %.0f |\n\n", f, f+1, f+2, f+3)
}

func (c *Catalog) writeIgnored(p func(string, ...any)) {
	p("## Ignored metrics\n\n")
	p("Metrics of the upstream lists the catalog leaves out on purpose.\n\n")
	p("| vocabulary | metric | ignored, because |\n|---|---|---|\n")
	for _, ig := range c.IgnoredMetrics() {
		p("| %s | `%s` | %s |\n", ig.Vocabulary, ig.Metric, cell(ig.Reason))
	}
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func code(ls []string) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = "`" + l + "`"
	}
	return strings.Join(out, ", ")
}
