package petshop

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The synthetic data set: a PetShop-like call graph (a front end calling
// services that call tables, queues and outside APIs, with PetShop's kind
// of names: spaces, colons, slashes, @), a normal period of 30 hours with
// a daily traffic swing, and issues with one injected fault each, written
// in exactly the data set's layout.

// synthFront is the front end: every issue's target.
const synthFront = "PetSite"

// synthNode is a node of the synthetic graph: its own latency (seconds,
// without its calls) and what each of its calls does.
type synthNode struct {
	name string
	lat  float64
	// calls are the nodes it calls, each with the requests it makes per
	// request it serves.
	calls []synthCall
}

type synthCall struct {
	to     string
	fanout float64
}

// synthNodes lists callers before their callees.
var synthNodes = []synthNode{
	{name: synthFront, lat: 0.05, calls: []synthCall{
		{"PetSearch_AWS::ECS::Fargate", 1}, {"petlistadoptions_AWS::ECS::Fargate", 0.6},
		{"payforadoption_AWS::ECS::Container", 0.3}, {"Evidently_AWS::Evidently", 1}}},
	{name: "PetSearch_AWS::ECS::Fargate", lat: 0.03, calls: []synthCall{
		{"petInfo_AWS::DynamoDB::Table", 1.5}, {"S3_AWS::S3", 0.8}, {"SSM_AWS::SSM", 0.2}}},
	{name: "petlistadoptions_AWS::ECS::Fargate", lat: 0.04, calls: []synthCall{
		{"PGSQL Query_remote", 1}, {"servi-lista.us-west-2.elb.amazonaws.com_remote", 0.5}}},
	{name: "payforadoption_AWS::ECS::Container", lat: 0.03, calls: []synthCall{
		{"adoptions@services-database.us-west-2.rds.amazonaws.com_Database::SQL", 1},
		{"https://sqs.us-west-2.amazonaws.com/Services-sqspetadoption_AWS::SQS::Queue", 1},
		{"petInfo_AWS::DynamoDB::Table", 0.5}}},
	{name: "https://sqs.us-west-2.amazonaws.com/Services-sqspetadoption_AWS::SQS::Queue", lat: 0.012, calls: []synthCall{
		{"lambdastatusupdater_AWS::Lambda::Function", 1}}},
	{name: "Evidently_AWS::Evidently", lat: 0.02},
	{name: "petInfo_AWS::DynamoDB::Table", lat: 0.008},
	{name: "S3_AWS::S3", lat: 0.02},
	{name: "SSM_AWS::SSM", lat: 0.015},
	{name: "PGSQL Query_remote", lat: 0.01},
	{name: "servi-lista.us-west-2.elb.amazonaws.com_remote", lat: 0.035},
	{name: "adoptions@services-database.us-west-2.rds.amazonaws.com_Database::SQL", lat: 0.009},
	{name: "lambdastatusupdater_AWS::Lambda::Function", lat: 0.1},
}

// synthFault is an injected fault: a latency factor on a node's own
// latency, a share of its requests failing, or its requests multiplied
// (an overload, which slows it too).
type synthFault struct {
	kind   string // latency, availability, overload
	node   string
	factor float64
}

// synthIssue is one issue of the synthetic set.
type synthIssue struct {
	split string
	fault synthFault
}

// synthIssues are the synthetic set's issues: latency on a leaf table
// (which reaches the front end through its callers, smaller), failures on
// a mid-tier service, and overloads.
var synthIssues = []synthIssue{
	{"train", synthFault{"latency", "petInfo_AWS::DynamoDB::Table", 10}},
	{"train", synthFault{"availability", "PetSearch_AWS::ECS::Fargate", 0.3}},
	{"train", synthFault{"overload", "petInfo_AWS::DynamoDB::Table", 5}},
	{"train", synthFault{"latency", "PGSQL Query_remote", 8}},
	{"test", synthFault{"latency", "adoptions@services-database.us-west-2.rds.amazonaws.com_Database::SQL", 10}},
	{"test", synthFault{"availability", "payforadoption_AWS::ECS::Container", 0.25}},
	{"test", synthFault{"overload", "petlistadoptions_AWS::ECS::Fargate", 4}},
	{"test", synthFault{"latency", "https://sqs.us-west-2.amazonaws.com/Services-sqspetadoption_AWS::SQS::Queue", 10}},
}

const (
	synthNormalStart = 1692634500 // the normal period: 30 hours from here
	synthNormalRows  = 360
	synthIssueStart  = 1681857120 // the first issue's window; the others follow
	synthIssueRows   = 6          // the fault starts at the third row
	synthFaultRow    = 2
)

// synthStats are the columns of a metrics.csv, block by block, as the
// data set orders them.
var synthStats = []struct{ metric, stat string }{
	{"latency", "Average"}, {"latency", "p90"}, {"latency", "p50"}, {"latency", "p95"}, {"latency", "p99"},
	{"requests", "Sum"}, {"availability", "Average"},
}

// synthGen draws the synthetic telemetry.
type synthGen struct {
	rng *rand.Rand
}

// row draws one 5-minute row at Unix time ts, with fault f (nil: none).
func (g *synthGen) row(ts int64, f *synthFault) map[seriesKey]float64 {
	day := 2 * math.Pi * float64(ts%86400) / 86400
	reqs := map[string]float64{synthFront: 300 * (1 + 0.2*math.Sin(day)) * (1 + 0.05*g.rng.NormFloat64())}
	for _, n := range synthNodes { // callers first
		if f != nil && f.kind == "overload" && f.node == n.name {
			reqs[n.name] *= f.factor
		}
		for _, c := range n.calls {
			reqs[c.to] += reqs[n.name] * c.fanout * (1 + 0.03*g.rng.NormFloat64())
		}
	}
	lat, errs := map[string]float64{}, map[string]float64{}
	for i := len(synthNodes) - 1; i >= 0; i-- { // callees first
		n := synthNodes[i]
		own, e := n.lat*(1+0.08*g.rng.NormFloat64()), 0.0
		if g.rng.Float64() < 0.03 {
			e = 0.01 // a rare failed request
		}
		if f != nil && f.node == n.name {
			switch f.kind {
			case "latency":
				own *= f.factor
			case "overload":
				own *= 1 + 0.5*(f.factor-1)
			case "availability":
				e = f.factor
			}
		}
		for _, c := range n.calls {
			own += 0.5 * lat[c.to]
			e += 0.6 * errs[c.to]
		}
		lat[n.name], errs[n.name] = own, min(1, e)
	}
	out := map[seriesKey]float64{}
	for _, n := range synthNodes {
		avg := lat[n.name]
		for _, s := range []struct {
			stat string
			mul  float64
		}{{"Average", 1}, {"p50", 0.8}, {"p90", 1.7}, {"p95", 2.1}, {"p99", 3.2}} {
			out[seriesKey{n.name, "latency", s.stat}] = avg * s.mul * (1 + 0.04*g.rng.NormFloat64())
		}
		out[seriesKey{n.name, "requests", "Sum"}] = math.Round(reqs[n.name])
		out[seriesKey{n.name, "availability", "Average"}] = 100 * (1 - errs[n.name])
		if n.name == "SSM_AWS::SSM" && g.rng.Float64() < 0.3 {
			// A sparse node: some steps have no latency at all.
			for _, s := range []string{"Average", "p50", "p90", "p95", "p99"} {
				out[seriesKey{n.name, "latency", s}] = math.NaN()
			}
		}
	}
	return out
}

// writeSynthetic writes the synthetic set's one scenario under dir (dir
// is the data set: dir/<scenario>/...) and returns the scenario's path.
func writeSynthetic(t *testing.T, dir string, seed uint64, issues []synthIssue) string {
	t.Helper()
	sc := filepath.Join(dir, "low_traffic")
	g := &synthGen{rng: rand.New(rand.NewPCG(seed, 1))}
	writeSynthGraph(t, filepath.Join(sc, "graph.csv"))
	rows := make([]map[seriesKey]float64, 0, synthNormalRows)
	var ts []int64
	for i := range synthNormalRows {
		ts = append(ts, synthNormalStart+int64(i)*300)
		rows = append(rows, g.row(ts[i], nil))
	}
	writeSynthMetrics(t, filepath.Join(sc, "noissue", "metrics.csv"), ts, rows)
	count := map[string]int{}
	for k, is := range issues {
		// Each issue at another time of day, as the data set's are.
		first := int64(synthIssueStart + k*(86400*3/8/300)*300)
		ts, rows = ts[:0], rows[:0]
		for i := range synthIssueRows {
			ts = append(ts, first+int64(i)*300)
			var f *synthFault
			if i >= synthFaultRow {
				f = &is.fault
			}
			rows = append(rows, g.row(ts[i], f))
		}
		idir := filepath.Join(sc, is.split, fmt.Sprintf("issue_%d", count[is.split]))
		count[is.split]++
		writeSynthMetrics(t, filepath.Join(idir, "metrics.csv"), ts, rows)
		metric := "latency"
		if is.fault.kind == "availability" {
			metric = "availability"
		}
		writeSynthTarget(t, filepath.Join(idir, "target.json"), metric, first+485, is.fault)
	}
	return sc
}

// writeSynthGraph writes the adjacency matrix: a 1.0 at (row R, column C)
// when R calls C.
func writeSynthGraph(t *testing.T, path string) {
	t.Helper()
	names := make([]string, len(synthNodes))
	for i, n := range synthNodes {
		names[i] = n.name
	}
	recs := [][]string{append([]string{""}, names...)}
	for _, n := range synthNodes {
		rec := []string{n.name}
		for _, c := range names {
			v := "0.0"
			for _, call := range n.calls {
				if call.to == c {
					v = "1.0"
				}
			}
			rec = append(rec, v)
		}
		recs = append(recs, rec)
	}
	writeCSV(t, path, recs)
}

// writeSynthMetrics writes a metrics.csv: the three header rows, the
// index name row, and the rows (empty cells for NaN).
func writeSynthMetrics(t *testing.T, path string, ts []int64, rows []map[seriesKey]float64) {
	t.Helper()
	head := [3][]string{{"microservice"}, {"metric"}, {"statistic"}}
	var cols []seriesKey
	for _, s := range synthStats {
		for _, n := range synthNodes {
			head[0] = append(head[0], n.name)
			head[1] = append(head[1], s.metric)
			head[2] = append(head[2], s.stat)
			cols = append(cols, seriesKey{n.name, s.metric, s.stat})
		}
	}
	recs := [][]string{head[0], head[1], head[2], append([]string{"unix_timestamp"}, make([]string, len(cols))...)}
	for i, row := range rows {
		rec := []string{strconv.FormatInt(ts[i], 10) + ".0"}
		for _, k := range cols {
			rec = append(rec, pandasFloat(row[k]))
		}
		recs = append(recs, rec)
	}
	writeCSV(t, path, recs)
}

// pandasFloat writes a value as pandas does: empty for NaN, "100.0" for
// whole numbers.
func pandasFloat(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		s = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return s
}

func writeSynthTarget(t *testing.T, path, metric string, ts int64, f synthFault) {
	t.Helper()
	doc := map[string]any{
		"target":     map[string]any{"node": synthFront, "metric": metric, "agg": "Average", "timestamp": ts},
		"root_cause": map[string]any{"node": f.node, "metric": nil},
		"metadata":   map[string]any{"synthetic": fmt.Sprintf("%s x%g on %s", f.kind, f.factor, f.node)},
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func writeCSV(t *testing.T, path string, recs [][]string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	fh, err := os.Create(path)
	require.NoError(t, err)
	w := csv.NewWriter(fh)
	require.NoError(t, w.WriteAll(recs))
	require.NoError(t, fh.Close())
}
