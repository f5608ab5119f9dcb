package redaction

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/traces"
)

// Classes of output, as the report names them.
const (
	outDataDir   = "data dir (raw files)"
	outStore     = "trace store contents"
	outAPI       = "HTTP API"
	outCLI       = "CLI"
	outOwnLogs   = "Vigil's own logs"
	outForwarded = "forwarded to backend"
)

// waitFor polls cond until it holds; it fails the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get fetches path from Vigil's HTTP API, requiring 200.
func get(t *testing.T, base, path string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, b)
	return b
}

// data returns the data of an API answer ({"status":"success","data":…}).
func data(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &env), "%s", body)
	require.Equal(t, "success", env.Status, "%s", body)
	return env.Data
}

// apiLog is a log record as /api/v1/logs serves it.
type apiLog struct {
	Body       any            `json:"body"`
	Attributes map[string]any `json:"attributes"`
	Resource   map[string]any `json:"resource"`
}

// asLogs turns the API's records back into pdata, so that positions read
// them as they read what the backend received.
func asLogs(t *testing.T, recs []apiLog) plog.Logs {
	ld := plog.NewLogs()
	for _, r := range recs {
		rl := ld.ResourceLogs().AppendEmpty()
		require.NoError(t, rl.Resource().Attributes().FromRaw(r.Resource))
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		require.NoError(t, lr.Body().FromRaw(r.Body))
		require.NoError(t, lr.Attributes().FromRaw(r.Attributes))
	}
	return ld
}

// checkAPI reads every trace, every group's logs, the searches, the span
// metrics, incidents, slow routes and Vigil's own metrics through the HTTP
// API, scans each answer, and returns the spans and logs it served.
func checkAPI(t *testing.T, base string, sc *scanner, cases []*tcase, traceIDs []string, nLogs int) (map[string]spanAt, map[string]logAt) {
	var tds []ptrace.Traces
	for _, id := range traceIDs {
		path := "/api/v1/traces/" + id
		b := get(t, base, path)
		sc.scan(outAPI, "GET "+path, b)
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data(t, b))
		require.NoError(t, err, path)
		require.Positive(t, td.SpanCount(), path)
		tds = append(tds, td)
		sc.scan(outAPI, "GET "+path+"/breakdown", get(t, base, path+"/breakdown"))
	}

	b := get(t, base, "/api/v1/traces?limit="+strconv.Itoa(traces.MaxLimit))
	sc.scan(outAPI, "GET /api/v1/traces", b)
	var found []struct {
		TraceID string `json:"trace_id"`
	}
	require.NoError(t, json.Unmarshal(data(t, b), &found))
	var ids []string
	for _, f := range found {
		ids = append(ids, f.TraceID)
	}
	require.ElementsMatch(t, traceIDs, ids, "the trace search finds every trace sent")

	var lds []plog.Logs
	names, by := groups(cases, func(c *tcase) bool { return !c.pos.isTraces() })
	for _, g := range names {
		path := "/api/v1/logs?request_id=" + url.QueryEscape(g)
		b := get(t, base, path)
		sc.scan(outAPI, "GET "+path, b)
		var recs []apiLog
		require.NoError(t, json.Unmarshal(data(t, b), &recs))
		require.Len(t, recs, len(by[g]), path)
		lds = append(lds, asLogs(t, recs))
	}
	b = get(t, base, "/api/v1/logs?limit="+strconv.Itoa(traces.MaxLimit))
	sc.scan(outAPI, "GET /api/v1/logs", b)
	var all []json.RawMessage
	require.NoError(t, json.Unmarshal(data(t, b), &all))
	require.Len(t, all, nLogs, "every log record sent")
	for _, g := range names[:1] {
		// A trace search by correlation id reads the same index.
		sc.scan(outAPI, "GET /api/v1/traces?correlation_id", get(t, base, "/api/v1/traces?correlation_id="+url.QueryEscape(g)))
	}

	checkMetricsAPI(t, base, sc)
	now := time.Now()
	for _, path := range []string{
		"/api/v1/incidents", "/api/v1/alerts", "/api/v1/slow?window=1h", "/metrics",
		"/api/v1/query_exemplars?query=traces_span_metrics_duration_seconds_bucket&start=" +
			strconv.FormatInt(now.Add(-time.Hour).Unix(), 10) + "&end=" + strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
	} {
		sc.scan(outAPI, "GET "+path, get(t, base, path))
	}
	return spansByCase(tds...), logsByCase(lds...)
}

// checkMetricsAPI scans the metric store's series and label values: span
// names, services and error types are labels of the span metrics.
func checkMetricsAPI(t *testing.T, base string, sc *scanner) {
	b := get(t, base, "/api/v1/label/span_name/values")
	sc.scan(outAPI, "GET /api/v1/label/span_name/values", b)
	var names []string
	require.NoError(t, json.Unmarshal(data(t, b), &names))
	require.Contains(t, names, "span-attribute", "span metrics of the child spans")
	redacted := 0
	for _, n := range names {
		if strings.Contains(n, "[REDACTED") {
			redacted++
		}
	}
	require.Positive(t, redacted, "span names with secrets are in the span metrics, redacted: %q", names)
	for _, path := range []string{
		"/api/v1/series?match[]=" + url.QueryEscape(`{__name__=~".+"}`),
		"/api/v1/query?query=" + url.QueryEscape(`{__name__=~".+"}`),
	} {
		sc.scan(outAPI, "GET "+path, get(t, base, path))
	}
	// Every value of every label of the metric store (span metrics,
	// service graph, log-derived counters, Vigil's own).
	b = get(t, base, "/api/v1/labels")
	sc.scan(outAPI, "GET /api/v1/labels", b)
	var labels []string
	require.NoError(t, json.Unmarshal(data(t, b), &labels))
	require.Contains(t, labels, "service_name")
	for _, l := range labels {
		path := "/api/v1/label/" + url.PathEscape(l) + "/values"
		sc.scan(outAPI, "GET "+path, get(t, base, path))
	}
}

// vigilCLI runs the vigil binary, requiring exit 0, and returns its
// stdout and stderr.
func vigilCLI(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "vigil %s: %s", strings.Join(args, " "), stderr.String())
	require.NotZero(t, stdout.Len(), "vigil %s printed nothing", strings.Join(args, " "))
	return append(stdout.Bytes(), stderr.Bytes()...)
}

// checkCLI runs vigil trace for every trace, vigil logs --request for
// every group of log records, vigil slow and vigil incidents, in text and
// JSON, and scans what they print.
func checkCLI(t *testing.T, bin, base string, sc *scanner, cases []*tcase, traceIDs []string) {
	for _, id := range traceIDs {
		for _, extra := range [][]string{nil, {"--json"}} {
			args := append([]string{"trace", id, "--server", base}, extra...)
			sc.scan(outCLI, "vigil "+strings.Join(args, " "), vigilCLI(t, bin, args...))
		}
	}
	names, by := groups(cases, func(c *tcase) bool { return !c.pos.isTraces() })
	for _, g := range names {
		args := []string{"logs", "--request", g, "--server", base}
		sc.scan(outCLI, "vigil "+strings.Join(args, " "), vigilCLI(t, bin, args...))
		args = append(args, "--json")
		out := vigilCLI(t, bin, args...)
		sc.scan(outCLI, "vigil "+strings.Join(args, " "), out)
		var res struct {
			Logs []json.RawMessage `json:"logs"`
		}
		require.NoError(t, json.NewDecoder(bytes.NewReader(out)).Decode(&res))
		require.Len(t, res.Logs, len(by[g]), "vigil logs --request %s", g)
	}
	for _, args := range [][]string{
		{"slow", "--window", "1h", "--server", base}, {"slow", "--window", "1h", "--server", base, "--json"},
		{"incidents", "--server", base}, {"incidents", "--server", base, "--json"},
	} {
		sc.scan(outCLI, "vigil "+strings.Join(args, " "), vigilCLI(t, bin, args...))
	}
}

// checkForwarded scans what the backend received, in JSON and protobuf,
// and returns its spans and logs.
func checkForwarded(t *testing.T, be *backend, sc *scanner) (map[string]spanAt, map[string]logAt) {
	tds, lds := be.received()
	for i, td := range tds {
		j, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		p, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		sc.scan(outForwarded, "forwarded traces batch "+strconv.Itoa(i)+" (JSON)", j)
		sc.scan(outForwarded, "forwarded traces batch "+strconv.Itoa(i)+" (protobuf)", p)
	}
	for i, ld := range lds {
		j, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		require.NoError(t, err)
		p, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		require.NoError(t, err)
		sc.scan(outForwarded, "forwarded logs batch "+strconv.Itoa(i)+" (JSON)", j)
		sc.scan(outForwarded, "forwarded logs batch "+strconv.Itoa(i)+" (protobuf)", p)
	}
	return spansByCase(tds...), logsByCase(lds...)
}

// scanDataDir reads every file under dir, raw. Some of them must hold
// redacted values in the clear (the write-ahead logs), or the raw scan
// would prove nothing.
func scanDataDir(t *testing.T, sc *scanner, dir string) {
	var files, clear []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		sc.scan(outDataDir, "file "+rel, b)
		files = append(files, rel)
		if bytes.Contains(b, []byte("[REDACTED:")) {
			clear = append(clear, rel)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, clear, "no file of the data dir holds a redacted value in the clear: %v", files)
	t.Logf("data dir: %d files, redacted values in the clear in %v", len(files), clear)
}

// dumpStore opens the trace store Vigil left (Pebble compresses its
// blocks, so the raw files may hide what they hold) and scans every trace
// and log record in it.
func dumpStore(t *testing.T, sc *scanner, dir string, nTraces, nLogs int) {
	cfg := traces.DefaultConfig()
	cfg.Dir = dir
	st, err := traces.Open(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), time.Now)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	ctx := t.Context()
	sums, err := st.SearchTraces(ctx, traces.TraceQuery{Limit: traces.MaxLimit})
	require.NoError(t, err)
	require.Len(t, sums, nTraces, "the store holds every trace sent")
	for _, s := range sums {
		td, err := st.Trace(ctx, s.TraceID)
		require.NoError(t, err)
		j, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		p, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		sc.scan(outStore, "stored trace "+s.TraceID.String()+" (JSON)", j)
		sc.scan(outStore, "stored trace "+s.TraceID.String()+" (protobuf)", p)
	}
	recs, err := st.SearchLogs(ctx, traces.LogQuery{Limit: traces.MaxLimit})
	require.NoError(t, err)
	require.Len(t, recs, nLogs, "the store holds every log record sent")
	for i, r := range recs {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		sc.scan(outStore, "stored log record "+strconv.Itoa(i), b)
	}
}
