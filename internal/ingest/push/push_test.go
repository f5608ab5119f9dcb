package push_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/push"
)

// snapshot returns what Vigil holds for job drift, as the sequence's lines.
func (e *env) snapshot(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range e.query(t, `{job="drift"}`) {
		out = append(out, parseLine(t, l))
	}
	return out
}

// parseLine turns a query line into the sequence's form.
func parseLine(t *testing.T, l string) string {
	t.Helper()
	i := strings.LastIndexByte(l, ' ')
	v, err := strconv.ParseFloat(l[i+1:], 64)
	require.NoError(t, err)
	return line(l[:i], v)
}

func TestPushClientSequence(t *testing.T) {
	e := newEnv(t, push.Options{})
	for _, s := range pushSequence() {
		e.clock.Add(time.Second)
		s.do(t, e.url)
		require.Equal(t, s.want, e.snapshot(t), s.name)
	}
	require.Equal(t, 1.0, e.groups(t))
	require.Equal(t, 4.0, e.requests(t, "200"))
	require.Equal(t, 1.0, e.requests(t, "202"))
	// The drift query issue 7's presets run finds the pushed gauge with
	// its grouping labels.
	require.Equal(t, []string{`vigil_feature_drift{feature="f",job="drift",method="psi",model="m",pipeline="hourly"} 0.05`},
		e.query(t, `vigil_feature_drift{method="psi"} > 0.01`))
}

func TestPushRefresh(t *testing.T) {
	e := newEnv(t, push.Options{})
	code, body := e.do(t, http.MethodPut, "/metrics/job/eval/model/m", "", "model_accuracy 0.92\n")
	require.Equal(t, http.StatusOK, code, body)
	pushed := e.clock.Now()

	// Past the 5m lookback, the series is gone until the next refresh
	// appends the group's last values again, as a scrape would.
	e.clock.Add(6 * time.Minute)
	require.Empty(t, e.query(t, "model_accuracy"))
	require.NoError(t, e.push.Refresh(t.Context()))
	require.Equal(t, []string{`model_accuracy{job="eval",model="m"} 0.92`}, e.query(t, "model_accuracy"))
	// push_time_seconds still says when the push was.
	require.Equal(t, []string{`push_time_seconds{job="eval",model="m"} ` + strconv.FormatInt(pushed.Unix(), 10)},
		e.query(t, "push_time_seconds"))

	// After DELETE, a refresh brings nothing back and the series are
	// stale at once.
	e.clock.Add(time.Second)
	code, _ = e.do(t, http.MethodDelete, "/metrics/job/eval/model/m", "", "")
	require.Equal(t, http.StatusAccepted, code)
	e.clock.Add(time.Second)
	require.NoError(t, e.push.Refresh(t.Context()))
	require.Empty(t, e.query(t, `{job="eval"}`))
	require.Equal(t, 0.0, e.groups(t))
}

func TestPushRun(t *testing.T) {
	e := newEnv(t, push.Options{Interval: 10 * time.Millisecond})
	code, body := e.do(t, http.MethodPut, "/metrics/job/eval", "", "model_accuracy 0.5\n")
	require.Equal(t, http.StatusOK, code, body)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- e.push.Run(ctx) }()
	before := e.samples(t)
	require.Eventually(t, func() bool { e.clock.Add(time.Second); return e.samples(t) > before }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestPushRequests(t *testing.T) {
	const text = "text/plain; version=0.0.4"
	cases := []struct {
		name, method, path, body string
		code                     int
		wantBody                 string
		want                     []string // {job="t"} afterwards
	}{
		{"method", http.MethodGet, "/metrics/job/t", "", http.StatusMethodNotAllowed, "method GET not allowed", nil},
		{"empty job", http.MethodPut, "/metrics/job/", "m 1\n", http.StatusBadRequest, "empty job name", nil},
		{"odd path", http.MethodPut, "/metrics/job/t/a", "m 1\n", http.StatusBadRequest, "odd number of components", nil},
		{"bad body", http.MethodPut, "/metrics/job/t", "bad{ 1\n", http.StatusBadRequest, "text format parsing error in line 1", nil},
		{"timestamp", http.MethodPut, "/metrics/job/t", "m 1 1700000000000\n", http.StatusBadRequest, "pushed metrics must not have timestamps",
			[]string{`push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} 0`}},
		{"put", http.MethodPut, "/metrics/job/t", "# TYPE m counter\nm{a=\"1\"} 1\nm{a=\"2\"} 2\n", http.StatusOK, "",
			[]string{`m{a="1",job="t"} 1`, `m{a="2",job="t"} 2`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"duplicate series", http.MethodPut, "/metrics/job/t", "n 1\nn 2\n", http.StatusBadRequest, "pushed twice",
			[]string{`m{a="1",job="t"} 1`, `m{a="2",job="t"} 2`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"type conflict with another group", http.MethodPut, "/metrics/job/u", "# TYPE m gauge\nm 1\n", http.StatusBadRequest, "another group holds it as counter",
			[]string{`m{a="1",job="t"} 1`, `m{a="2",job="t"} 2`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"grouping labels overwrite pushed ones", http.MethodPost, "/metrics/job/t", "o{job=\"x\",b=\"2\"} 3\n", http.StatusOK, "",
			[]string{`m{a="1",job="t"} 1`, `m{a="2",job="t"} 2`, `o{b="2",job="t"} 3`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"own metrics are dropped", http.MethodPost, "/metrics/job/t", "push_time_seconds 5\n", http.StatusOK, "",
			[]string{`m{a="1",job="t"} 1`, `m{a="2",job="t"} 2`, `o{b="2",job="t"} 3`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"post with an empty body", http.MethodPost, "/metrics/job/t", "", http.StatusOK, "",
			[]string{`m{a="1",job="t"} 1`, `m{a="2",job="t"} 2`, `o{b="2",job="t"} 3`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"post replaces a family", http.MethodPost, "/metrics/job/t", "# TYPE m counter\nm{a=\"1\"} 4\n", http.StatusOK, "",
			[]string{`m{a="1",job="t"} 4`, `o{b="2",job="t"} 3`, `push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"put with an empty body", http.MethodPut, "/metrics/job/t", "", http.StatusOK, "",
			[]string{`push_failure_time_seconds{job="t"} T`, `push_time_seconds{job="t"} T`}},
		{"delete", http.MethodDelete, "/metrics/job/t", "", http.StatusAccepted, "", nil},
		{"delete of no group", http.MethodDelete, "/metrics/job/none", "", http.StatusAccepted, "", nil},
		{"too large", http.MethodPut, "/metrics/job/t", strings.Repeat("m 1\n", 300), http.StatusRequestEntityTooLarge, "over the limit of 1024", nil},
	}
	e := newEnv(t, push.Options{MaxBodyBytes: 1024})
	for _, c := range cases {
		e.clock.Add(time.Second)
		code, body := e.do(t, c.method, c.path, text, c.body)
		require.Equal(t, c.code, code, "%s: %s", c.name, body)
		require.Contains(t, body, c.wantBody, c.name)
		require.NotContains(t, strings.TrimSpace(body), "\n", c.name)
		var got []string
		for _, l := range e.query(t, `{job="t"}`) {
			got = append(got, parseLine(t, l))
		}
		require.Equal(t, c.want, got, c.name)
	}
}

func TestPushTypes(t *testing.T) {
	e := newEnv(t, push.Options{})
	body := `# TYPE lat histogram
lat_bucket{le="0.5"} 1
lat_bucket{le="+Inf"} 3
lat_sum 4.5
lat_count 3
# TYPE q summary
q{quantile="0.9"} 7
q_sum 10
q_count 2
`
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(body))
	require.NoError(t, w.Close())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, e.url+"/metrics/job@base64/YS9i/instance/i", &gz)
	require.NoError(t, err)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{
		`lat_bucket{instance="i",job="a/b",le="+Inf"} 3`,
		`lat_bucket{instance="i",job="a/b",le="0.5"} 1`,
		`lat_count{instance="i",job="a/b"} 3`,
		`lat_sum{instance="i",job="a/b"} 4.5`,
		`q_count{instance="i",job="a/b"} 2`,
		`q_sum{instance="i",job="a/b"} 10`,
		`q{instance="i",job="a/b",quantile="0.9"} 7`,
	}, e.query(t, `{job="a/b",__name__=~"lat.*|q.*"}`))
}

func TestPushMaxSeries(t *testing.T) {
	e := newEnv(t, push.Options{MaxSeries: 2})
	code, body := e.do(t, http.MethodPut, "/metrics/job/t", "", "a 1\nb 1\nc 1\n")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "over the limit of 2")
	code, body = e.do(t, http.MethodPut, "/metrics/job/t", "", "a 1\nb 1\n")
	require.Equal(t, http.StatusOK, code, body)
}

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := push.New(push.Options{})
	require.ErrorContains(t, err, "no appendable")
	_, err = push.New(push.Options{Appendable: nopAppendable{}, MaxBodyBytes: -1})
	require.ErrorContains(t, err, "must not be negative")
}
