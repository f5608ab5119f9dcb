package diagnose_test

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/store"
)

// sceneStore opens an embedded store whose clock stands at end, and an
// appender into it with add, a sample each call (commit app when done).
func sceneStore(t *testing.T, end time.Time) (*store.Embedded, storage.AppenderV2, func(labels.Labels, time.Time, float64)) {
	t.Helper()
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	app := st.AppenderV2(t.Context())
	return st, app, func(lset labels.Labels, ts time.Time, v float64) {
		_, err := app.Append(0, lset, 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
}

// loadGraph writes a service graph user → front → list → db, and per
// service a requests gauge and a latency gauge labelled service, with
// 30 s steps over 40 minutes. From minute 25, list is sent factor times
// its requests (db, which it calls, gets them too, and slows down under
// them: its latency moves most of all).
func loadGraph(t *testing.T, factor float64) (*store.Embedded, time.Time) {
	t.Helper()
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	end := start.Add(40 * time.Minute)
	st, app, add := sceneStore(t, end)
	edges := [][2]string{{"user", "front"}, {"front", "list"}, {"list", "db"}}
	total := map[[2]string]float64{}
	sum := map[[2]string]float64{}
	for i := 0; !start.Add(time.Duration(i) * 30 * time.Second).After(end); i++ {
		ts := start.Add(time.Duration(i) * 30 * time.Second)
		wiggle := 1 + 0.03*float64(i%5-2)
		reqs := map[string]float64{"front": 100 * wiggle, "list": 50 * wiggle, "db": 50 * wiggle}
		lat := map[string]float64{"front": 0.2, "list": 0.1, "db": 0.02 * wiggle}
		if i >= 50 {
			reqs["list"] *= factor
			reqs["db"] *= factor
			lat["db"] *= 5 * factor
		}
		for svc, r := range reqs {
			add(labels.FromStrings("__name__", "app_requests", "service", svc), ts, r)
			add(labels.FromStrings("__name__", "app_latency_seconds", "service", svc), ts, lat[svc])
		}
		for _, e := range edges {
			total[e] += reqs[e[1]]
			sum[e] += reqs[e[1]] * lat[e[1]]
			ls := []string{"client", e[0], "server", e[1]}
			if e[0] == "user" {
				ls = append(ls, "connection_type", "virtual_node")
			}
			add(labels.FromStrings(append([]string{"__name__", "traces_service_graph_request_total"}, ls...)...), ts, total[e])
			add(labels.FromStrings(append([]string{"__name__", "traces_service_graph_request_failed_total"}, ls...)...), ts, 0)
			add(labels.FromStrings(append([]string{"__name__", "traces_service_graph_request_server_seconds_count"}, ls...)...), ts, total[e])
			add(labels.FromStrings(append([]string{"__name__", "traces_service_graph_request_server_seconds_sum"}, ls...)...), ts, sum[e])
		}
	}
	require.NoError(t, app.Commit())
	return st, end
}

// TestGenericLoadClimb: the database a service overloads moves most and
// ranks first on its own; the walk climbs the load up to the service that
// receives the extra requests, whose callers' requests did not rise.
func TestGenericLoadClimb(t *testing.T) {
	st, end := loadGraph(t, 4)
	eng, err := diagnose.New(diagnose.Options{EntityLabel: "service"})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Causes, brief(rep))
	c := rep.Causes[0]
	require.Equal(t, diagnose.Entity{"service": "list"}, c.Entity, brief(rep))
	require.Contains(t, c.Summary, "list overloaded, and db with it")
	var db diagnose.Cause
	for _, o := range rep.Causes {
		if o.Entity["service"] == "db" {
			db = o
		}
	}
	require.Less(t, db.Confidence, 0.5*c.Confidence, "db's anomaly is list's load")

	// Requests 20% up is traffic, not an overload: no climb.
	st, end = loadGraph(t, 1.2)
	rep, err = eng.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	for _, o := range rep.Causes {
		require.NotContains(t, o.Summary, "overloaded", brief(rep))
	}
}
