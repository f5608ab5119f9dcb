package ui

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/slo"
)

// inferenceView answers "is inference healthy?": per model, its latency,
// time to first token, throughput, queue, running requests and KV cache
// now (the last 5 minutes of the window), and the SLOs recorded for it
// with their burn rates — the data of /inference and /api/v1/inference.
type inferenceView struct {
	From    time.Time    `json:"from"`
	To      time.Time    `json:"to"`
	Verdict string       `json:"verdict"`
	Answer  string       `json:"answer"`
	Counts  []count      `json:"counts"`
	Models  []modelRow   `json:"models"`
	Columns []signalCol  `json:"-"`
	Charts  []chartView  `json:"-"`
	Warning []string     `json:"warnings"`
	SLOs    []sloPreset  `json:"slos"`
	Burning []burningSLO `json:"-"`
}

// signalCol is one column of the models' table: a catalog signal.
type signalCol struct {
	Signal, Title, Unit string
}

// modelColumns are the signals of the models' table, in its order.
var modelColumns = []signalCol{
	{"infer.e2e_latency", "p95 latency", "s"},
	{"infer.ttft", "p95 TTFT", "s"},
	{"infer.itl", "p95 inter-token", "s"},
	{"infer.generation_tokens", "tokens/s", "/s"},
	{"infer.queue_depth", "queued", ""},
	{"infer.requests_running", "running", ""},
	{"infer.kv_cache_usage", "KV cache", "%"},
}

// kvFull is the KV-cache usage at which a model is short of cache.
const kvFull = 0.95

// modelRow is one model of one namespace.
type modelRow struct {
	Namespace string `json:"namespace"`
	Model     string `json:"model"`
	// Values are the columns' signals now, by signal name.
	Values map[string]float64 `json:"values"`
	// Cells are Values formatted in the columns' order, for the page.
	Cells []cell `json:"-"`
	// SLOs are the SLOs recorded for the model.
	SLOs []sloState `json:"slos"`
	Bad  bool       `json:"-"`
}

// cell is a formatted value of the table.
type cell struct {
	Text  string
	Class string
}

// sloPreset is one of the built-in SLOs the page knows the objective of.
type sloPreset struct {
	Name        string `json:"slo"`
	Description string `json:"description"`
	Objective   string `json:"objective"`
}

// sloState is an SLO of a model as the rules recorded it: the burn rates
// of a burn-rate SLO, the value of a gauge SLO.
type sloState struct {
	Name string `json:"slo"`
	// Objective is the SLO's, in words ("95 % within 1 s").
	Objective string `json:"objective,omitempty"`
	// Burn5m and Burn1h are the error budget's burn rates (1: spent
	// exactly over the SLO's period); NaN when not recorded.
	Burn5m jsonNum `json:"burn_rate_5m"`
	Burn1h jsonNum `json:"burn_rate_1h"`
	// Value is a gauge SLO's recorded value, NaN otherwise.
	Value jsonNum `json:"value"`
	// Breached: burning faster than the budget allows over both windows,
	// or a gauge outside its bounds.
	Breached bool   `json:"breached"`
	Text     string `json:"-"`
}

// burningSLO is one breach for the answer.
type burningSLO struct{ Model, SLO, Text string }

// presetObjectives describes the built-in SLOs by name.
func presetObjectives() map[string]sloPreset {
	out := map[string]sloPreset{}
	for _, s := range slo.Presets().SLOs {
		p := sloPreset{Name: s.Name, Description: s.Description}
		switch {
		case s.SLI.Latency != nil && s.Objective != nil:
			p.Objective = fmt.Sprintf("%s within %s", fmtPercent(*s.Objective/100), fmtUnit(s.SLI.Latency.Threshold, "s"))
		case s.SLI.Gauge != nil && s.SLI.Gauge.Below != nil && s.SLI.Gauge.Above != nil:
			p.Objective = "between " + fmtNum(*s.SLI.Gauge.Above) + " and " + fmtNum(*s.SLI.Gauge.Below)
		case s.SLI.Gauge != nil && s.SLI.Gauge.Below != nil:
			p.Objective = "below " + fmtNum(*s.SLI.Gauge.Below)
		case s.SLI.Gauge != nil && s.SLI.Gauge.Above != nil:
			p.Objective = "at or above " + fmtNum(*s.SLI.Gauge.Above)
		case s.Objective != nil:
			p.Objective = fmtPercent(*s.Objective / 100)
		}
		out[s.Name] = p
	}
	return out
}

// inference builds the view of w.
func (h *Handler) inference(ctx context.Context, w timeRange) (*inferenceView, error) {
	v := &inferenceView{From: w.From, To: w.To, Models: []modelRow{}, Counts: []count{}, Warning: []string{}, SLOs: []sloPreset{}, Columns: modelColumns}
	have, err := h.metricSet(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("render inference: %w", err)
	}
	keys := []string{catalog.KeyNamespace, catalog.KeyModel}
	rows := map[string]*modelRow{}
	row := func(ns, model string) *modelRow {
		k := ns + "/" + model
		if rows[k] == nil {
			rows[k] = &modelRow{Namespace: ns, Model: model, Values: map[string]float64{}, SLOs: []sloState{}}
		}
		return rows[k]
	}
	for _, col := range modelColumns {
		qs, err := h.cat.Queries(col.Signal, have, catalog.QueryOptions{By: keys, Window: 5 * time.Minute})
		if err != nil {
			continue // none of its metrics in the store
		}
		for _, q := range qs {
			vec, err := h.instant(ctx, q.Expr, w.To)
			if err != nil {
				return nil, fmt.Errorf("render inference: %w", err)
			}
			ls := h.keyLabels(q, keys)
			for _, s := range vec {
				ev := entityValues(s.Metric, ls)
				if ev[1] == "" || math.IsNaN(s.F) || math.IsInf(s.F, 0) {
					continue
				}
				r := row(ev[0], ev[1])
				if _, done := r.Values[col.Signal]; !done { // the first source wins
					r.Values[col.Signal] = s.F
				}
			}
		}
	}
	if err := h.modelSLOs(ctx, have, w, row, v); err != nil {
		return nil, fmt.Errorf("render inference: %w", err)
	}
	queueMax := gaugeBounds()[slo.PresetQueueDepth].below
	for _, k := range sortedKeys(rows) {
		r := rows[k]
		for _, col := range modelColumns {
			c := cell{Text: "–"}
			if x, ok := r.Values[col.Signal]; ok {
				c.Text = fmtUnit(x, col.Unit)
				if (col.Signal == "infer.kv_cache_usage" && x >= kvFull) || (col.Signal == "infer.queue_depth" && queueMax != nil && x > *queueMax) {
					c.Class, r.Bad = "bad", true
				}
			}
			r.Cells = append(r.Cells, c)
		}
		v.Models = append(v.Models, *r)
	}
	v.answer()
	return v, nil
}

// modelSLOs attaches the SLOs the rules recorded for each model: the
// burn rates of slo:current_burn_rate:ratio (5m) and of the hour's error
// ratio, and slo:sli:value of a gauge SLO against its bounds.
func (h *Handler) modelSLOs(ctx context.Context, have catalog.MetricSet, w timeRange, row func(ns, model string) *modelRow, v *inferenceView) error {
	presets := presetObjectives()
	for _, name := range sortedKeys(presets) {
		v.SLOs = append(v.SLOs, presets[name])
	}
	if !hasAny(have, "slo:current_burn_rate:ratio", "slo:sli:value") {
		v.Warning = append(v.Warning, "No SLO is recorded in the store (Vigil's rule evaluation is off, or the SLOs' metrics are absent): the models are shown without burn rates.")
		return nil
	}
	read := func(expr string) (map[[3]string]float64, error) {
		vec, err := h.instant(ctx, expr, w.To)
		if err != nil {
			return nil, err
		}
		out := map[[3]string]float64{}
		for _, s := range vec {
			out[[3]string{s.Metric.Get("slo"), s.Metric.Get("namespace"), s.Metric.Get("model")}] = s.F
		}
		return out, nil
	}
	burn5, err := read(`slo:current_burn_rate:ratio{model!=""}`)
	if err != nil {
		return err
	}
	burn1, err := read(`slo:sli_error:ratio_rate1h{model!=""} / on (slo) group_left () (1 - slo:objective:ratio)`)
	if err != nil {
		return err
	}
	values, err := read(`slo:sli:value{model!=""}`)
	if err != nil {
		return err
	}
	states := map[[3]string]*sloState{}
	state := func(k [3]string) *sloState {
		if states[k] == nil {
			states[k] = &sloState{Name: k[0], Objective: presets[k[0]].Objective, Burn5m: jsonNum(math.NaN()), Burn1h: jsonNum(math.NaN()), Value: jsonNum(math.NaN())}
		}
		return states[k]
	}
	for k, x := range burn5 {
		state(k).Burn5m = jsonNum(x)
	}
	for k, x := range burn1 {
		state(k).Burn1h = jsonNum(x)
	}
	bounds := gaugeBounds()
	for k, x := range values {
		if _, ok := bounds[k[0]]; ok {
			state(k).Value = jsonNum(x)
		}
	}
	for _, k := range sortedStateKeys(states) {
		s := states[k]
		switch b, gauge := bounds[s.Name]; {
		case gauge:
			val := float64(s.Value)
			s.Breached = (b.below != nil && val > *b.below) || (b.above != nil && val < *b.above)
			s.Text = "now " + fmtNum(val)
		default:
			s.Breached = s.Burn5m > 1 && s.Burn1h > 1
			s.Text = "burn " + fmtBurn(float64(s.Burn5m)) + " (5m), " + fmtBurn(float64(s.Burn1h)) + " (1h)"
		}
		r := row(k[1], k[2])
		r.SLOs = append(r.SLOs, *s)
		if s.Breached {
			r.Bad = true
			v.Burning = append(v.Burning, burningSLO{Model: r.Model, SLO: s.Name, Text: s.Text})
		}
	}
	return nil
}

// bound is a gauge SLO's healthy range.
type bound struct{ below, above *float64 }

// gaugeBounds are the preset gauge SLOs' bounds by name.
func gaugeBounds() map[string]bound {
	out := map[string]bound{}
	for _, s := range slo.Presets().SLOs {
		if g := s.SLI.Gauge; g != nil {
			out[s.Name] = bound{below: g.Below, above: g.Above}
		}
	}
	return out
}

func sortedStateKeys(m map[[3]string]*sloState) [][3]string {
	out := make([][3]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b [3]string) int { return strings.Compare(a[1]+"/"+a[2]+"/"+a[0], b[1]+"/"+b[2]+"/"+b[0]) })
	return out
}

// fmtBurn writes a burn rate as "0.02×", "< 0.01×" below a hundredth
// (a budget that would last a hundred periods: nothing to read in its
// digits), "0×" for none, or "–" when not recorded.
func fmtBurn(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "–"
	case x == 0:
		return "0×"
	case x > 0 && x < 0.01:
		return "< 0.01×"
	}
	return fmtNum(x) + "×"
}

// answer sets the verdict, the sentence and the counts.
func (v *inferenceView) answer() {
	if len(v.Models) == 0 {
		v.Verdict, v.Answer = verdictNoData, "No data yet: no inference engine (vLLM, SGLang, TGI, Triton, NIM, ...) reports a model from "+fmtTime(v.From)+" to "+fmtTime(v.To)+"."
		return
	}
	bad := 0
	var why []string
	for _, m := range v.Models {
		if m.Bad {
			bad++
		}
		if x, ok := m.Values["infer.kv_cache_usage"]; ok && x >= kvFull {
			why = append(why, fmt.Sprintf("%s's KV cache is %s full", m.Model, fmtPercent(x)))
		}
		if q, ok := gaugeBounds()[slo.PresetQueueDepth]; ok && q.below != nil && m.Values["infer.queue_depth"] > *q.below {
			why = append(why, fmt.Sprintf("%s has %s requests queued (its SLO: below %s)", m.Model, fmtNum(m.Values["infer.queue_depth"]), fmtNum(*q.below)))
		}
	}
	for _, b := range v.Burning {
		why = append(why, fmt.Sprintf("%s breaches %s (%s)", b.Model, b.SLO, b.Text))
	}
	v.Counts = append(v.Counts, count{Label: "models", N: fmt.Sprint(len(v.Models)), Class: "none"})
	cls := "ok"
	if bad > 0 {
		cls = "bad"
	}
	v.Counts = append(v.Counts, count{Label: "within their SLOs", N: fmt.Sprintf("%d of %d", len(v.Models)-bad, len(v.Models)), Class: cls})
	if bad == 0 {
		v.Verdict, v.Answer = verdictHealthy, fmt.Sprintf("Yes: %s serving, within every SLO recorded for them and with KV cache to spare.", plural(len(v.Models), "model", "models"))
		return
	}
	v.Verdict, v.Answer = verdictUnhealthy, "No: "+strings.Join(why, "; ")+"."
}

// inferenceCharts are /inference's charts over w, one series per model.
func (h *Handler) inferenceCharts(ctx context.Context, have catalog.MetricSet, w timeRange) []chartView {
	presets := slo.Presets()
	limit := func(name string) (*float64, string) {
		for _, s := range presets.SLOs {
			switch {
			case s.Name != name:
			case s.SLI.Latency != nil:
				return &s.SLI.Latency.Threshold, "SLO " + fmtUnit(s.SLI.Latency.Threshold, "s")
			case s.SLI.Gauge != nil && s.SLI.Gauge.Below != nil:
				return s.SLI.Gauge.Below, "SLO below " + fmtNum(*s.SLI.Gauge.Below)
			}
		}
		return nil, ""
	}
	charts := []struct {
		signal, title, unit, slo string
	}{
		{"infer.e2e_latency", "p95 request latency (s)", "s", ""},
		{"infer.ttft", "p95 time to first token (s)", "s", slo.PresetTTFT},
		{"infer.itl", "p95 inter-token latency (s)", "s", slo.PresetInterTokenLatency},
		{"infer.generation_tokens", "Generated tokens per second", "/s", ""},
		{"infer.queue_depth", "Requests queued", "", slo.PresetQueueDepth},
		{"infer.requests_running", "Requests running", "", ""},
		{"infer.kv_cache_usage", "KV-cache usage (1 = full)", "%", ""},
	}
	var jobs []chartJob
	for _, c := range charts {
		q, err := h.cat.PromQL(c.signal, have, catalog.QueryOptions{By: []string{catalog.KeyModel}, Window: 5 * time.Minute})
		if err != nil {
			continue
		}
		j := chartJob{title: c.title, unit: c.unit, query: q.Expr, fallback: c.signal}
		if c.slo != "" {
			j.limit, j.limitLabel = limit(c.slo)
		}
		jobs = append(jobs, j)
	}
	out := make([]chartView, len(jobs))
	for n := range jobs {
		jobs[n].out = &out[n]
	}
	h.chartAll(ctx, jobs, w)
	return out
}

// inferencePage is /inference.
func (h *Handler) inferencePage(ctx context.Context, r *request) (any, error) {
	w := questionWindow(r.rng, r.now)
	v, err := h.inference(ctx, w)
	if err != nil {
		return nil, err
	}
	if len(v.Models) > 0 {
		have, err := h.metricSet(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("render inference: %w", err)
		}
		v.Charts = h.inferenceCharts(ctx, have, w)
	}
	return v, nil
}
