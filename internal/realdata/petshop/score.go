package petshop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// entityLabel is the label the converted series name their node by.
const entityLabel = "service"

// EntityLabel is entityLabel, for `vigil diagnose --entity-label`.
const EntityLabel = entityLabel

// GraphSignal is the evidence the service-graph walk adds to the cause it
// moves first.
const GraphSignal = graphSignal

// baselineFigure is the published traversal baseline's top-1 recall on
// the data set, as the issue quotes it.
const baselineFigure = "traversal top-1 57–83% (issue 8)"

// result is one issue's outcome.
type result struct {
	scenario, split, issue string
	// truth is the root cause's node; ranked the causes' services, best
	// first, each once.
	truth  string
	ranked []string
	// naive is the naive baseline's ranking of the same issue (naive.go).
	naive []string
	// walked: the first cause is where the service-graph walk led.
	walked bool
	took   time.Duration
}

// inTopK tells whether the truth is among the first k ranked nodes.
func (r result) inTopK(k int) bool {
	return slices.Contains(r.ranked[:min(k, len(r.ranked))], r.truth)
}

// mark says where the truth ranks: top1, top3 or miss.
func (r result) mark() string {
	switch {
	case r.inTopK(1):
		return "top1"
	case r.inTopK(3):
		return "top3"
	}
	return "miss"
}

// naiveTopK is inTopK of the naive baseline.
func (r result) naiveTopK(k int) bool {
	return slices.Contains(r.naive[:min(k, len(r.naive))], r.truth)
}

// Result is one issue's outcome as `vigil eval --suite petshop --json`
// writes it.
type Result struct {
	Scenario string   `json:"scenario"`
	Split    string   `json:"split"`
	Issue    string   `json:"issue"`
	Truth    string   `json:"truth"`
	Ranked   []string `json:"ranked"`
	Naive    []string `json:"naive"`
	Walked   bool     `json:"walked"`
	Seconds  float64  `json:"seconds"`
}

func (r result) export() Result {
	return Result{Scenario: r.scenario, Split: r.split, Issue: r.issue, Truth: r.truth, Ranked: r.ranked, Naive: r.naive, Walked: r.walked, Seconds: r.took.Seconds()}
}

func (r Result) internal() result {
	return result{scenario: r.Scenario, split: r.Split, issue: r.Issue, truth: r.Truth, ranked: r.Ranked, naive: r.Naive, walked: r.Walked,
		took: time.Duration(r.Seconds * float64(time.Second))}
}

func internalResults(rs []Result) []result {
	out := make([]result, len(rs))
	for i, r := range rs {
		out[i] = r.internal()
	}
	return out
}

// Ranking is what a diagnosis of an issue gave: the causes' services,
// best first, each once, and whether the service-graph walk led to the
// first.
type Ranking struct {
	Services []string
	Walked   bool
}

// DiagnoseFunc diagnoses an issue written as OpenMetrics text at at,
// looking window back.
type DiagnoseFunc func(ctx context.Context, input []byte, at time.Time, window time.Duration) (Ranking, error)

// Run diagnoses every issue of the scenarios under dir (the data set's
// dataset directory, or one scenario's) and scores them as the data set's
// in_top_k does, next to the naive baseline.
func Run(ctx context.Context, dir string, diag DiagnoseFunc, progress io.Writer) ([]Result, error) {
	rs, err := run(ctx, dir, convertOptions{}, diag, progress)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i] = r.export()
	}
	return out, nil
}

func run(ctx context.Context, dir string, conv convertOptions, diag DiagnoseFunc, progress io.Writer) ([]result, error) {
	paths, err := findScenarios(dir)
	if err != nil {
		return nil, err
	}
	var out []result
	for _, p := range paths {
		sc, err := loadScenario(p)
		if err != nil {
			return nil, err
		}
		for _, is := range sc.issues {
			res := result{scenario: sc.name, split: is.split, issue: is.name, truth: is.target.RootCause.Node}
			var buf bytes.Buffer
			cv, err := convertIssue(&buf, sc, is, conv)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.name, err)
			}
			began := time.Now()
			rk, err := diag(ctx, buf.Bytes(), time.Unix(cv.at, 0).UTC(), cv.window)
			if err != nil {
				return nil, fmt.Errorf("diagnose %s/%s/%s: %w", sc.name, is.split, is.name, err)
			}
			res.took = time.Since(began)
			res.ranked, res.walked = rk.Services, rk.Walked
			hist := conv.history
			if hist <= 0 {
				hist = defaultHistory
			}
			res.naive = naiveRank(sc, is, int64(hist/time.Second))
			if progress != nil {
				fmt.Fprintf(progress, "petshop: %s/%s/%s: %s\n", sc.name, is.split, is.name, res.mark())
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// WriteResults prints the table per scenario and split, then each issue.
func WriteResults(w io.Writer, results []Result) error {
	rs := internalResults(results)
	if err := writeTable(w, rs); err != nil {
		return err
	}
	return writeCases(w, rs)
}

// execDiagnose is a DiagnoseFunc that writes each issue to a file in dir
// and runs `vigil diagnose` (the binary bin) on it, as a user would.
func execDiagnose(bin, dir string) DiagnoseFunc {
	n := 0
	return func(ctx context.Context, input []byte, at time.Time, window time.Duration) (Ranking, error) {
		n++
		path := filepath.Join(dir, fmt.Sprintf("issue-%d.om", n))
		if err := os.WriteFile(path, input, 0o644); err != nil {
			return Ranking{}, err
		}
		defer os.Remove(path)
		rep, err := runDiagnose(ctx, bin, []string{"diagnose", "--input", path, "--entity-label", entityLabel, "--step", step.String(),
			"--window", window.String(), "--at", strconv.FormatInt(at.Unix(), 10), "--json"})
		if err != nil {
			return Ranking{}, err
		}
		return Ranking{Services: rankedServices(rep), Walked: walked(rep)}, nil
	}
}

// diagnoseReport is the part of `vigil diagnose --json` the scorer reads.
type diagnoseReport struct {
	Causes []diagnoseCause `json:"causes"`
}

// diagnoseCause is a cause's rank, entity and evidence.
type diagnoseCause struct {
	Rank     int               `json:"rank"`
	Entity   map[string]string `json:"entity"`
	Evidence []struct {
		Signal string `json:"signal"`
	} `json:"evidence"`
}

// graphSignal is the evidence the service-graph walk adds to the cause it
// moves first.
const graphSignal = "traces_service_graph_request_total"

// walked tells whether the first cause is where the service-graph walk
// led.
func walked(rep *diagnoseReport) bool {
	for _, c := range rep.Causes {
		if c.Rank != 1 {
			continue
		}
		for _, e := range c.Evidence {
			if e.Signal == graphSignal {
				return true
			}
		}
	}
	return false
}

// runDiagnose runs the binary and decodes its one JSON object.
func runDiagnose(ctx context.Context, bin string, args []string) (*diagnoseReport, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run vigil %v: %w: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var rep diagnoseReport
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("read vigil's JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("read vigil's JSON: more than one object on stdout")
	}
	return &rep, nil
}

// rankedServices are the causes' service labels in rank order, each
// once; causes without the label are skipped.
func rankedServices(rep *diagnoseReport) []string {
	causes := slices.Clone(rep.Causes)
	slices.SortStableFunc(causes, func(a, b diagnoseCause) int { return a.Rank - b.Rank })
	var out []string
	for _, c := range causes {
		if s := c.Entity[entityLabel]; s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// tally is the recall of a group of issues.
type tally struct {
	scenario, split  string
	n                int
	top1, top3, none int
	naive1, naive3   int
	walked           int
	took             time.Duration
}

// tallies groups results by scenario and split, in the order they come,
// then one row per scenario for both splits, then one for all.
func tallies(results []result) []tally {
	var out []tally
	find := func(sc, split string) *tally {
		for i := range out {
			if out[i].scenario == sc && out[i].split == split {
				return &out[i]
			}
		}
		out = append(out, tally{scenario: sc, split: split})
		return &out[len(out)-1]
	}
	var scenarios []string
	for _, r := range results {
		find(r.scenario, r.split).add(r)
		if !slices.Contains(scenarios, r.scenario) {
			scenarios = append(scenarios, r.scenario)
		}
	}
	for _, sc := range scenarios {
		t := find(sc, "all")
		for _, r := range results {
			if r.scenario == sc {
				t.add(r)
			}
		}
	}
	if len(scenarios) > 1 {
		t := find("all", "all")
		for _, r := range results {
			t.add(r)
		}
	}
	return out
}

func (t *tally) add(r result) {
	t.n++
	t.took += r.took
	if r.inTopK(1) {
		t.top1++
	}
	if r.inTopK(3) {
		t.top3++
	}
	if len(r.ranked) == 0 {
		t.none++
	}
	if r.walked {
		t.walked++
	}
	if r.naiveTopK(1) {
		t.naive1++
	}
	if r.naiveTopK(3) {
		t.naive3++
	}
}

// pct is a count's share of n in percent.
func pct(c, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(c) / float64(n)
}

// writeTable prints the recall per scenario and split next to the
// published baseline.
func writeTable(w io.Writer, results []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsplit\tn\tVigil top-1\ttop-3\tnaive top-1\ttop-3\tempty\twalked\ts/issue\t")
	for _, t := range tallies(results) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\t%.1f\t\n", t.scenario, t.split, t.n,
			pct(t.top1, t.n), pct(t.top3, t.n), pct(t.naive1, t.n), pct(t.naive3, t.n), pct(t.none, t.n), pct(t.walked, t.n), t.took.Seconds()/float64(max(t.n, 1)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "baseline: %s; naive: the service whose average latency rose most over its own median before; walked: the first cause is where the service-graph walk led\n", baselineFigure)
	return err
}

// writeCases prints each issue's truth and Vigil's first three.
func writeCases(w io.Writer, results []result) error {
	for _, r := range results {
		mark := r.mark()
		if r.walked {
			mark += " walked"
		}
		if _, err := fmt.Fprintf(w, "%s/%s/%s %s truth=%q vigil=%q naive=%q\n", r.scenario, r.split, r.issue, mark,
			r.truth, r.ranked[:min(3, len(r.ranked))], r.naive[:min(3, len(r.naive))]); err != nil {
			return err
		}
	}
	return nil
}
