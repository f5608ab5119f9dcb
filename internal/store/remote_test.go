package store_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/store"
)

func newRemote(t *testing.T, cfg store.RemoteConfig) *store.Remote {
	t.Helper()
	r, err := store.NewRemote(cfg, func() time.Time { return base }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// serve starts an HTTP server on 127.0.0.1 that answers every request with h.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestRemoteReadOnly(t *testing.T) {
	r := newRemote(t, store.DefaultRemoteConfig("http://127.0.0.1:1"))
	app := r.AppenderV2(t.Context())
	_, err := app.Append(0, labels.FromStrings("__name__", "up"), 0, base.UnixMilli(), 1, nil, nil, storage.AOptions{})
	require.ErrorIs(t, err, store.ErrReadOnly)
	require.NoError(t, app.Rollback())
	require.Equal(t, base, r.Now())
}

func TestRemoteErrors(t *testing.T) {
	big := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up"},"values":[` +
		strings.Repeat(`[1,"1"],`, 100) + `[2,"1"]]}]}}`
	tests := []struct {
		name    string
		handler http.HandlerFunc // nil: nothing listens
		mod     func(*store.RemoteConfig)
		want    []string
	}{
		{name: "unreachable", want: []string{"query http://127.0.0.1:", "/api/v1/query", "connection refused"}},
		{name: "HTML", handler: answer(200, "text/html", "<!doctype html><html><body>Grafana</body></html>"),
			want: []string{"/api/v1/query (HTTP 200) is not Prometheus API JSON", `"<!doctype html>`}},
		{name: "HTML error page", handler: answer(502, "text/html", "<html>Bad Gateway</html>"),
			want: []string{"(HTTP 502) is not Prometheus API JSON"}},
		{name: "JSON that is not the API", handler: answer(200, "application/json", `{"hello":"world"}`),
			want: []string{"(HTTP 200) is not Prometheus API JSON", `{\"hello\":\"world\"}`}},
		{name: "error envelope", handler: answer(400, "application/json", `{"status":"error","errorType":"bad_data","error":"1:2: parse error: unexpected"}`),
			want: []string{"/api/v1/query answered HTTP 400 bad_data: 1:2: parse error: unexpected"}},
		{name: "error envelope, unavailable", handler: answer(503, "application/json", `{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`),
			want: []string{"answered HTTP 503 unavailable: TSDB not ready"}},
		{name: "oversize", handler: answer(200, "application/json", big),
			mod:  func(c *store.RemoteConfig) { c.MaxResponseBytes = 512 },
			want: []string{"/api/v1/query is larger than 512 bytes: narrow the window or the selector"}},
		{name: "not a matrix", handler: answer(200, "application/json", `{"status":"success","data":{"resultType":"vector","result":[]}}`),
			want: []string{`range selector answered with "vector", not a matrix`}},
		{name: "bad sample", handler: answer(200, "application/json", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"one"]]}]}}`),
			want: []string{"decode data of", "/api/v1/query"}},
		// The body is read so that the server notices the client hanging up.
		{name: "too slow", handler: func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		},
			mod:  func(c *store.RemoteConfig) { c.Timeout = 50 * time.Millisecond },
			want: []string{"context deadline exceeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := "http://" + peertest.FreeAddr(t)
			if tt.handler != nil {
				u = serve(t, tt.handler)
			}
			cfg := store.DefaultRemoteConfig(u)
			if tt.mod != nil {
				tt.mod(&cfg)
			}
			r := newRemote(t, cfg)
			_, _, err := store.Query(t.Context(), r, "up", base)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// fakeAPI records the requests of a Remote and answers range selectors
// with a fixed matrix.
type fakeAPI struct {
	mu       sync.Mutex
	requests []url.Values
	paths    []string
	methods  []string
	matrix   string
	labels   string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, r.Form)
	f.methods = append(f.methods, r.Method)
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/api/v1/query"):
		fmt.Fprintf(w, `{"status":"success","warnings":["partial answer"],"data":{"resultType":"matrix","result":%s}}`, f.matrix)
	default:
		fmt.Fprintf(w, `{"status":"success","data":%s}`, f.labels)
	}
}

func TestRemoteSelect(t *testing.T) {
	ts := base.Add(10 * time.Minute)
	at := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(ts.Add(d).UnixMilli())/1000) }
	api := &fakeAPI{
		// Series come back unsorted, with a sample at the open left edge of
		// the window (Prometheus 2's ranges are closed) and one after it.
		matrix: `[` +
			`{"metric":{"__name__":"m","k":"b"},"values":[[` + at(-5*time.Minute) + `,"100"],[` + at(-time.Minute) + `,"2"],[` + at(time.Second) + `,"200"]]},` +
			`{"metric":{"__name__":"m","k":"a"},"values":[[` + at(-2*time.Minute) + `,"1"],[` + at(-time.Minute) + `,"NaN"]]},` +
			`{"metric":{"__name__":"m","k":"c"},"values":[[` + at(-5*time.Minute) + `,"7"]]}` +
			`]`,
		labels: `["b","a"]`,
	}
	u := serve(t, api.ServeHTTP)
	r := newRemote(t, store.DefaultRemoteConfig(u+"/prometheus/"))

	v, warns, err := store.Query(t.Context(), r, "max_over_time(m[5m])", ts)
	require.NoError(t, err)
	require.Len(t, warns, 1)
	vec := v.(promql.Vector)
	require.Len(t, vec, 2, "k=c has no sample inside the window")
	require.Equal(t, "a", vec[0].Metric.Get("k"))
	require.Equal(t, 1.0, vec[0].F, "max_over_time ignores NaN")
	require.Equal(t, "b", vec[1].Metric.Get("k"))
	require.Equal(t, 2.0, vec[1].F, "the samples outside the window are dropped")

	api.mu.Lock()
	require.Equal(t, "/prometheus/api/v1/query", api.paths[0])
	require.Equal(t, http.MethodPost, api.methods[0])
	req := api.requests[0]
	api.mu.Unlock()
	require.Equal(t, at(0), req.Get("time"))
	// The engine's window (ts-5m, ts] is [ts-5m+1ms, ts] in milliseconds.
	require.Equal(t, fmt.Sprintf(`{__name__="m"}[%dms]`, (5*time.Minute).Milliseconds()), req.Get("query"))

	q, err := r.Querier(ts.Add(-time.Hour).UnixMilli(), ts.UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	names, _, err := q.LabelNames(t.Context(), &storage.LabelHints{Limit: 10}, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, names, "sorted")
	values, _, err := q.LabelValues(t.Context(), "k", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, values)

	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, "/prometheus/api/v1/labels", api.paths[1])
	require.Equal(t, `{__name__="m"}`, api.requests[1].Get("match[]"))
	require.Equal(t, "10", api.requests[1].Get("limit"))
	require.Equal(t, at(-time.Hour), api.requests[1].Get("start"))
	require.Equal(t, at(0), api.requests[1].Get("end"))
	require.Equal(t, http.MethodPost, api.methods[1])
	require.Equal(t, "/prometheus/api/v1/label/k/values", api.paths[2])
	// Prometheus serves label values only to GET.
	require.Equal(t, http.MethodGet, api.methods[2])
	require.Equal(t, at(-time.Hour), api.requests[2].Get("start"))
}

func TestRemoteLabelErrors(t *testing.T) {
	u := serve(t, answer(200, "text/html", "<html></html>"))
	r := newRemote(t, store.DefaultRemoteConfig(u))
	q, err := r.Querier(0, base.UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	_, _, err = q.LabelNames(t.Context(), nil)
	require.ErrorContains(t, err, "/api/v1/labels (HTTP 200) is not Prometheus API JSON")
	_, _, err = q.LabelValues(t.Context(), "job", nil)
	require.ErrorContains(t, err, "/api/v1/label/job/values (HTTP 200) is not Prometheus API JSON")
}

// fakeProm answers range selectors over its series (one sample every 15 s
// of each, value = t in seconds, until the clock's end) and records the
// range each query asked for.
type fakeProm struct {
	mu     sync.Mutex
	series map[string][]int64 // name → sample times (ms)
	asked  []int64            // each query's range (ms)
}

func (f *fakeProm) handler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q := r.Form.Get("query") // {__name__="a"}[123ms]
		var name string
		var rng int64
		_, err := fmt.Sscanf(strings.NewReplacer(`{__name__="`, "", `"}[`, " ", "ms]", "").Replace(q), "%s %d", &name, &rng)
		require.NoError(t, err, q)
		at, err := time.Parse(time.RFC3339Nano, r.Form.Get("time"))
		if err != nil {
			var sec float64
			_, err = fmt.Sscanf(r.Form.Get("time"), "%g", &sec)
			require.NoError(t, err)
			at = time.UnixMilli(int64(sec * 1000))
		}
		end := at.UnixMilli()
		f.mu.Lock()
		f.asked = append(f.asked, rng)
		var vals []string
		for _, ts := range f.series[name] {
			if ts > end-rng && ts <= end {
				vals = append(vals, fmt.Sprintf(`[%g,"%d"]`, float64(ts)/1000, ts/1000))
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		res := ""
		if len(vals) > 0 {
			res = fmt.Sprintf(`{"metric":{"__name__":%q},"values":[%s]}`, name, strings.Join(vals, ","))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, res)
	}
}

// read returns every sample time of name that a Remote's querier over
// [mint, maxt] gives.
func read(t *testing.T, r *store.Remote, name string, mint, maxt int64) []int64 {
	t.Helper()
	q, err := r.Querier(mint, maxt)
	require.NoError(t, err)
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	var out []int64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			ts, v := it.At()
			require.Equal(t, float64(ts/1000), v)
			out = append(out, ts)
		}
	}
	require.NoError(t, ss.Err())
	return out
}

// TestRemoteCache: a window of an hour sliding on by 30 s reads, with the
// cache, the whole hour once and then only what is new and what of the
// kept answer is not settled, and gives every time the samples an
// uncached read gives. At the live edge (the wall clock at the window's
// end) that is the last 5 m 30 s each time: a sample that came late
// within the last 5 minutes is seen. Where the window lies 2 minutes
// behind the wall clock, 3 m 30 s; in a replay of a past range (hours
// behind it), the last 30 s only. A series that stopped keeps its older
// samples, and a window that moves back reads afresh. The same selector
// over the last 5 minutes is cut from the kept hour and fetches only what
// of it is not settled.
func TestRemoteCache(t *testing.T) {
	for _, tc := range []struct {
		name   string
		behind time.Duration // the wall clock, past each window's end
		asked  int64         // the range (ms) each later read asks for
	}{
		{"live", 0, (5*time.Minute + 30*time.Second).Milliseconds() + 1},
		{"near", 2 * time.Minute, (3*time.Minute + 30*time.Second).Milliseconds() + 1},
		// (the previous end, the new end]
		{"replay", 3 * time.Hour, (30 * time.Second).Milliseconds()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := base.Add(-2 * time.Hour).UnixMilli()
			f := &fakeProm{series: map[string][]int64{}}
			for ts := start; ts <= base.UnixMilli(); ts += 15_000 {
				f.series["up"] = append(f.series["up"], ts)
				if ts < base.Add(-30*time.Minute).UnixMilli() {
					f.series["gone"] = append(f.series["gone"], ts)
				}
			}
			url := serve(t, f.handler(t))
			var maxt int64
			cached := store.DefaultRemoteConfig(url)
			cached.CacheSamples = 1 << 20
			cached.Wall = func() time.Time { return time.UnixMilli(maxt).Add(tc.behind) }
			rc, plain := newRemote(t, cached), newRemote(t, store.DefaultRemoteConfig(url))
			hour := time.Hour.Milliseconds()
			for i := range 10 {
				maxt = base.Add(-40*time.Minute + time.Duration(i)*30*time.Second).UnixMilli()
				if i == 5 && tc.behind == 0 {
					// A sample that reaches the backend late, 2 minutes
					// behind the wall clock.
					f.mu.Lock()
					f.series["late"] = append(f.series["late"], maxt-2*60_000)
					f.mu.Unlock()
				}
				for _, name := range []string{"up", "gone", "late"} {
					f.mu.Lock()
					f.asked = f.asked[:0]
					f.mu.Unlock()
					got := read(t, rc, name, maxt-hour, maxt)
					f.mu.Lock()
					asked := f.asked[0]
					f.mu.Unlock()
					require.Equal(t, read(t, plain, name, maxt-hour, maxt), got, "%s at step %d", name, i)
					if i == 0 || name == "late" && i <= 5 {
						continue
					}
					require.Equal(t, tc.asked, asked, "%s at step %d: only what is new, and what is not settled", name, i)
				}
				// The same selector over the last 5 minutes (a rule's
				// window): cut from the hour, fetched again only where
				// not settled.
				want := read(t, plain, "up", maxt-5*60_000, maxt)
				f.mu.Lock()
				f.asked = f.asked[:0]
				f.mu.Unlock()
				require.Equal(t, want, read(t, rc, "up", maxt-5*60_000, maxt), "5m at step %d", i)
				f.mu.Lock()
				asked := slices.Clone(f.asked)
				f.mu.Unlock()
				if unsettled := 5*time.Minute - tc.behind; unsettled > 0 {
					require.Equal(t, []int64{unsettled.Milliseconds() + 1}, asked, "5m at step %d", i)
				} else {
					require.Empty(t, asked, "5m at step %d", i)
				}
			}
			// Back in time: read afresh, the same answer.
			maxt = base.Add(-50 * time.Minute).UnixMilli()
			require.Equal(t, read(t, plain, "up", maxt-hour, maxt), read(t, rc, "up", maxt-hour, maxt))
		})
	}
}

// TestRemoteSplitsLargeAnswers: a read whose answer is past
// MaxResponseBytes is read again in halves of its range, halved again as
// needed, and gives what one unbounded read gives.
func TestRemoteSplitsLargeAnswers(t *testing.T) {
	start := base.Add(-2 * time.Hour).UnixMilli()
	f := &fakeProm{series: map[string][]int64{}}
	for ts := start; ts <= base.UnixMilli(); ts += 15_000 {
		f.series["up"] = append(f.series["up"], ts)
	}
	url := serve(t, f.handler(t))
	small := store.DefaultRemoteConfig(url)
	small.MaxResponseBytes = 2_000 // an hour of "up" is about 6 KB
	split, plain := newRemote(t, small), newRemote(t, store.DefaultRemoteConfig(url))
	hour := time.Hour.Milliseconds()
	maxt := base.UnixMilli()
	want := read(t, plain, "up", maxt-hour, maxt)
	require.Len(t, want, 241)
	f.mu.Lock()
	f.asked = f.asked[:0]
	f.mu.Unlock()
	require.Equal(t, want, read(t, split, "up", maxt-hour, maxt))
	f.mu.Lock()
	require.Greater(t, len(f.asked), 3, "read in parts: %v", f.asked)
	f.mu.Unlock()

	// A range that cannot be halved below a minute still fails, in one line.
	tiny := store.DefaultRemoteConfig(url)
	tiny.MaxResponseBytes = 10
	q, err := newRemote(t, tiny).Querier(maxt-hour, maxt)
	require.NoError(t, err)
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	require.False(t, ss.Next())
	require.ErrorContains(t, ss.Err(), "is larger than 10 bytes")
}
