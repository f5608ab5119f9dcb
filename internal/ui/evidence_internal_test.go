package ui

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestPeerQueryOf(t *testing.T) {
	entity := map[string]string{"node": "gpu-node-06", "gpu": "3"}
	job := []evaluated{{Metric: labels.FromStrings("namespace", "ml-train")}}
	f := func(query string, faulty []evaluated, want string, removed ...string) {
		t.Helper()
		got, rm, _ := peerQueryOf(query, entity, faulty)
		require.Equal(t, want, got, query)
		var names []string
		for _, l := range rm {
			names = append(names, l.Name+"="+l.Value)
		}
		require.Equal(t, removed, names, query)
	}
	f(`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{Hostname="gpu-node-06"}`, job,
		`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{namespace="ml-train"}`, "Hostname=gpu-node-06")
	f(`changes(x{Hostname="gpu-node-06", gpu="3"}[1h])`, nil, `changes(x[1h])`, "Hostname=gpu-node-06", "gpu=3")
	f(`increase(y{node="gpu-node-06", xid="74"}[5m])`, job, `increase(y{namespace="ml-train",xid="74"}[5m])`, "node=gpu-node-06")
	f(`rate(a{node="gpu-node-06",namespace="x"}[5m]) / rate(b{node="gpu-node-06"}[5m])`, job,
		`rate(a{namespace="x"}[5m]) / rate(b{namespace="ml-train"}[5m])`, "node=gpu-node-06")
	f(`up{job="dcgm"}`, job, "")         // nothing names the entity
	f(`node=~"gpu-node-06"`, job, "")    // does not parse as a query
	f(`x{node!="gpu-node-06"}`, job, "") // only equality names it
}

func TestPeerBand(t *testing.T) {
	nan := math.NaN()
	b := peerBand([][]float64{{1, nan, 5}, {2, nan, nan}, {3, nan, 7}, {4, nan, nan}, {5, nan, nan}}, 3)
	require.Equal(t, 5, b.Peers)
	require.Equal(t, []float64{1, 2, 3, 4, 5}, []float64{b.Min[0], b.Q1[0], b.Med[0], b.Q3[0], b.Max[0]})
	require.True(t, math.IsNaN(b.Med[1]), "a step with no peer has no band")
	require.Equal(t, 6.0, b.Med[2])
}

func TestParseRange(t *testing.T) {
	now := time.Date(2026, 11, 12, 3, 0, 0, 0, time.UTC)
	f := func(from, to string, want timeRange, wantErr string) {
		t.Helper()
		got, err := parseRange(from, to, now)
		if wantErr != "" {
			require.ErrorContains(t, err, wantErr)
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 11, 12, h, m, 0, 0, time.UTC) }
	f("", "", timeRange{}, "")
	f("2026-11-12T02:00:00Z", "2026-11-12T02:30", timeRange{From: at(2, 0), To: at(2, 30)}, "")
	f("2026-11-12T04:00:00+02:00", "", timeRange{From: at(2, 0)}, "")
	f("1794448800", "", timeRange{From: at(2, 0)}, "")
	f("1h", "10m", timeRange{From: at(2, 0), To: at(2, 50)}, "")
	f("soon", "", timeRange{}, `from="soon": not a time`)
	f("", "-1h", timeRange{}, `to="-1h": not a time`)
	f("2026-11-12T02:00:00Z", "2026-11-12T02:00:00Z", timeRange{}, "is not before to")
	f("40d", "", timeRange{}, `from="40d": not a time`) // Go durations have no days
	f("2026-09-01T00:00:00Z", "2026-11-01T00:00:00Z", timeRange{}, "longer than the 31 days")
}

func TestWindow(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 11, 12, h, m, 0, 0, time.UTC) }
	def := timeRange{From: at(2, 0), To: at(3, 0)}
	require.Equal(t, def, timeRange{}.window(def))
	require.Equal(t, timeRange{From: at(2, 30), To: at(3, 0)}, timeRange{From: at(2, 30)}.window(def))
	require.Equal(t, timeRange{From: at(4, 0), To: at(5, 0)}, timeRange{From: at(4, 0)}.window(def), "a from past the default's end keeps the width")
	require.Equal(t, timeRange{From: at(0, 0), To: at(1, 0)}, timeRange{To: at(1, 0)}.window(def))
}

func TestDrawPlot(t *testing.T) {
	from := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	d := plotData{From: from, To: from.Add(4 * time.Minute), Step: time.Minute, Onset: from.Add(2 * time.Minute),
		Faulty: []series{{Name: "gpu=3", Values: []float64{10, 10, math.NaN(), 1, 1}}},
		Band:   peerBand([][]float64{{9, 9, 9, 9, 9}, {11, 11, 11, 11, 11}}, 5)}
	v := drawPlot(d)
	require.Len(t, v.Lines, 1)
	require.Equal(t, 2, countRune(v.Lines[0].D, 'M'), "the gap breaks the line: %s", v.Lines[0].D)
	require.Equal(t, "1", v.Lines[0].Last)
	require.NotEmpty(t, v.Range)
	require.Equal(t, 1, countRune(v.Range, 'Z'))
	require.NotNil(t, v.Onset)
	require.InDelta(t, (v.Left+v.Right)/2, v.Onset.Pos, 0.1)
	require.Equal(t, "0", v.YTicks[0].Label, "counts read from zero")
	require.True(t, drawPlot(plotData{From: from, To: from.Add(time.Minute), Step: time.Minute}).Empty)
}

func countRune(s string, r rune) int {
	n := 0
	for _, c := range s {
		if c == r {
			n++
		}
	}
	return n
}

func TestFmtNum(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 0.25: "0.25", 1500: "1.5k", 2.5e6: "2.5M", -3e9: "-3G", 123456: "123k"} {
		require.Equal(t, want, fmtNum(in), in)
	}
}

func TestNaturalCompare(t *testing.T) {
	names := []string{"gpu=10", "gpu=2", "gpu=1 x", "gpu=1", "node=b", "node=a"}
	slices.SortFunc(names, naturalCompare)
	require.Equal(t, []string{"gpu=1", "gpu=1 x", "gpu=2", "gpu=10", "node=a", "node=b"}, names)
}

// TestFmtBurn: a burn rate reads as a multiple of the budget's pace, with
// no digits below a hundredth.
func TestFmtBurn(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{0, "0×"}, {0.000286, "< 0.01×"}, {0.02, "0.02×"}, {1, "1×"}, {14.4, "14.4×"}, {math.NaN(), "–"}} {
		require.Equal(t, tc.want, fmtBurn(tc.x), "%v", tc.x)
	}
}
