package nezha

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-obs/vigil/internal/detect"
)

// Result is one fault's outcome.
type Result struct {
	Day string `json:"day"`
	// Data is what the case held: metrics, or metrics+logs.
	Data string `json:"data"`
	// Fault is the injection's type, Truth the injected pod's service.
	Fault string `json:"fault"`
	Truth string `json:"truth"`
	// Ranked are the services the diagnosis ranked, best first; Naive the
	// naive baseline's (NaiveRank).
	Ranked []string `json:"ranked"`
	Naive  []string `json:"naive"`
}

// Rank is the 1-based rank of truth in list, 0 when it is not there.
func Rank(list []string, truth string) int {
	if i := slices.Index(list, truth); i >= 0 {
		return i + 1
	}
	return 0
}

// Input is one file of a case: OpenMetrics text (Name ends in .om) or
// OTLP JSON traces (.otlp.json).
type Input struct {
	Name string
	Data []byte
}

// DiagnoseFunc diagnoses a case given as its files, as `vigil diagnose
// --input` reads them, and returns the services it ranks, best first.
type DiagnoseFunc func(ctx context.Context, inputs []Input, c Case) ([]string, error)

// Data kinds of a Result: each modality alone and together.
const (
	DataMetrics    = "metrics"
	DataLogs       = "metrics+logs"
	DataGraph      = "metrics+graph"
	DataLogsOnly   = "logs"
	DataTraces     = "traces"
	DataWithTraces = "metrics+traces"
	DataAll        = "metrics+traces+logs"
)

// kinds are the data kinds a day can be read as.
func (d *Day) kinds() []string {
	out := []string{DataMetrics}
	if d.HasLogs() {
		out = append(out, DataLogsOnly, DataLogs)
	}
	if d.Edges != nil {
		out = append(out, DataGraph)
	}
	if d.HasTraces() {
		out = append(out, DataTraces, DataWithTraces)
		if d.HasLogs() {
			out = append(out, DataAll)
		}
	}
	return out
}

// inputs writes fault i of the day as the files of a data kind: the
// metrics as OpenMetrics text, the traces and the logs as OTLP JSON.
func (d *Day) inputs(i int, kind string) ([]Input, Case, error) {
	logs := kind == DataLogs || kind == DataLogsOnly || kind == DataAll
	traces := kind == DataTraces || kind == DataWithTraces || kind == DataAll
	var in []Input
	var b strings.Builder
	alone := kind == DataTraces || kind == DataLogsOnly
	c, err := d.WriteCase(&b, i, CaseOptions{Graph: kind == DataGraph, NoMetrics: alone})
	if err != nil {
		return nil, Case{}, err
	}
	if !alone {
		in = append(in, Input{Name: "case.om", Data: []byte(b.String())})
	}
	from := c.At.Add(-c.Window)
	// The data set records spans and log lines for about three minutes
	// around each injection. The traces alone are diagnosed where the
	// spans end (after it there is nothing to read), at the span
	// metrics' own 15 s, as the logs alone are; with the metrics, at the
	// metrics' time and at the step the data gives `diagnose --input`
	// (no --step): the engine reads the span-derived series only where
	// the traces cover (a stretch with no calls series at all is no
	// data, not every service's calls at zero), and each series once a
	// sample, so the minute rows read at a finer step are one reading a
	// row; cutting the case at the spans' end left the metrics a minute
	// or two after the injection.
	var end time.Time
	if traces {
		var tb strings.Builder
		spans, _, err := d.WriteTraces(&tb, from, c.At)
		if err != nil {
			return nil, Case{}, err
		}
		if spans > 0 {
			in = append(in, Input{Name: "case.otlp.json", Data: []byte(tb.String())})
			end = later(end, d.lastSpanEnd(from, c.At))
			if alone {
				c.Step = traceStep
			}
		}
	}
	if logs {
		var lb strings.Builder
		records, _, err := d.WriteLogs(&lb, from, c.At)
		if err != nil {
			return nil, Case{}, err
		}
		if records > 0 {
			in = append(in, Input{Name: "case.logs.otlp.json", Data: []byte(lb.String())})
			if alone {
				c.Step = traceStep
			}
		}
	}
	if alone && !end.IsZero() && end.Before(c.At) {
		c.At = end
		c.Window = end.Sub(from)
	}
	return in, c, nil
}

// Run diagnoses every fault of the days in dir (a day directory, or a
// directory of them): metrics alone, and with the logs where the day has
// them, and with the calls between services where it has those. It
// returns the results and the days' notes.
func Run(ctx context.Context, dir string, diag DiagnoseFunc, progress io.Writer) ([]Result, []string, error) {
	days, err := dayDirs(dir)
	if err != nil {
		return nil, nil, err
	}
	var out []Result
	var notes []string
	for _, dd := range days {
		d, err := Load(dd)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range d.Notes {
			notes = append(notes, d.Name+": "+n)
		}
		for _, kind := range d.kinds() {
			for i, f := range d.Faults {
				in, c, err := d.inputs(i, kind)
				if err != nil {
					return nil, nil, err
				}
				var ranked []string
				if len(in) > 0 {
					ranked, err = diag(ctx, in, c)
				}
				if err != nil {
					return nil, nil, fmt.Errorf("%s fault %d (%s at %s): %w", d.Name, i+1, f.Type, f.At.Format("15:04:05"), err)
				}
				r := Result{Day: d.Name, Data: kind, Fault: f.Type, Truth: f.Service, Ranked: ranked, Naive: NaiveRank(d, c)}
				if progress != nil {
					fmt.Fprintf(progress, "nezha: %s %s %s %s: rank %d\n", d.Name, kind, f.Type, f.Service, Rank(ranked, f.Service))
				}
				out = append(out, r)
			}
		}
	}
	return out, notes, nil
}

// dayDirs returns dir when it is a day, else the days in it.
func dayDirs(dir string) ([]string, error) {
	if lists, _ := filepath.Glob(filepath.Join(dir, "*-fault_list.json")); len(lists) > 0 {
		return []string{dir}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if lists, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*-fault_list.json")); e.IsDir() && len(lists) > 0 {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no Nezha day (a directory with a *-fault_list.json) there or in it", dir)
	}
	return out, nil
}

// NaiveRank orders the services by how far their series moved after the
// injection: the largest over a service's columns of |median after −
// median before| in robust spreads (MAD, floor 1 % of the median) of the
// minutes the case holds before the injection.
func NaiveRank(d *Day, c Case) []string {
	from := c.At.Add(-c.Window)
	score := map[string]float64{}
	for _, p := range d.Pods {
		for _, col := range p.Order {
			var before, after []float64
			for k, ts := range p.Times {
				v := p.Columns[col][k]
				switch {
				case math.IsNaN(v):
				case !ts.Before(from) && ts.Before(c.Fault.At):
					before = append(before, v)
				case !ts.Before(c.Fault.At) && !ts.After(c.At):
					after = append(after, v)
				}
			}
			if len(before) == 0 || len(after) == 0 {
				continue
			}
			base := detect.NewBaselineMAD(before, detect.Floor{Rel: 0.01, Abs: 1e-9})
			if z := math.Abs(base.Z(detect.Median(after))); !math.IsNaN(z) {
				score[p.Service] = max(score[p.Service], z)
			}
		}
	}
	out := make([]string, 0, len(score))
	for s := range score {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// WriteTable prints AC@1 and AC@3, Vigil's and the naive baseline's, per
// day, data and fault type, then per day and data.
func WriteTable(w io.Writer, results []Result) error {
	type key struct{ day, data, fault string }
	var keys []key
	rows := map[key][]Result{}
	for _, r := range results {
		for _, k := range []key{{r.Day, r.Data, r.Fault}, {r.Day, r.Data, "all"}} {
			if _, ok := rows[k]; !ok {
				keys = append(keys, k)
			}
			rows[k] = append(rows[k], r)
		}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.day, b.day); c != 0 {
			return c
		}
		if c := strings.Compare(a.data, b.data); c != 0 {
			return c
		}
		return strings.Compare(strings.ReplaceAll(a.fault, "all", "~"), strings.ReplaceAll(b.fault, "all", "~"))
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "day\tdata\tfault\tn\tVigil AC@1\tAC@3\tnaive AC@1\tAC@3\t")
	for _, k := range keys {
		rs := rows[k]
		share := func(list func(Result) []string, top int) string {
			n := 0
			for _, r := range rs {
				if i := Rank(list(r), r.Truth); i > 0 && i <= top {
					n++
				}
			}
			return fmt.Sprintf("%.2f", float64(n)/float64(len(rs)))
		}
		vig, naive := func(r Result) []string { return r.Ranked }, func(r Result) []string { return r.Naive }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", k.day, k.data, k.fault, len(rs), share(vig, 1), share(vig, 3), share(naive, 1), share(naive, 3))
	}
	return tw.Flush()
}
