package store_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

// TestMerged: an attached Vigil's store reads the backend and the embedded
// store as one — a series in both is one series with its samples
// deduplicated, the backend's selector goes with every read, writes go to
// the embedded store — and a backend that fails fails the query rather
// than answering with half the data.
func TestMerged(t *testing.T) {
	ts := base.Add(10 * time.Minute)
	at := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(ts.Add(d).UnixMilli())/1000) }
	api := &fakeAPI{matrix: `[` +
		`{"metric":{"__name__":"m","k":"shared"},"values":[[` + at(-2*time.Minute) + `,"1"],[` + at(-time.Minute) + `,"2"]]},` +
		`{"metric":{"__name__":"m","k":"remote"},"values":[[` + at(-time.Minute) + `,"5"]]}]`}
	cfg := store.DefaultRemoteConfig(serve(t, api.ServeHTTP))
	cfg.Selector = []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "cluster", "east")}
	remote := newRemote(t, cfg)
	local, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return ts }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, local.Close()) })
	m := store.NewMerged(local, remote)

	app := m.AppenderV2(t.Context())
	for _, s := range []struct {
		k string
		d time.Duration
		v float64
	}{{"shared", -time.Minute, 2}, {"shared", -30 * time.Second, 3}, {"local", -time.Minute, 9}} {
		_, err := app.Append(0, labels.FromStrings("__name__", "m", "k", s.k), 0, ts.Add(s.d).UnixMilli(), s.v, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())

	v, _, err := store.Query(t.Context(), m, "count_over_time(m[5m])", ts)
	require.NoError(t, err)
	got := map[string]float64{}
	for _, s := range v.(promql.Vector) {
		got[s.Metric.Get("k")] = s.F
	}
	require.Equal(t, map[string]float64{"shared": 3, "remote": 1, "local": 1}, got,
		"the shared series' sample at -1m counts once")
	api.mu.Lock()
	require.Equal(t, `{__name__="m",cluster="east"}[300000ms]`, api.requests[0].Get("query"), "the selector goes with the read")
	api.mu.Unlock()

	// The probe, and a backend that stops answering.
	require.Error(t, m.Probe(t.Context()), "a matrix is no answer to vector(1)")
	down := store.DefaultRemoteConfig(serve(t, answer(http.StatusServiceUnavailable, "text/html", "<html>down</html>")))
	md := store.NewMerged(local, newRemote(t, down))
	require.ErrorContains(t, md.Probe(t.Context()), "not Prometheus API JSON")
	_, _, err = store.Query(t.Context(), md, "count_over_time(m[5m])", ts)
	require.Error(t, err, "half the data is no answer")
	ok := store.NewMerged(local, newRemote(t, store.DefaultRemoteConfig(serve(t, answer(http.StatusOK, "application/json",
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`)))))
	require.NoError(t, ok.Probe(t.Context()))
}
