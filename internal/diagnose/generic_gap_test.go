package diagnose_test

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// gapScene writes a service graph user → front → {cart, rec, ads} with
// both sides' seconds (the servicegraph connector's client and server
// histograms), and per service a latency gauge labelled service, 30 s
// steps over 40 minutes. From minute 25 the calls named in delayed take
// extra seconds more at their caller than at their server: the network
// between them (a delay on the callee's interface), or the caller too
// busy to read the answers. front's own latency rises by what its calls
// wait. With clientSide false the graph has the server's seconds only.
func gapScene(t *testing.T, delayed map[string]float64, clientSide bool) *diagnose.Report {
	t.Helper()
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	end := start.Add(40 * time.Minute)
	st, app, add := sceneStore(t, end)
	edges := [][2]string{{"user", "front"}, {"front", "cart"}, {"front", "rec"}, {"front", "ads"}}
	own := map[string]float64{"front": 0.05, "cart": 0.004, "rec": 0.012, "ads": 0.008}
	hop := 0.002 // the network's and the proxies' share of a call
	total, srv, cli := map[[2]string]float64{}, map[[2]string]float64{}, map[[2]string]float64{}
	for i := 0; !start.Add(time.Duration(i) * 30 * time.Second).After(end); i++ {
		ts := start.Add(time.Duration(i) * 30 * time.Second)
		wiggle := 1 + 0.04*float64(i%5-2)
		lat := map[string]float64{}
		extra := map[string]float64{}
		for svc, l := range own {
			lat[svc] = l * wiggle
		}
		if i >= 50 {
			for svc, d := range delayed {
				extra[svc] = d
				lat["front"] += d
			}
		}
		for svc, l := range lat {
			add(labels.FromStrings("__name__", "app_latency_seconds", "service", svc), ts, l)
		}
		for _, e := range edges {
			reqs := 60 * wiggle
			total[e] += reqs
			srv[e] += reqs * lat[e[1]]
			cli[e] += reqs * (lat[e[1]] + hop*wiggle + extra[e[1]])
			ls := []string{"client", e[0], "server", e[1]}
			if e[0] == "user" {
				ls = append(ls, "connection_type", "virtual_node")
			}
			series := func(name string) labels.Labels {
				return labels.FromStrings(append([]string{"__name__", name}, ls...)...)
			}
			add(series("traces_service_graph_request_total"), ts, total[e])
			add(series("traces_service_graph_request_failed_total"), ts, 0)
			add(series("traces_service_graph_request_server_seconds_count"), ts, total[e])
			add(series("traces_service_graph_request_server_seconds_sum"), ts, srv[e])
			if clientSide {
				add(series("traces_service_graph_request_client_seconds_count"), ts, total[e])
				add(series("traces_service_graph_request_client_seconds_sum"), ts, cli[e])
			}
		}
	}
	require.NoError(t, app.Commit())
	e, err := diagnose.New(diagnose.Options{EntityLabel: "service", Window: 40 * time.Minute})
	require.NoError(t, err)
	rep, err := e.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	return rep
}

// TestGenericWalkGap: a delay on rec's network shows in none of rec's
// own series, only in its callers' waiting: front's latency rises, and
// front's calls to rec take longer at front than at rec. The walk goes
// from front down to rec by that gap, which ranks first with the gap as
// evidence; at half the delay too. Without the client side's seconds the
// graph cannot tell, and front stays first.
func TestGenericWalkGap(t *testing.T) {
	for _, d := range []float64{0.5, 0.25} {
		rep := gapScene(t, map[string]float64{"rec": d}, true)
		require.NotEmpty(t, rep.Causes)
		first := rep.Causes[0]
		require.Equal(t, diagnose.Entity{"service": "rec"}, first.Entity, brief(rep))
		var gap *diagnose.Evidence
		for i, ev := range first.Evidence {
			if ev.Signal == "traces_service_graph_request_client_seconds" {
				gap = &first.Evidence[i]
			}
		}
		require.NotNil(t, gap, "%+v", first.Evidence)
		require.Contains(t, gap.Summary, "the time is lost between them")
		require.Contains(t, gap.Query, `traces_service_graph_request_client_seconds_sum{server="rec"}`)
		require.Equal(t, 2, rankOf(rep, "front"), brief(rep))
		require.Contains(t, rep.Causes[1].Summary, "an effect of rec")
	}
	rep := gapScene(t, map[string]float64{"rec": 0.5}, false)
	require.NotEmpty(t, rep.Causes)
	require.Equal(t, diagnose.Entity{"service": "front"}, rep.Causes[0].Entity, brief(rep))
}

// TestGenericWalkGapCaller: when front waits longer on all of its
// callees alike (its own network, or its CPU too busy to read the
// answers), the gap is front's, not a callee's: the walk stays at front.
func TestGenericWalkGapCaller(t *testing.T) {
	rep := gapScene(t, map[string]float64{"cart": 0.2, "rec": 0.2, "ads": 0.2}, true)
	require.NotEmpty(t, rep.Causes)
	require.Equal(t, diagnose.Entity{"service": "front"}, rep.Causes[0].Entity, brief(rep))
}
