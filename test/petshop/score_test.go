package petshop

import (
	"encoding/json"
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
		{scenario: "low", split: "train", truth: "a", ranked: []string{"a", "b"}, walked: true},
		{scenario: "low", split: "train", truth: "b", ranked: []string{"a", "b"}},
		{scenario: "low", split: "test", truth: "c", ranked: nil},
		{scenario: "high", split: "test", truth: "d", ranked: []string{"x", "y", "z", "d"}},
	}
	ts := tallies(results)
	require.Equal(t, []tally{
		{scenario: "low", split: "train", n: 2, top1: 1, top3: 2, walked: 1},
		{scenario: "low", split: "test", n: 1, none: 1},
		{scenario: "high", split: "test", n: 1},
		{scenario: "low", split: "all", n: 3, top1: 1, top3: 2, none: 1, walked: 1},
		{scenario: "high", split: "all", n: 1},
		{scenario: "all", split: "all", n: 4, top1: 1, top3: 2, none: 1, walked: 1},
	}, ts)
	var b strings.Builder
	require.NoError(t, writeTable(&b, results))
	require.Contains(t, b.String(), "top-1")
	lines := strings.Split(b.String(), "\n")
	require.Equal(t, []string{"low", "train", "2", "50%", "100%", "0%", "50%", "0.0"}, strings.Fields(lines[1]))
	require.Contains(t, b.String(), "57–83%")
	b.Reset()
	require.NoError(t, writeCases(&b, results))
	require.Contains(t, b.String(), `low/train/ top1 walked truth="a" vigil=["a" "b"]`)
	require.Contains(t, b.String(), `high/test/ miss truth="d" vigil=["x" "y" "z"]`)
}
