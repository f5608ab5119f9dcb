package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/buildinfo"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// now is the clock of the test store; the samples lie in the minute before.
var now = time.Date(2026, 11, 12, 2, 50, 0, 0, time.UTC)

// openStore opens an embedded store on a temporary directory with known
// data: two series of http_requests_total every 15 s over the last minute,
// and one gpu_temperature_celsius sample carrying an exemplar.
func openStore(t *testing.T, engine store.EngineConfig) *store.Embedded {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.Engine = engine
	s, err := store.OpenEmbedded(cfg, func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	app := s.AppenderV2(t.Context())
	for i := range 5 {
		ts := now.Add(-time.Minute + time.Duration(i)*15*time.Second).UnixMilli()
		_, err := app.Append(0, labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", "a", "code", "200"), 0, ts, float64(10*i), nil, nil, storage.AOptions{})
		require.NoError(t, err)
		_, err = app.Append(0, labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", "b", "code", "500"), 0, ts, float64(i), nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	ex := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), Value: 71.5, Ts: now.Add(-time.Second).UnixMilli(), HasTs: true}
	_, err = app.Append(0, labels.FromStrings("__name__", "gpu_temperature_celsius", "node", "gpu-node-06", "gpu", "3"), 0, now.Add(-time.Second).UnixMilli(), 71.5, nil, nil, storage.AOptions{Exemplars: []exemplar.Exemplar{ex}})
	require.NoError(t, err)
	require.NoError(t, app.Commit())
	return s
}

// newServer serves the API over s on 127.0.0.1, ready unless told not to be.
func newServer(t *testing.T, s store.Store, ready bool) (*httptest.Server, *api.Handler) {
	t.Helper()
	reg := prometheus.NewRegistry()
	own := prometheus.NewCounter(prometheus.CounterOpts{Name: "vigil_test_own_total", Help: "A metric of Vigil's own registry."})
	reg.MustRegister(own)
	own.Add(3)
	h, err := api.New(api.Options{
		Store: s, Gatherer: reg, Registerer: reg,
		ListenAddress: "127.0.0.1:9700", DataDir: "data",
		LookbackDelta: 5 * time.Minute, QueryTimeout: time.Minute,
		Flags: map[string]string{"storage.tsdb.retention.time": "15d"},
	})
	require.NoError(t, err)
	h.SetReady(ready)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h
}

// apiResponse is the envelope of Prometheus's API answers.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	require.NoError(t, err)
	return readBody(t, resp)
}

func post(t *testing.T, srv *httptest.Server, path string, form url.Values) (int, string) {
	t.Helper()
	resp, err := srv.Client().PostForm(srv.URL+path, form)
	require.NoError(t, err)
	return readBody(t, resp)
}

func readBody(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// decode checks the JSON envelope and returns it.
func decode(t *testing.T, body string) apiResponse {
	t.Helper()
	var r apiResponse
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	return r
}

// unix renders t as the API's Unix seconds.
func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// TestEndpoints calls each endpoint by GET and by POST and compares the
// data with Prometheus's JSON for the known contents of the store.
func TestEndpoints(t *testing.T) {
	s := openStore(t, store.DefaultEngineConfig())
	srv, _ := newServer(t, s, true)
	at := unix(now)
	start, end := unix(now.Add(-time.Minute)), unix(now)
	tests := []struct {
		name   string
		path   string
		params url.Values
		want   string // the expected "data", as JSON
	}{
		{
			name:   "query",
			path:   "/api/v1/query",
			params: url.Values{"query": {`sum by (code) (http_requests_total)`}, "time": {at}},
			want: `{"resultType":"vector","result":[
				{"metric":{"code":"200"},"value":[` + at + `,"40"]},
				{"metric":{"code":"500"},"value":[` + at + `,"4"]}]}`,
		},
		{
			name:   "query scalar",
			path:   "/api/v1/query",
			params: url.Values{"query": {`1 + 1`}, "time": {at}},
			want:   `{"resultType":"scalar","result":[` + at + `,"2"]}`,
		},
		{
			name:   "query_range",
			path:   "/api/v1/query_range",
			params: url.Values{"query": {`http_requests_total{code="500"}`}, "start": {start}, "end": {end}, "step": {"30"}},
			want: `{"resultType":"matrix","result":[
				{"metric":{"__name__":"http_requests_total","code":"500","instance":"b","job":"api"},
				 "values":[[` + start + `,"0"],[` + unix(now.Add(-30*time.Second)) + `,"2"],[` + end + `,"4"]]}]}`,
		},
		{
			name:   "series",
			path:   "/api/v1/series",
			params: url.Values{"match[]": {`{job="api"}`}, "start": {start}, "end": {end}},
			want: `[{"__name__":"http_requests_total","code":"200","instance":"a","job":"api"},
				{"__name__":"http_requests_total","code":"500","instance":"b","job":"api"}]`,
		},
		{
			name:   "labels",
			path:   "/api/v1/labels",
			params: url.Values{"start": {start}, "end": {end}},
			want:   `["__name__","code","gpu","instance","job","node"]`,
		},
		{
			name:   "labels matching",
			path:   "/api/v1/labels",
			params: url.Values{"match[]": {`gpu_temperature_celsius`}},
			want:   `["__name__","gpu","node"]`,
		},
		{
			name:   "label values",
			path:   "/api/v1/label/__name__/values",
			params: url.Values{"start": {start}, "end": {end}},
			want:   `["gpu_temperature_celsius","http_requests_total"]`,
		},
		{
			name:   "label values matching",
			path:   "/api/v1/label/instance/values",
			params: url.Values{"match[]": {`http_requests_total{code="500"}`}},
			want:   `["b"]`,
		},
		{
			name: "metadata",
			path: "/api/v1/metadata",
			// Metadata comes from scrape targets, of which there are none yet.
			want: `{}`,
		},
		{
			name:   "query_exemplars",
			path:   "/api/v1/query_exemplars",
			params: url.Values{"query": {`gpu_temperature_celsius`}, "start": {start}, "end": {end}},
			want: `[{"seriesLabels":{"__name__":"gpu_temperature_celsius","gpu":"3","node":"gpu-node-06"},
				"exemplars":[{"labels":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"},"value":"71.5","timestamp":` + unix(now.Add(-time.Second)) + `}]}]`,
		},
		{
			name: "buildinfo",
			path: "/api/v1/status/buildinfo",
			want: buildInfoJSON(t),
		},
		{
			name: "flags",
			path: "/api/v1/status/flags",
			want: `{"storage.tsdb.retention.time":"15d"}`,
		},
	}
	for _, tt := range tests {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(tt.name+" "+method, func(t *testing.T) {
				var code int
				var body string
				if method == http.MethodGet {
					path := tt.path
					if len(tt.params) > 0 {
						path += "?" + tt.params.Encode()
					}
					code, body = get(t, srv, path)
				} else {
					code, body = post(t, srv, tt.path, tt.params)
				}
				if method == http.MethodPost && (tt.name == "metadata" || tt.name == "buildinfo" || tt.name == "flags" || strings.HasPrefix(tt.name, "label values")) {
					// Prometheus serves these by GET only.
					require.Equal(t, http.StatusMethodNotAllowed, code, body)
					return
				}
				require.Equal(t, http.StatusOK, code, body)
				r := decode(t, body)
				require.Equal(t, "success", r.Status, body)
				require.JSONEq(t, tt.want, string(r.Data))
			})
		}
	}
}

func buildInfoJSON(t *testing.T) string {
	t.Helper()
	bi := buildinfo.Get()
	b, err := json.Marshal(map[string]string{
		"version": bi.Version, "revision": bi.Revision, "branch": bi.Branch,
		"buildUser": "vigil", "buildDate": bi.BuildDate, "goVersion": bi.GoVersion,
	})
	require.NoError(t, err)
	return string(b)
}

func TestBadRequests(t *testing.T) {
	s := openStore(t, store.DefaultEngineConfig())
	srv, _ := newServer(t, s, true)
	tests := []struct {
		name, path string
		status     int
		errorType  string
		contains   string
	}{
		{"bad query", "/api/v1/query?query=" + url.QueryEscape("sum(("), http.StatusBadRequest, "bad_data", `invalid parameter "query"`},
		{"bad time", "/api/v1/query?query=up&time=yesterday", http.StatusBadRequest, "bad_data", `invalid parameter "time"`},
		{"range without step", "/api/v1/query_range?query=up&start=0&end=60", http.StatusBadRequest, "bad_data", `invalid parameter "step"`},
		{"range end before start", "/api/v1/query_range?query=up&start=60&end=0&step=15", http.StatusBadRequest, "bad_data", "end timestamp must not be before start time"},
		{"series without match", "/api/v1/series", http.StatusBadRequest, "bad_data", "no match[] parameter provided"},
		{"bad series selector", "/api/v1/labels?match[]=" + url.QueryEscape("up{"), http.StatusBadRequest, "bad_data", "parse error: unexpected end of input inside braces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, srv, tt.path)
			require.Equal(t, tt.status, code, body)
			r := decode(t, body)
			require.Equal(t, "error", r.Status)
			require.Equal(t, tt.errorType, r.ErrorType)
			require.Contains(t, r.Error, tt.contains)
		})
	}
}

// TestQueryLimit checks that a query over the engine's sample limit fails
// with Prometheus's clear error rather than loading the samples.
func TestQueryLimit(t *testing.T) {
	engine := store.DefaultEngineConfig()
	engine.MaxSamples = 3
	srv, _ := newServer(t, openStore(t, engine), true)
	code, body := get(t, srv, "/api/v1/query?query="+url.QueryEscape("http_requests_total[1m]")+"&time="+unix(now))
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	r := decode(t, body)
	require.Equal(t, "error", r.Status)
	require.Equal(t, "execution", r.ErrorType)
	require.Equal(t, "query processing would load too many samples into memory in query execution", r.Error)

	// Under the limit, the same engine answers.
	code, body = get(t, srv, "/api/v1/query?query="+url.QueryEscape(`http_requests_total{code="500"}`)+"&time="+unix(now))
	require.Equal(t, http.StatusOK, code, body)
}

func TestHealthAndReady(t *testing.T) {
	srv, h := newServer(t, openStore(t, store.DefaultEngineConfig()), false)

	code, body := get(t, srv, "/-/healthy")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "Vigil is Healthy.\n", body)

	// Until SetReady(true), readiness and the query API answer 503.
	code, _ = get(t, srv, "/-/ready")
	require.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = get(t, srv, "/api/v1/query?query=up")
	require.Equal(t, http.StatusServiceUnavailable, code)

	h.SetReady(true)
	code, body = get(t, srv, "/-/ready")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "Vigil is Ready.\n", body)
	code, _ = get(t, srv, "/api/v1/query?query=up")
	require.Equal(t, http.StatusOK, code)

	h.SetReady(false)
	code, _ = get(t, srv, "/-/ready")
	require.Equal(t, http.StatusServiceUnavailable, code)
}

// TestMetricsOwnRegistry checks that /metrics serves the registry it was
// given, not the process-wide default one (which has go_goroutines).
func TestMetricsOwnRegistry(t *testing.T) {
	srv, _ := newServer(t, openStore(t, store.DefaultEngineConfig()), false)
	code, body := get(t, srv, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "vigil_test_own_total 3\n")
	require.NotContains(t, body, "go_goroutines")
}

func TestNewWithoutStore(t *testing.T) {
	_, err := api.New(api.Options{})
	require.EqualError(t, err, "api: no store")
}
