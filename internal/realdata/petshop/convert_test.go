package petshop

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

// A scenario of two nodes (one with a quote and a backslash in its name)
// and a third that only the graph names; the normal period is four rows,
// the issue two.
const (
	convGraph = `,PetSite,"Q""uote\DB",lonely
PetSite,0.0,1.0,0.0
"Q""uote\DB",0.0,0.0,0.0
lonely,0.0,0.0,0.0
`
	convNormal = `microservice,PetSite,"Q""uote\DB",PetSite,"Q""uote\DB",PetSite,"Q""uote\DB"
metric,latency,latency,requests,requests,availability,availability
statistic,Average,Average,Sum,Sum,Average,Average
unix_timestamp,,,,,,
1692692100.0,9,9,9,9,9,9
1692692400.0,9,9,9,9,9,9
1692692700.0,0.2,0.01,100.0,50.0,100.0,100.0
1692693000.0,0.3,,110.0,,100.0,
`
	convIssue = `microservice,PetSite,"Q""uote\DB",PetSite,"Q""uote\DB",PetSite,"Q""uote\DB"
metric,latency,latency,requests,requests,availability,availability
statistic,Average,Average,Sum,Sum,Average,Average
unix_timestamp,,,,,,
1681857120.0,0.4,0.02,120.0,60.0,90.0,80.0
1681857420.0,0.5,0.04,130.0,70.0,,50.0
`
	convTarget = `{"target": {"node": "PetSite", "metric": "latency", "agg": "Average", "timestamp": 1681857300}, "root_cause": {"node": "Q\"uote\\DB", "metric": null}}`
)

type sample struct {
	t int64 // seconds
	v float64
}

// TestConvertIssue: the converted file reads back (as `vigil diagnose
// --input` reads it) with the normal period's last history shifted to end
// one step before the issue, the node gauges, the failed requests and the
// service graph's counters.
func TestConvertIssue(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "graph.csv"), convGraph)
	writeFile(t, filepath.Join(dir, "noissue", "metrics.csv"), convNormal)
	writeFile(t, filepath.Join(dir, "test", "issue_0", "metrics.csv"), convIssue)
	writeFile(t, filepath.Join(dir, "test", "issue_0", "target.json"), convTarget)
	sc, err := loadScenario(dir)
	require.NoError(t, err)
	require.Len(t, sc.issues, 1)
	require.Equal(t, `Q"uote\DB`, sc.issues[0].target.RootCause.Node)

	var buf bytes.Buffer
	cv, err := convertIssue(&buf, sc, sc.issues[0], convertOptions{history: 10 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, int64(1681857720), cv.at, "the issue's last step + 1 step")
	require.Equal(t, 20*time.Minute, cv.window, "two history steps and the issue's two, from the first to at")
	require.Equal(t, 4, cv.steps)

	f, err := fileimport.Read("issue.om", &buf, fileimport.DefaultOptions(time.Unix(cv.at, 0)))
	require.NoError(t, err)
	require.Equal(t, fileimport.FormatOpenMetrics, f.Format)
	got := map[string][]sample{}
	require.NoError(t, f.Each(func(lset labels.Labels, ts int64, v float64) error {
		k := lset.Get(model.MetricNameLabel) + lset.DropReserved(func(n string) bool { return n == model.MetricNameLabel }).String()
		got[k] = append(got[k], sample{ts / 1000, v})
		return nil
	}))
	require.Equal(t, cv.series, len(got))

	h0, h1, i0, i1 := int64(1681856520), int64(1681856820), int64(1681857120), int64(1681857420)
	want := map[string][]sample{
		`petshop_latency_seconds{service="PetSite", statistic="Average"}`:     {{h0, 0.2}, {h1, 0.3}, {i0, 0.4}, {i1, 0.5}},
		`petshop_latency_seconds{service="Q\"uote\\DB", statistic="Average"}`: {{h0, 0.01}, {i0, 0.02}, {i1, 0.04}},
		`petshop_requests{service="PetSite"}`:                                 {{h0, 100}, {h1, 110}, {i0, 120}, {i1, 130}},
		`petshop_requests{service="Q\"uote\\DB"}`:                             {{h0, 50}, {i0, 60}, {i1, 70}},
		`petshop_availability_ratio{service="PetSite"}`:                       {{h0, 1}, {h1, 1}, {i0, 0.9}},
		`petshop_availability_ratio{service="Q\"uote\\DB"}`:                   {{h0, 1}, {i0, 0.8}, {i1, 0.5}},
		`petshop_failed_requests{service="PetSite"}`:                          {{h0, 0}, {h1, 0}, {i0, 12}},
		`petshop_failed_requests{service="Q\"uote\\DB"}`:                      {{h0, 0}, {i0, 12}, {i1, 35}},
		// The server's requests per step (1 where it has none), summed.
		`traces_service_graph_request_total{client="PetSite", server="Q\"uote\\DB"}`:        {{h0, 50}, {h1, 51}, {i0, 111}, {i1, 181}},
		`traces_service_graph_request_failed_total{client="PetSite", server="Q\"uote\\DB"}`: {{h0, 0}, {h1, 0}, {i0, 12}, {i1, 47}},
		// Latency × requests where the server has a latency.
		`traces_service_graph_request_server_seconds_sum{client="PetSite", server="Q\"uote\\DB"}`:               {{h0, 0.5}, {h1, 0.5}, {i0, 1.7}, {i1, 4.5}},
		`traces_service_graph_request_server_seconds_count{client="PetSite", server="Q\"uote\\DB"}`:             {{h0, 50}, {h1, 50}, {i0, 110}, {i1, 180}},
		`traces_service_graph_request_server_seconds_bucket{client="PetSite", le="+Inf", server="Q\"uote\\DB"}`: {{h0, 50}, {h1, 50}, {i0, 110}, {i1, 180}},
	}
	require.Len(t, got, len(want))
	for k, w := range want {
		g, ok := got[k]
		require.True(t, ok, "missing %s", k)
		require.Len(t, g, len(w), k)
		for i := range w {
			require.Equal(t, w[i].t, g[i].t, "%s [%d]", k, i)
			require.InDelta(t, w[i].v, g[i].v, 1e-9, "%s [%d]", k, i)
		}
	}

	t.Run("no graph, no failed", func(t *testing.T) {
		var buf bytes.Buffer
		_, err := convertIssue(&buf, sc, sc.issues[0], convertOptions{noGraph: true, noFailed: true})
		require.NoError(t, err)
		require.NotContains(t, buf.String(), "traces_service_graph")
		require.NotContains(t, buf.String(), "petshop_failed_requests")
		require.Contains(t, buf.String(), "petshop_latency_seconds")
	})
}
