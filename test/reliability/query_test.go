package reliability

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueryBounds: the hostile queries of the probe — 200 KB of nested
// parentheses, `up or ` repeated 170,000 times, both as Grafana's POST
// form and as a GET — get a 400 with Prometheus's bad_data error at once,
// instead of holding a core for minutes; a long regular expression and an
// ordinary query still answer; and the server stays up for everyone.
func TestQueryBounds(t *testing.T) {
	v := startVigil(t, "")
	now := writeProbe(t, v)
	ts := now.Format(time.RFC3339)
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for name, q := range map[string]string{
		"nested parentheses": strings.Repeat("(", 100_000) + "up" + strings.Repeat(")", 100_000),
		"a chain of or":      strings.Repeat("up or ", 170_000) + "up",
	} {
		methods := []string{http.MethodPost, http.MethodGet}
		if len(q) > 1<<19 {
			methods = methods[:1] // a URL of a megabyte is refused before any handler (431)
		}
		for _, method := range methods {
			vals := url.Values{"query": {q}, "time": {ts}}
			var resp *http.Response
			var body string
			if method == http.MethodPost {
				resp, body = v.do(t, method, "/api/v1/query", strings.NewReader(vals.Encode()), form)
			} else {
				// As a range query's URL.
				resp, body = v.do(t, method, "/api/v1/query_range?"+url.Values{"query": {q}, "start": {ts}, "end": {ts}, "step": {"15s"}}.Encode(), nil, nil)
			}
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %.200s", method, name, body)
			require.Contains(t, body, `"errorType":"bad_data"`, name)
			require.Contains(t, body, "query.max_", name)
		}
	}
	resp, body := v.do(t, http.MethodGet, "/api/v1/series?"+url.Values{"match[]": {strings.Repeat("(", 300) + "up" + strings.Repeat(")", 300)}}.Encode(), nil, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "match[]: the query nests deeper than query.max_depth (256)")

	// What a dashboard sends still answers: a 300 KB regular expression of
	// pod names, and the probe series.
	long := `up_probe{pod=~"` + strings.Repeat("pod-abcdef-12345|", 18_000) + `.*"}`
	resp, body = v.do(t, http.MethodPost, "/api/v1/query", strings.NewReader(url.Values{"query": {long}, "time": {ts}}.Encode()), form)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", body)
	require.Contains(t, body, `"up_probe"`)
	resp, body = v.do(t, http.MethodGet, "/api/v1/query?"+url.Values{"query": {"sum(up_probe) or vector(0)"}, "time": {ts}}.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	v.requireUp(t)
}

// TestQueryBoundsConfigured: the bounds come from the config, and a bad
// one is refused with its field named.
func TestQueryBoundsConfigured(t *testing.T) {
	v := startVigil(t, "query:\n  max_operators: 3\n")
	now := writeProbe(t, v)
	ts := now.Format(time.RFC3339)
	resp, body := v.do(t, http.MethodGet, "/api/v1/query?"+url.Values{"query": {"up_probe + up_probe + up_probe"}, "time": {ts}}.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = v.do(t, http.MethodGet, "/api/v1/query?"+url.Values{"query": {"up_probe + up_probe + up_probe + up_probe + up_probe"}, "time": {ts}}.Encode(), nil, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "query.max_operators (3)")
}
