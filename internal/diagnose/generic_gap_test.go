package diagnose_test

import (
	"fmt"
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
// The scene's options change it further (gapOptions).
func gapScene(t *testing.T, delayed map[string]float64, clientSide bool, opts ...gapOption) *diagnose.Report {
	t.Helper()
	var o gapOptions
	for _, f := range opts {
		f(&o)
	}
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
			lat["ads"] *= 1 + o.adsRise
		}
		for svc, l := range lat {
			if svc == "front" && o.frontFlat {
				l = own[svc] * wiggle // front's own series does not show its wait
			}
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
// front's calls to rec take longer at front than at rec. rec ranks first
// by that gap (its network's series, networkGapSeries, or the walk from
// front), with the gap as evidence; at half the delay too. Without the client side's seconds the
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
		require.Greater(t, rankOf(rep, "front"), 1, brief(rep))
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

// gapOptions change gapScene: frontFlat keeps front's own latency series
// flat (it times its own work only, not its waits), and adsRise makes ads'
// own latency rise by that share from minute 25, an anomaly of its own.
type gapOptions struct {
	frontFlat bool
	adsRise   float64
}

type gapOption func(*gapOptions)

func frontFlat() gapOption { return func(o *gapOptions) { o.frontFlat = true } }

func adsRise(r float64) gapOption { return func(o *gapOptions) { o.adsRise = r } }

// TestGenericNetworkGap: a delay on rec's network, while front's own
// series shows nothing of its wait and ads' latency rises by a third, an
// anomaly of its own that ranks ads first on the services' own series (so
// no walk starts at front). The time front's calls to rec wait beyond
// rec's own is rec's series: rec ranks first with the gap as its evidence,
// at full and at half the delay.
func TestGenericNetworkGap(t *testing.T) {
	rep := gapScene(t, nil, true, frontFlat(), adsRise(0.35))
	require.NotEmpty(t, rep.Causes)
	require.Equal(t, diagnose.Entity{"service": "ads"}, rep.Causes[0].Entity, "the decoy alone ranks first: %s", brief(rep))
	for _, d := range []float64{0.5, 0.25} {
		rep := gapScene(t, map[string]float64{"rec": d}, true, frontFlat(), adsRise(0.35))
		require.NotEmpty(t, rep.Causes)
		first := rep.Causes[0]
		require.Equal(t, diagnose.Entity{"service": "rec"}, first.Entity, brief(rep))
		require.Equal(t, "traces_service_graph_request_client_seconds", first.Evidence[0].Signal, "%+v", first.Evidence)
		require.Contains(t, first.Evidence[0].Summary, fmt.Sprintf("calls to rec wait %s at their callers beyond rec's own time", map[float64]string{0.5: "500ms", 0.25: "250ms"}[d]))
		require.Contains(t, first.Summary, "its callers wait on its network")
		require.Greater(t, rankOf(rep, "ads"), 1, brief(rep))
	}
}

// TestGenericNetworkGapDecoys: waits that are no callee's network move no
// callee. front waiting longer on all its callees alike is front's (its
// own network, or a CPU too busy to read the answers); with ads' own rise
// as well, ads still ranks first, not a callee of front. And a caller with
// a single callee cannot tell its own wait from its callee's: the user's
// calls to front are never front's network.
func TestGenericNetworkGapDecoys(t *testing.T) {
	rep := gapScene(t, map[string]float64{"cart": 0.2, "rec": 0.2, "ads": 0.2}, true, frontFlat(), adsRise(0.35))
	require.NotEmpty(t, rep.Causes)
	require.Equal(t, diagnose.Entity{"service": "ads"}, rep.Causes[0].Entity, brief(rep))
	for _, c := range rep.Causes {
		for _, ev := range c.Evidence {
			require.NotEqual(t, "traces_service_graph_request_client_seconds", ev.Signal, "a wait on every callee is evidence of none: %s", brief(rep))
		}
	}
	rep = gapScene(t, map[string]float64{"front": 0.5}, true, frontFlat(), adsRise(0.35))
	require.NotEmpty(t, rep.Causes)
	require.Equal(t, diagnose.Entity{"service": "ads"}, rep.Causes[0].Entity, "the user's wait on front is no evidence: %s", brief(rep))
}
