package petshop

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The data set's scenarios, in the order its rca_task.py lists them.
var knownScenarios = []string{"low_traffic", "high_traffic", "temporal_traffic1", "temporal_traffic2"}

// splits are the issue splits of a scenario.
var splits = []string{"train", "test"}

// seriesKey names one column of a metrics.csv: a node's metric and its
// statistic (latency Average, requests Sum, availability Average, ...).
type seriesKey struct{ node, metric, stat string }

// frame is one metrics.csv: timestamps (Unix seconds) and, per column, the
// values (NaN where the cell is empty).
type frame struct {
	path string
	ts   []int64
	cols []seriesKey
	vals [][]float64 // vals[col][row]
	idx  map[seriesKey]int
}

// get is the column k's values, nil when the file has no such column.
func (f *frame) get(k seriesKey) []float64 {
	if i, ok := f.idx[k]; ok {
		return f.vals[i]
	}
	return nil
}

// callGraph is a scenario's graph.csv: who calls whom.
type callGraph struct {
	nodes []string
	// calls[r] are the nodes r calls (a 1 at row r, column c).
	calls map[string][]string
}

// callers are the nodes that call c, sorted.
func (g *callGraph) callers(c string) []string {
	var out []string
	for _, r := range g.nodes {
		if slices.Contains(g.calls[r], c) {
			out = append(out, r)
		}
	}
	return out
}

// target is an issue's target.json: the symptom (target) and the ground
// truth (root_cause; a null metric means any metric of the node).
type target struct {
	Target struct {
		Node      string  `json:"node"`
		Metric    string  `json:"metric"`
		Agg       string  `json:"agg"`
		Timestamp float64 `json:"timestamp"`
	} `json:"target"`
	RootCause struct {
		Node   string  `json:"node"`
		Metric *string `json:"metric"`
	} `json:"root_cause"`
}

// issue is one issue of a scenario's split.
type issue struct {
	split, name, dir string
	metrics          *frame
	target           target
}

// scenario is one scenario directory: its call graph, its normal period
// and its issues, train then test, each in the order of its number.
type scenario struct {
	name, dir string
	graph     *callGraph
	normal    *frame
	issues    []*issue
}

// findScenarios lists the scenario directories under dir: the known four
// first, then any other subdirectory holding a graph.csv; dir itself when
// it is a scenario.
func findScenarios(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "graph.csv")); err == nil {
		return []string{dir}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	var known, other []string
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "graph.csv")); err != nil {
			continue
		}
		if slices.Contains(knownScenarios, e.Name()) {
			known = append(known, e.Name())
		} else {
			other = append(other, e.Name())
		}
	}
	slices.SortFunc(known, func(a, b string) int {
		return slices.Index(knownScenarios, a) - slices.Index(knownScenarios, b)
	})
	var out []string
	for _, n := range append(known, other...) {
		out = append(out, filepath.Join(dir, n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("list scenarios: no directory under %s holds a graph.csv", dir)
	}
	return out, nil
}

// loadScenario reads a scenario directory completely.
func loadScenario(dir string) (*scenario, error) {
	sc := &scenario{name: filepath.Base(dir), dir: dir}
	var err error
	if sc.graph, err = readGraph(filepath.Join(dir, "graph.csv")); err != nil {
		return nil, err
	}
	// The temporal scenarios have no normal period (the data set ships
	// their noissue/metrics.csv empty, or not at all): their issues go in
	// with no history, their own window only.
	normal := filepath.Join(dir, "noissue", "metrics.csv")
	if fi, err := os.Stat(normal); errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0 {
		sc.normal = &frame{path: normal, idx: map[seriesKey]int{}}
	} else if sc.normal, err = readMetrics(normal); err != nil {
		return nil, err
	}
	for _, split := range splits {
		ents, err := os.ReadDir(filepath.Join(dir, split))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list issues: %w", err)
		}
		var names []string
		for _, e := range ents {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		slices.SortFunc(names, compareIssueNames)
		for _, n := range names {
			is, err := readIssue(filepath.Join(dir, split, n))
			if err != nil {
				return nil, err
			}
			is.split = split
			sc.issues = append(sc.issues, is)
		}
	}
	return sc, nil
}

// compareIssueNames orders issue_2 before issue_10.
func compareIssueNames(a, b string) int {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "issue_"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "issue_"))
	if ea == nil && eb == nil && na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

// readIssue reads an issue directory's metrics.csv and target.json.
func readIssue(dir string) (*issue, error) {
	is := &issue{name: filepath.Base(dir), dir: dir}
	var err error
	if is.metrics, err = readMetrics(filepath.Join(dir, "metrics.csv")); err != nil {
		return nil, err
	}
	if is.target, err = readTarget(filepath.Join(dir, "target.json")); err != nil {
		return nil, err
	}
	return is, nil
}

// readTarget reads a target.json; a syntax error names its line.
func readTarget(path string) (target, error) {
	var t target
	data, err := os.ReadFile(path)
	if err != nil {
		return t, fmt.Errorf("read target: %w", err)
	}
	if err := json.Unmarshal(data, &t); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return t, fmt.Errorf("%s:%d: read target: %w", path, lineAt(data, se.Offset), err)
		case errors.As(err, &te):
			return t, fmt.Errorf("%s:%d: read target: %w", path, lineAt(data, te.Offset), err)
		}
		return t, fmt.Errorf("%s: read target: %w", path, err)
	}
	if t.Target.Node == "" || t.RootCause.Node == "" {
		return t, fmt.Errorf("%s:1: read target: target.node and root_cause.node must be set", path)
	}
	return t, nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + strings.Count(string(data[:off]), "\n")
}

// csvFile reads a CSV file record by record, knowing each record's line.
type csvFile struct {
	path string
	r    *csv.Reader
}

func openCSV(path string) (*csvFile, io.Closer, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r := csv.NewReader(fh)
	r.FieldsPerRecord = -1 // checked here, so the error names the line
	r.ReuseRecord = true
	return &csvFile{path: path, r: r}, fh, nil
}

// next is the next record and its line; io.EOF at the end.
func (c *csvFile) next() ([]string, int, error) {
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, 0, fmt.Errorf("%s:%d: %w", c.path, pe.Line, pe.Err)
		}
		return nil, 0, fmt.Errorf("%s: %w", c.path, err)
	}
	line, _ := c.r.FieldPos(0)
	return rec, line, nil
}

// errorf is an error that names the file and line.
func (c *csvFile) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", c.path, line, fmt.Sprintf(format, args...))
}

// readGraph reads a graph.csv: a header (an empty first cell, then the
// node names) and one row per node, "node,0.0,1.0,...".
func readGraph(path string) (*callGraph, error) {
	c, closer, err := openCSV(path)
	if err != nil {
		return nil, fmt.Errorf("read graph: %w", err)
	}
	defer closer.Close()
	head, line, err := c.next()
	if err == io.EOF {
		return nil, c.errorf(1, "read graph: the file is empty")
	}
	if err != nil {
		return nil, fmt.Errorf("read graph: %w", err)
	}
	cols := slices.Clone(head[1:])
	if len(cols) == 0 {
		return nil, c.errorf(line, "read graph: the header names no node")
	}
	g := &callGraph{nodes: cols, calls: map[string][]string{}}
	seen := map[string]bool{}
	for {
		rec, line, err := c.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read graph: %w", err)
		}
		if len(rec) != len(head) {
			return nil, c.errorf(line, "read graph: %d cells, the header has %d", len(rec), len(head))
		}
		from := rec[0]
		if !slices.Contains(cols, from) {
			return nil, c.errorf(line, "read graph: row %q is not a column of the header", from)
		}
		seen[from] = true
		for j, cell := range rec[1:] {
			v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64)
			if err != nil {
				return nil, c.errorf(line, "read graph: column %d (%s): %q is not a number", j+2, cols[j], cell)
			}
			if v != 0 {
				g.calls[from] = append(g.calls[from], cols[j])
			}
		}
	}
	for _, n := range cols {
		if !seen[n] {
			return nil, c.errorf(1, "read graph: column %q has no row", n)
		}
	}
	return g, nil
}

// The first cells of a metrics.csv's four header rows.
var headerNames = [4]string{"microservice", "metric", "statistic", "unix_timestamp"}

// readMetrics reads a metrics.csv: three header rows (microservice,
// metric, statistic), the index name row (unix_timestamp), then one row
// per 5-minute step, "timestamp,value or empty,...".
func readMetrics(path string) (*frame, error) {
	c, closer, err := openCSV(path)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	defer closer.Close()
	f := &frame{path: path, idx: map[seriesKey]int{}}
	var head [3][]string
	width := 0
	for i, want := range headerNames {
		rec, line, err := c.next()
		if err == io.EOF {
			return nil, c.errorf(i+1, "read metrics: the file ends inside the header (%d rows of 4)", i)
		}
		if err != nil {
			return nil, fmt.Errorf("read metrics: %w", err)
		}
		if rec[0] != want {
			return nil, c.errorf(line, "read metrics: header row %d starts with %q, want %q", i+1, rec[0], want)
		}
		if i == 0 {
			width = len(rec)
		}
		if len(rec) != width {
			return nil, c.errorf(line, "read metrics: %d cells, the header has %d", len(rec), width)
		}
		if i < 3 {
			head[i] = slices.Clone(rec)
			continue
		}
		for j, cell := range rec[1:] {
			if cell != "" {
				return nil, c.errorf(line, "read metrics: the index name row has %q in column %d, want it empty", cell, j+2)
			}
		}
	}
	for j := 1; j < width; j++ {
		k := seriesKey{head[0][j], head[1][j], head[2][j]}
		if _, dup := f.idx[k]; dup {
			return nil, c.errorf(1, "read metrics: column %d repeats %s %s %s", j+1, k.node, k.metric, k.stat)
		}
		f.idx[k] = len(f.cols)
		f.cols = append(f.cols, k)
	}
	f.vals = make([][]float64, len(f.cols))
	if err := f.readRows(c, width); err != nil {
		return nil, err
	}
	return f, nil
}

// readRows reads the data rows of a metrics.csv.
func (f *frame) readRows(c *csvFile, width int) error {
	for {
		rec, line, err := c.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read metrics: %w", err)
		}
		if len(rec) != width {
			return c.errorf(line, "read metrics: %d cells, the header has %d", len(rec), width)
		}
		ts, err := strconv.ParseFloat(rec[0], 64)
		if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) {
			return c.errorf(line, "read metrics: timestamp %q is not a number", rec[0])
		}
		t := int64(math.Round(ts))
		if n := len(f.ts); n > 0 && t <= f.ts[n-1] {
			return c.errorf(line, "read metrics: timestamp %d is not after the previous row's %d", t, f.ts[n-1])
		}
		f.ts = append(f.ts, t)
		for j, cell := range rec[1:] {
			v := math.NaN()
			if cell != "" {
				if v, err = strconv.ParseFloat(cell, 64); err != nil {
					k := f.cols[j]
					return c.errorf(line, "read metrics: column %d (%s %s %s): %q is not a number", j+2, k.node, k.metric, k.stat, cell)
				}
			}
			f.vals[j] = append(f.vals[j], v)
		}
	}
}
