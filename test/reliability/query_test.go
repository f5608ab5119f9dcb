package reliability

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
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

// TestQueryCanceledWithClient: a heavy query whose client goes away stops
// being evaluated (prometheus_engine_queries falls back to 0 long before
// the query could have finished), and the server answers the next client
// at once.
func TestQueryCanceledWithClient(t *testing.T) {
	v := startVigil(t, "")
	now := time.Now().Truncate(time.Second)
	v.writeHour(t, "cancel_load", now)
	// A subquery at 100 ms steps over an hour: minutes of evaluation.
	heavy := url.Values{"query": {"max_over_time(rate(cancel_load[5m])[1h:100ms])"}, "time": {strconv.FormatInt(now.Unix(), 10)}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, v.URL+"/api/v1/query?"+heavy.Encode(), nil)
		resp, err := v.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	running := func() float64 {
		_, body := v.do(t, http.MethodGet, "/metrics", nil, nil)
		for line := range strings.SplitSeq(body, "\n") {
			if strings.HasPrefix(line, "prometheus_engine_queries ") {
				f, err := strconv.ParseFloat(strings.TrimPrefix(line, "prometheus_engine_queries "), 64)
				require.NoError(t, err)
				return f
			}
		}
		t.Fatal("no prometheus_engine_queries in /metrics")
		return 0
	}
	require.Eventually(t, func() bool { return running() >= 1 }, 10*time.Second, 20*time.Millisecond, "the heavy query never started")
	time.Sleep(300 * time.Millisecond)
	require.GreaterOrEqual(t, running(), 1.0, "the heavy query finished already: make it heavier")
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return running() == 0 }, 5*time.Second, 20*time.Millisecond,
		"the query still runs after its client went away")
	v.requireUp(t)
}
