package petshop

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInTopK(t *testing.T) {
	f := func(ranked []string, truth string, k int, want bool) {
		t.Helper()
		require.Equal(t, want, result{truth: truth, ranked: ranked}.inTopK(k), "%q in the first %d of %q", truth, k, ranked)
	}
	abc := []string{"a", "b", "c", "d"}
	f(abc, "a", 1, true)
	f(abc, "b", 1, false)
	f(abc, "c", 3, true)
	f(abc, "d", 3, false)
	f(abc, "x", 3, false)
	f(nil, "a", 1, false)
	f([]string{"a"}, "a", 3, true)
}

// TestRankedServices: causes in rank order whatever their order in the
// JSON, each service once, causes without the label skipped; the walk is
// seen by its evidence on the first cause.
func TestRankedServices(t *testing.T) {
	var rep diagnoseReport
	require.NoError(t, json.Unmarshal([]byte(`{"causes": [
		{"rank": 3, "entity": {"service": "c"}},
		{"rank": 1, "entity": {"service": "a"}, "evidence": [{"signal": "petshop_requests"}, {"signal": "traces_service_graph_request_total"}]},
		{"rank": 2, "entity": {"node": "gpu-node-1"}},
		{"rank": 4, "entity": {"service": "a"}},
		{"rank": 5, "entity": {"service": "b"}, "evidence": [{"signal": "traces_service_graph_request_total"}]}
	]}`), &rep))
	require.Equal(t, []string{"a", "c", "b"}, rankedServices(&rep))
	require.True(t, walked(&rep))
	rep.Causes[1].Evidence = rep.Causes[1].Evidence[:1]
	require.False(t, walked(&rep), "only the first cause's evidence counts")
}

func TestTable(t *testing.T) {
	results := []result{
		{scenario: "low", split: "train", truth: "a", ranked: []string{"a", "b"}, walked: true, naive: []string{"b", "c", "d", "a"}},
		{scenario: "low", split: "train", truth: "b", ranked: []string{"a", "b"}, naive: []string{"b"}},
		{scenario: "low", split: "test", truth: "c", ranked: nil},
		{scenario: "high", split: "test", truth: "d", ranked: []string{"x", "y", "z", "d"}},
	}
	ts := tallies(results)
	require.Equal(t, []tally{
		{scenario: "low", split: "train", n: 2, top1: 1, top3: 2, naive1: 1, naive3: 1, walked: 1},
		{scenario: "low", split: "test", n: 1, none: 1},
		{scenario: "high", split: "test", n: 1},
		{scenario: "low", split: "all", n: 3, top1: 1, top3: 2, naive1: 1, naive3: 1, none: 1, walked: 1},
		{scenario: "high", split: "all", n: 1},
		{scenario: "all", split: "all", n: 4, top1: 1, top3: 2, naive1: 1, naive3: 1, none: 1, walked: 1},
	}, ts)
	var b strings.Builder
	require.NoError(t, writeTable(&b, results))
	require.Contains(t, b.String(), "top-1")
	lines := strings.Split(b.String(), "\n")
	require.Equal(t, []string{"low", "train", "2", "50%", "100%", "50%", "50%", "0%", "50%", "0.0"}, strings.Fields(lines[1]))
	require.Contains(t, b.String(), "57–83%")
	b.Reset()
	require.NoError(t, writeCases(&b, results))
	require.Contains(t, b.String(), `low/train/ top1 walked truth="a" vigil=["a" "b"] naive=["b" "c" "d"]`)
	require.Contains(t, b.String(), `high/test/ miss truth="d" vigil=["x" "y" "z"] naive=[]`)
}

func TestNaiveRank(t *testing.T) {
	lat := func(node string) seriesKey { return seriesKey{node: node, metric: "latency", stat: "Average"} }
	fr := func(ts []int64, cols map[seriesKey][]float64) *frame {
		f := &frame{ts: ts, idx: map[seriesKey]int{}}
		for _, k := range slices.SortedFunc(maps.Keys(cols), func(a, b seriesKey) int { return strings.Compare(a.node, b.node) }) {
			f.idx[k] = len(f.cols)
			f.cols = append(f.cols, k)
			f.vals = append(f.vals, cols[k])
		}
		return f
	}
	nan := math.NaN()
	is := &issue{metrics: fr([]int64{1000, 1300, 1600}, map[seriesKey][]float64{
		lat("a"): {1, 2, 3},     // ×3 over its normal 1
		lat("b"): {10, 50, 20},  // ×5 over its normal 10
		lat("c"): {nan, nan, 9}, // no normal: not ranked
		{node: "d", metric: "requests", stat: "Sum"}: {1, 100, 100},
	})}
	is.target.Target.Timestamp = 1300
	normal := fr([]int64{100, 400, 700}, map[seriesKey][]float64{lat("a"): {1, 1, 1}, lat("b"): {10, 10, 10}})
	require.Equal(t, []string{"b", "a"}, naiveRank(&scenario{normal: normal}, is, 3600))
	// Without a normal period the rows before the noticed time are the
	// reference: a ×3, b ×5, c none.
	empty := &frame{idx: map[seriesKey]int{}}
	require.Equal(t, []string{"b", "a"}, naiveRank(&scenario{normal: empty}, is, 3600))
}
