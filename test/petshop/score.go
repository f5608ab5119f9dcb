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

// naiveTopK is inTopK of the naive baseline.
func (r result) naiveTopK(k int) bool {
	return slices.Contains(r.naive[:min(k, len(r.naive))], r.truth)
}

// runner runs `vigil diagnose` on converted issues.
type runner struct {
	bin  string
	dir  string // for the converted files
	conv convertOptions
	// keep keeps each converted file (else it is removed after its run).
	keep bool
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

// runScenario runs every issue of sc.
func (r *runner) runScenario(ctx context.Context, sc *scenario) ([]result, error) {
	out := make([]result, 0, len(sc.issues))
	for _, is := range sc.issues {
		res, err := r.runIssue(ctx, sc, is)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// runIssue converts one issue, runs the binary on it and reads its
// ranking.
func (r *runner) runIssue(ctx context.Context, sc *scenario, is *issue) (result, error) {
	res := result{scenario: sc.name, split: is.split, issue: is.name, truth: is.target.RootCause.Node}
	path := filepath.Join(r.dir, fmt.Sprintf("%s-%s-%s.om", sc.name, is.split, is.name))
	fh, err := os.Create(path)
	if err != nil {
		return res, fmt.Errorf("convert %s/%s/%s: %w", sc.name, is.split, is.name, err)
	}
	cv, err := convertIssue(fh, sc, is, r.conv)
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", path, cerr)
	}
	if err != nil {
		return res, fmt.Errorf("scenario %s: %w", sc.name, err)
	}
	if !r.keep {
		defer os.Remove(path)
	}
	args := []string{"diagnose", "--input", path, "--entity-label", entityLabel, "--step", step.String(),
		"--window", cv.window.String(), "--at", strconv.FormatInt(cv.at, 10), "--json"}
	began := time.Now()
	rep, err := runDiagnose(ctx, r.bin, args)
	res.took = time.Since(began)
	if err != nil {
		return res, fmt.Errorf("diagnose %s/%s/%s: %w", sc.name, is.split, is.name, err)
	}
	res.ranked, res.walked = rankedServices(rep), walked(rep)
	hist := r.conv.history
	if hist <= 0 {
		hist = defaultHistory
	}
	res.naive = naiveRank(sc, is, int64(hist/time.Second))
	return res, nil
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
		mark := "miss"
		switch {
		case r.inTopK(1):
			mark = "top1"
		case r.inTopK(3):
			mark = "top3"
		}
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
