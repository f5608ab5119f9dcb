package rulebench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics the servers export: Prometheus's rule-group metrics (Vigil
// registers the rule manager's on its own registry), and the watcher's
// cycle metrics of Vigil.
const (
	metricRuleFailures   = "prometheus_rule_evaluation_failures_total"
	metricGroupLast      = "prometheus_rule_group_last_duration_seconds"
	metricGroupIter      = "prometheus_rule_group_iterations_total"
	metricWatchCycles    = "vigil_watch_cycles_total"
	metricWatchCycleTime = "vigil_watch_cycle_duration_seconds" // histogram
)

// reading is one scrape of a server's own metrics.
type reading struct {
	at time.Time
	// cycles is the number of complete evaluation cycles: Vigil's watcher
	// cycles, or Prometheus's group iterations divided by its groups
	// (every group runs once per interval, at its own offset).
	cycles   int
	failures float64 // failed rule evaluations
	// groupLast is the sum over the groups of their last iteration's
	// duration (Prometheus's own per-cycle figure; Vigil exports the gauge
	// but never sets it).
	groupLast float64
	// cycleSeconds is Vigil's whole cycle (rules, drift task, diagnosis,
	// incidents), summed over cycles; 0 for Prometheus.
	cycleSeconds float64
	cpu          time.Duration // the process's user+system CPU time so far
}

// scrapeMetrics reads base/metrics.
func scrapeMetrics(ctx context.Context, client *http.Client, base string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", base, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse the metrics of %s: %w", base, err)
	}
	return fams, nil
}

// total sums every series of a counter, gauge or untyped family; for a
// summary or histogram it sums the sample sums.
func total(fams map[string]*dto.MetricFamily, name string) (sum float64, series int) {
	f, ok := fams[name]
	if !ok {
		return 0, 0
	}
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Summary != nil:
			sum += m.GetSummary().GetSampleSum()
		case m.Histogram != nil:
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum, len(f.GetMetric())
}

// read takes one reading of a server.
func read(ctx context.Context, client *http.Client, base string, pid int, vigil bool) (reading, error) {
	fams, err := scrapeMetrics(ctx, client, base)
	if err != nil {
		return reading{}, err
	}
	r := reading{at: time.Now()}
	r.failures, _ = total(fams, metricRuleFailures)
	r.groupLast, _ = total(fams, metricGroupLast)
	if vigil {
		c, n := total(fams, metricWatchCycles)
		if n == 0 {
			return reading{}, fmt.Errorf("%s exports no %s", base, metricWatchCycles)
		}
		r.cycles = int(c)
		r.cycleSeconds, _ = total(fams, metricWatchCycleTime)
	} else {
		iters, groups := total(fams, metricGroupIter)
		if groups == 0 {
			return reading{}, fmt.Errorf("%s exports no %s: no rule groups loaded", base, metricGroupIter)
		}
		r.cycles = int(iters) / groups
	}
	if r.cpu, err = procCPU(pid); err != nil {
		return reading{}, err
	}
	return r, nil
}

// procCPU reads the user and system CPU time of pid (clock ticks of
// 1/100 s, Linux's USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis: utime and stime are 14 and 15.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// ruleEval is one rule's latest evaluation, as /api/v1/rules reports it.
type ruleEval struct {
	group    string
	last     time.Time // when its latest evaluation began
	duration time.Duration
}

// rulesSnapshot reads every rule's latest evaluation from a server's
// /api/v1/rules (Prometheus's API in both), keyed by group and position.
func rulesSnapshot(ctx context.Context, client *http.Client, base string) (map[string]ruleEval, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/rules", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the rules of %s: %w", base, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				File  string `json:"file"`
				Name  string `json:"name"`
				Rules []struct {
					Name           string    `json:"name"`
					EvaluationTime float64   `json:"evaluationTime"`
					LastEvaluation time.Time `json:"lastEvaluation"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("read the rules of %s: %w", base, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("read the rules of %s: status %q", base, body.Status)
	}
	out := map[string]ruleEval{}
	for _, g := range body.Data.Groups {
		for i, r := range g.Rules {
			group := g.File + ";" + g.Name
			out[fmt.Sprintf("%s;%d;%s", group, i, r.Name)] = ruleEval{group: group, last: r.LastEvaluation, duration: seconds(r.EvaluationTime)}
		}
	}
	return out, nil
}

// cycleOf sums the latest evaluation of every rule of a snapshot taken at
// at, and counts the rules evaluated in the two intervals before it. Each
// rule counts once; a Prometheus group that has already run again since
// the cycle ended counts with that newer evaluation.
func cycleOf(now map[string]ruleEval, at time.Time) (rules time.Duration, current int) {
	for _, r := range now {
		rules += r.duration
		if r.last.After(at.Add(-2 * evalInterval)) {
			current++
		}
	}
	return rules, current
}

// instant evaluates q at now through a server's query API and returns the
// number of series and their values' sum.
func instant(ctx context.Context, client *http.Client, base, q string) (series int, sum float64, err error) {
	u := base + "/api/v1/query?" + url.Values{"query": {q}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("query %s: %w", base, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, 0, fmt.Errorf("query %s: %w", base, err)
	}
	if body.Status != "success" {
		return 0, 0, fmt.Errorf("query %s %q: %s", base, q, body.Error)
	}
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("query %s %q: value %v: %w", base, q, r.Value[1], err)
		}
		sum += v
	}
	return len(body.Data.Result), sum, nil
}
