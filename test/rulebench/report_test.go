package rulebench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// stat is a median and a range.
type stat struct{ median, min, max float64 }

func medianRange(v []float64) stat {
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{median: m, min: s[0], max: s[len(s)-1]}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func msOrDash(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return ms(d)
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// serverStats are one server's figures over its runs: the median and range
// of the run medians.
type serverStats struct {
	rules, ruleCPU, groups, whole, cpu stat
	rss, hwm                           stat
}

func statsOf(runs []evalRun, server string) serverStats {
	var rules, ruleCPU, groups, whole, cpu, rss, hwm []float64
	for _, r := range runs {
		if r.server != server {
			continue
		}
		rules = append(rules, float64(r.median(func(c cycle) time.Duration { return c.rules })))
		ruleCPU = append(ruleCPU, float64(r.median(func(c cycle) time.Duration { return c.ruleCPU })))
		groups = append(groups, float64(r.median(func(c cycle) time.Duration { return c.groupLast })))
		whole = append(whole, float64(r.median(func(c cycle) time.Duration { return c.whole })))
		cpu = append(cpu, float64(r.median(func(c cycle) time.Duration { return c.cpu })))
		rss, hwm = append(rss, float64(r.rss)), append(hwm, float64(r.hwm))
	}
	return serverStats{rules: medianRange(rules), ruleCPU: medianRange(ruleCPU), groups: medianRange(groups), whole: medianRange(whole), cpu: medianRange(cpu),
		rss: medianRange(rss), hwm: medianRange(hwm)}
}

// pairRatios returns Vigil's run median of f over Prometheus's, pair by
// pair (runs alternate, Vigil first).
func pairRatios(runs []evalRun, f func(cycle) time.Duration) stat {
	var v []float64
	for i := 0; i+1 < len(runs); i += 2 {
		v = append(v, float64(runs[i].median(f))/float64(runs[i+1].median(f)))
	}
	return medianRange(v)
}

func (s stat) ms() float64 { return s.median / float64(time.Millisecond) }

// report prints the per-run table and the summary, and reports the
// figures as benchmark metrics.
func report(b *testing.B, e *benchEnv, runs []evalRun) {
	rules := func(c cycle) time.Duration { return c.rules }
	ruleCPU := func(c cycle) time.Duration { return c.ruleCPU }
	procCPU := func(c cycle) time.Duration { return c.cpu }
	ratio, cpuRatio, procRatio := pairRatios(runs, rules), pairRatios(runs, ruleCPU), pairRatios(runs, procCPU)
	vs, ps := statsOf(runs, "vigil"), statsOf(runs, "prometheus")
	b.ReportMetric(ratio.median, "vigil/prometheus")
	b.ReportMetric(cpuRatio.median, "vigil/prometheus-CPU")
	b.ReportMetric(vs.rules.ms(), "vigil-rule-ms/cycle")
	b.ReportMetric(ps.rules.ms(), "prometheus-rule-ms/cycle")
	b.ReportMetric(vs.ruleCPU.ms(), "vigil-rule-CPU-ms/cycle")
	b.ReportMetric(ps.ruleCPU.ms(), "prometheus-rule-CPU-ms/cycle")
	b.ReportMetric(vs.rss.median/(1<<20), "vigil-RSS-MiB")
	b.ReportMetric(ps.rss.median/(1<<20), "prometheus-RSS-MiB")

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nSLO rule evaluation, the presets (%d rule files, %d rules per cycle) every %s, Vigil vs Prometheus 2.42\n",
		e.ruleFiles, runs[0].cycles[0].evals, evalInterval)
	fmt.Fprintf(&sb, "data: %d nodes × %d GPUs, %d vLLM models, %d series, %d samples (%.0f MiB of OpenMetrics), %s of history (GPU gauges %s) at %s, ending %s\n",
		benchShape.nodes, gpusPerNode, benchShape.models, e.st.series, e.st.samples, float64(e.st.bytes)/(1<<20),
		benchShape.span, benchShape.gpuSpan, benchShape.step, e.end.UTC().Format(time.TimeOnly))
	fmt.Fprintf(&sb, "set-up: data written in %s, loaded by promtool and vigil import side by side in %s (the data ends %s after the start; runs begin once it has passed); lookback delta %s on both\n",
		e.gen.Round(time.Millisecond), e.load.Round(time.Second), loadAllowance, lookback)
	fmt.Fprintf(&sb, "machine: %s; each run a fresh process on a fresh copy of its data, %d warm-up cycle(s), %d measured\n\n",
		machine(), warmUpCycles, measuredCycles)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tserver\tdata age\trules, each cycle\tmedian\trule CPU\tgroups' last\twhole cycle\tCPU/cycle\tRSS\tpeak RSS\trecorded\talerts\t")
	for i, r := range runs {
		var per []string
		for _, c := range r.cycles {
			per = append(per, ms(c.rules))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", i+1, r.server, r.dataAge.Round(time.Second),
			strings.Join(per, " "), ms(r.median(rules)), ms(r.median(ruleCPU)),
			msOrDash(r.median(func(c cycle) time.Duration { return c.groupLast })), msOrDash(r.median(func(c cycle) time.Duration { return c.whole })),
			ms(r.median(procCPU)), mib(r.rss), mib(r.hwm), r.recorded, r.alerts)
	}
	tw.Flush()
	line := func(name string, s serverStats) {
		fmt.Fprintf(&sb, "%-10s rules %s per cycle (runs %s–%s), CPU while they ran %s (runs %s–%s); groups' last durations %s; whole cycle %s; process CPU %s per cycle; RSS %s (peak %s)\n",
			name, ms(time.Duration(s.rules.median)), ms(time.Duration(s.rules.min)), ms(time.Duration(s.rules.max)),
			ms(time.Duration(s.ruleCPU.median)), ms(time.Duration(s.ruleCPU.min)), ms(time.Duration(s.ruleCPU.max)),
			msOrDash(time.Duration(s.groups.median)), msOrDash(time.Duration(s.whole.median)), ms(time.Duration(s.cpu.median)),
			mib(int64(s.rss.median)), mib(int64(s.hwm.median)))
	}
	fmt.Fprintln(&sb)
	line("vigil", vs)
	line("prometheus", ps)
	fmt.Fprintln(&sb, "(rules: every rule's latest evaluation time summed, from /api/v1/rules; rule CPU: the process's CPU time while they ran;")
	fmt.Fprintln(&sb, " whole cycle: Vigil's watcher cycle, rules + drift task + diagnosis + incidents; groups' last: prometheus_rule_group_last_duration_seconds summed, — where it stays 0)")
	fmt.Fprintf(&sb, "\nvigil/prometheus, median of the pairs' ratios (range):\n")
	fmt.Fprintf(&sb, "  rule time per cycle      %.2f (%.2f–%.2f)\n", ratio.median, ratio.min, ratio.max)
	fmt.Fprintf(&sb, "  CPU while the rules ran  %.2f (%.2f–%.2f)\n", cpuRatio.median, cpuRatio.min, cpuRatio.max)
	fmt.Fprintf(&sb, "  process CPU per cycle    %.2f (%.2f–%.2f)  (Vigil's includes its diagnosis)\n", procRatio.median, procRatio.min, procRatio.max)
	fmt.Print(sb.String())
}
