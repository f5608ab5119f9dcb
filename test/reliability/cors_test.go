package reliability

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// apiEndpoints are the Prometheus-API reads a Grafana data source and the
// Prometheus UI make, with their query strings.
var apiEndpoints = []string{
	"/api/v1/query?query=up_probe",
	"/api/v1/query_range?query=up_probe&start=%s&end=%s&step=15",
	"/api/v1/series?match[]=up_probe",
	"/api/v1/labels",
	"/api/v1/label/__name__/values",
	"/api/v1/label/job/values",
	"/api/v1/targets",
	"/api/v1/rules",
	"/api/v1/alerts",
	"/api/v1/status/buildinfo",
	"/api/v1/metadata",
	"/api/v1/query_exemplars?query=up_probe&start=%s&end=%s",
	"/api/v1/format_query?query=up_probe",
	"/api/v1/parse_query?query=up_probe",
}

// writeProbe stores one series, up_probe, over the last 5 minutes.
func writeProbe(t *testing.T, v *server) time.Time {
	t.Helper()
	now := time.Now().Truncate(time.Second)
	ts := prompb.TimeSeries{Labels: labelsOf("up_probe", "job", "grafana")}
	for i := range 20 {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: now.Add(time.Duration(i-19) * 15 * time.Second).UnixMilli(), Value: 1})
	}
	v.mustWriteV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
	return now
}

func expand(path string, now time.Time) string {
	if !strings.Contains(path, "%s") {
		return path
	}
	start, end := now.Add(-5*time.Minute).Format(time.RFC3339), now.Format(time.RFC3339)
	return strings.Replace(strings.Replace(path, "%s", start, 1), "%s", end, 1)
}

// TestOriginHeader is issue 17's first finding: any request with an Origin
// header (every browser's cross-origin fetch, every Grafana with direct
// access) got an empty reply, the server a nil CORS pattern. By default,
// as Prometheus's --web.cors.origin='.*', every origin may read.
func TestOriginHeader(t *testing.T) {
	v := startVigil(t, "")
	now := writeProbe(t, v)
	origin := http.Header{"Origin": {"https://grafana.example"}}
	for _, p := range apiEndpoints {
		path := expand(p, now)
		resp, body := v.do(t, http.MethodGet, path, nil, origin)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
		require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"), "GET %s", path)
		require.Contains(t, body, `"status":"success"`, "GET %s", path)
	}
	// Grafana's default: queries as POST forms.
	form := url.Values{"query": {"up_probe"}, "time": {now.Format(time.RFC3339)}}
	h := origin.Clone()
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body := v.do(t, http.MethodPost, "/api/v1/query", strings.NewReader(form.Encode()), h)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"up_probe"`)
	// A browser's preflight before that POST.
	pre := origin.Clone()
	pre.Set("Access-Control-Request-Method", "POST")
	pre.Set("Access-Control-Request-Headers", "content-type")
	resp, body = v.do(t, http.MethodOptions, "/api/v1/query", nil, pre)
	require.Less(t, resp.StatusCode, 300, "preflight: %d %s", resp.StatusCode, body)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
	require.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "content-type")
	v.requireUp(t)
}

// TestOriginAllowList: with web.cors_origin set, an origin it matches
// gets itself back as the allowed origin and one it does not gets no CORS
// header (the browser then refuses the answer); the data is served either
// way, as Prometheus does.
func TestOriginAllowList(t *testing.T) {
	v := startVigil(t, "web:\n  cors_origin: 'https://grafana\\.example'\n")
	writeProbe(t, v)
	resp, body := v.do(t, http.MethodGet, "/api/v1/query?query=up_probe", nil, http.Header{"Origin": {"https://grafana.example"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "https://grafana.example", resp.Header.Get("Access-Control-Allow-Origin"))
	resp, body = v.do(t, http.MethodGet, "/api/v1/query?query=up_probe", nil, http.Header{"Origin": {"https://evil.example"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	// The pattern is anchored, as Prometheus anchors it.
	resp, _ = v.do(t, http.MethodGet, "/api/v1/query?query=up_probe", nil, http.Header{"Origin": {"https://grafana.example.evil"}})
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	v.requireUp(t)
}
