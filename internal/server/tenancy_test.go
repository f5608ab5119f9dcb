package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/tenant"
)

// marker is what only tenant id's data holds: a cross-tenant read is a
// response to one tenant that holds the other's marker.
func marker(id string) string { return "tenant_" + id + "_marker" }

// remoteWrite sends one sample of each series to base as tenant id (no
// header when id is empty) and returns the status.
func remoteWrite(t *testing.T, base, id string, at time.Time, series ...[]string) int {
	t.Helper()
	return remoteWriteAnswer(t, base, id, at, series...).code
}

type answer struct {
	code int
	body string
}

func do(t *testing.T, r *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, string(b)}
}

func send(t *testing.T, method, u, id, contentType string, body io.Reader) answer {
	t.Helper()
	r, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	if id != "" {
		r.Header.Set(tenant.Header, id)
	}
	return do(t, r)
}

// TestTenancyIsolation is the isolation matrix over the metric paths:
// tenants a and b write the same names through remote write and push,
// then every read endpoint is asked, with every method and both places
// of its parameters, as a, as b, with no tenant, and with matchers that
// try to reach the other tenant; no answer may hold the other tenant's
// data.
func TestTenancyIsolation(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Evaluation.Enabled = false
	cfg.Tenancy.Enabled = true
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	now := time.Now()

	tenants := []string{"a", "b"}
	for _, id := range tenants {
		code := remoteWrite(t, base, id, now,
			[]string{"__name__", "shared_metric", "owner", marker(id)},
			[]string{"__name__", "only_" + id + "_marker", "job", "j"},
			// A forged tenant label: stored under the writer's own tenant.
			[]string{"__name__", "forged_metric", "owner", marker(id), tenant.Label, "other"},
			// Vigil's own up, which a tenant must not overwrite.
			[]string{"__name__", "up", "job", "vigil", "owner", marker(id)},
		)
		require.Equal(t, http.StatusNoContent, code, "remote write as %s", id)
		a := send(t, http.MethodPut, base+"/metrics/job/pushed", id, "text/plain; version=0.0.4",
			strings.NewReader(fmt.Sprintf("pushed_metric{owner=%q} 1\n", marker(id))))
		require.Equal(t, http.StatusOK, a.code, "push as %s: %s", id, a.body)
	}
	require.Equal(t, http.StatusUnauthorized, remoteWrite(t, base, "", now, []string{"__name__", "x"}), "a write with no tenant")
	require.Equal(t, http.StatusBadRequest, remoteWrite(t, base, "a|b", now, []string{"__name__", "x"}), "a write to two tenants")
	require.Equal(t, http.StatusBadRequest, remoteWrite(t, base, "../a", now, []string{"__name__", "x"}), "an invalid tenant")
	// b deletes its own group of the same name; a's stays.
	a := send(t, http.MethodDelete, base+"/metrics/job/pushed", "b", "", nil)
	require.Equal(t, http.StatusAccepted, a.code, a.body)

	ts := fmt.Sprint(now.Add(time.Second).Unix())
	start, end := fmt.Sprint(now.Add(-5*time.Minute).Unix()), fmt.Sprint(now.Add(time.Minute).Unix())
	type read struct {
		path   string
		params url.Values
		// shows says the answer to its own tenant holds its marker.
		shows bool
	}
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	var reads []read
	for _, expr := range []string{
		`{__name__=~".+"}`, `shared_metric`, `{owner!="tenant_a_marker"}`, `{owner!="tenant_b_marker"}`,
		`{__tenant_id__="a"}`, `{__tenant_id__="b"}`, `{__tenant_id__!="a",__name__=~".+"}`, `{__tenant_id__=~".*",__name__=~".+"}`,
		`only_a_marker or only_b_marker`, `sum by (__tenant_id__, owner) (shared_metric)`, `forged_metric`, `up`, `pushed_metric`,
		`label_replace(shared_metric, "x", "$1", "__tenant_id__", "(.*)")`, `count({__name__=~".+"}) by (owner)`,
	} {
		reads = append(reads,
			read{"/api/v1/query", q("query", expr, "time", ts), true},
			read{"/api/v1/query_range", q("query", expr, "start", start, "end", end, "step", "15"), true},
			read{"/api/v1/query_exemplars", q("query", expr, "start", start, "end", end), false},
		)
	}
	for _, m := range []string{`{__name__=~".+"}`, `{owner=~".+"}`, `{__tenant_id__="b"}`, `{__tenant_id__="a"}`, `{owner!="x"}`} {
		reads = append(reads,
			read{"/api/v1/series", q("match[]", m, "start", start, "end", end), true},
			read{"/api/v1/labels", q("match[]", m, "start", start, "end", end), false},
			read{"/api/v1/label/owner/values", q("match[]", m, "start", start, "end", end), true},
			read{"/api/v1/label/__name__/values", q("match[]", m, "start", start, "end", end), true},
			read{"/api/v1/label/" + tenant.Label + "/values", q("match[]", m), false},
		)
	}
	reads = append(reads,
		read{"/api/v1/labels", nil, false},
		read{"/api/v1/label/owner/values", nil, true},
		read{"/api/v1/label/__name__/values", nil, true},
		read{"/api/v1/metadata", nil, false},
		read{"/api/v1/targets", nil, false},
		read{"/api/v1/status/tsdb", nil, false},
		read{"/api/v1/rules", nil, false},
		read{"/api/v1/alerts", nil, false},
		read{"/api/v1/incidents", nil, false},
		read{"/api/v1/gpus", nil, false},
		read{"/api/v1/tenants", nil, false},
		read{"/metrics", nil, false},
		read{"/", nil, false},
		read{"/federate", q("match[]", `{__name__=~".+"}`), false},
	)

	tried, cross := 0, 0
	check := func(who, other string, r read, how string, ans answer) {
		tried++
		if strings.Contains(ans.body, marker(other)) || strings.Contains(ans.body, "only_"+other+"_marker") {
			cross++
			t.Errorf("%s %s as %q reads tenant %s's data: %d %.300s", how, r.path, who, other, ans.code, ans.body)
		}
	}
	for _, r := range reads {
		enc := r.params.Encode()
		for _, who := range []string{"a", "b", ""} {
			var answers []answer
			hows := []string{"GET", "POST form", "POST query+body"}
			answers = append(answers,
				send(t, http.MethodGet, base+r.path+"?"+enc, who, "", nil),
				send(t, http.MethodPost, base+r.path, who, "application/x-www-form-urlencoded", strings.NewReader(enc)),
				// The observatorium #595 bypass: a match[] (or query) in the
				// URL and another in the body.
				send(t, http.MethodPost, base+r.path+"?"+q("match[]", `{__name__=~".+"}`, "query", `{__name__=~".+"}`).Encode(), who, "application/x-www-form-urlencoded", strings.NewReader(enc)),
			)
			for i, ans := range answers {
				switch who {
				case "":
					tried++
					if ans.code != http.StatusUnauthorized && ans.code != http.StatusForbidden {
						t.Errorf("%s %s with no tenant: %d, want 401 or 403", hows[i], r.path, ans.code)
					}
					if strings.Contains(ans.body, "_marker") {
						cross++
						t.Errorf("%s %s with no tenant reads data: %.300s", hows[i], r.path, ans.body)
					}
				default:
					other := "b"
					if who == "b" {
						other = "a"
					}
					check(who, other, r, hows[i], ans)
					if i == 0 && r.shows && ans.code == http.StatusOK && r.path != "/api/v1/query_exemplars" && !strings.Contains(ans.body, marker(who)) && !strings.Contains(ans.body, "only_"+who) &&
						strings.Contains(r.params.Get("query")+r.params.Get("match[]"), "__name__=~") && !strings.Contains(r.params.Get("query")+r.params.Get("match[]"), tenant.Label) {
						t.Errorf("GET %s?%s as %s does not show its own data: %.300s", r.path, enc, who, ans.body)
					}
				}
			}
		}
	}
	t.Logf("isolation matrix: %d requests, %d cross-tenant reads", tried, cross)

	// What each tenant sees is its own, without the tenant label, and a's
	// push group outlived b's delete.
	a = send(t, http.MethodGet, base+"/api/v1/query?"+q("query", `count by (owner) ({__name__=~"shared_metric|forged_metric|up|pushed_metric"})`, "time", ts).Encode(), "a", "", nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `{"owner":"tenant_a_marker"},"value":[`+ts+`,"4"]`, "a sees its 4 series: %s", a.body)
	a = send(t, http.MethodGet, base+"/api/v1/query?"+q("query", `pushed_metric`, "time", ts).Encode(), "b", "", nil)
	require.Contains(t, a.body, `"result":[]`, "b's deleted group: %s", a.body)
}

// tenantSpans is one trace of tenant id: a server span of its own service
// calling another, and a log record in the trace.
func tenantSpans(id string, at time.Time, trace byte) (ptrace.Traces, plog.Logs) {
	td := ptrace.NewTraces()
	tid := pcommon.TraceID{0xaa, 15: trace}
	for i, svc := range []string{"front_" + marker(id), "back_" + marker(id)} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{byte(i + 1), 7: trace})
		if i == 1 {
			sp.SetParentSpanID(pcommon.SpanID{1, 7: trace})
		}
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetName("GET /" + marker(id))
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(3-i) * 100 * time.Millisecond)))
		sp.Attributes().PutStr("request_id", "req-shared")
	}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "front_"+marker(id))
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
	lr.SetTraceID(tid)
	lr.Body().SetStr("handled for " + marker(id))
	lr.Attributes().PutStr("request_id", "req-shared")
	return td, ld
}

// TestTenancyRequestPath: spans and logs taken as tenants a and b (the
// same trace id, the same request id) are read back by each tenant as its
// own only, through the trace, log, slow and breakdown APIs, and each
// tenant's span metrics and service graph are its own series.
func TestTenancyRequestPath(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Evaluation.Enabled = false
	cfg.Tenancy.Enabled = true
	cfg.SpanMetrics.FlushInterval = 0
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	now := time.Now().Add(-time.Minute)
	for i, id := range []string{"a", "b"} {
		td, ld := tenantSpans(id, now, byte(i+1))
		ctx := tenant.WithID(t.Context(), id)
		require.NoError(t, s.Traces().ConsumeTraces(ctx, td))
		require.NoError(t, s.Logs().ConsumeLogs(ctx, ld))
	}
	require.ErrorIs(t, s.Traces().ConsumeTraces(t.Context(), ptrace.NewTraces()), tenant.ErrNoTenant, "spans with no tenant")

	tidOf := map[string]string{"a": "aa000000000000000000000000000001", "b": "aa000000000000000000000000000002"}
	tried, cross := 0, 0
	for _, path := range []string{
		"/api/v1/traces/" + tidOf["a"],
		"/api/v1/traces/" + tidOf["b"],
		"/api/v1/traces/" + tidOf["a"] + "/breakdown",
		"/api/v1/traces/" + tidOf["b"] + "/breakdown",
		"/api/v1/logs?trace_id=" + tidOf["a"],
		"/api/v1/logs?trace_id=" + tidOf["b"],
		"/api/v1/traces?service=front_" + marker("b"),
		"/api/v1/traces?service=front_" + marker("a"),
		"/api/v1/traces?correlation_id=req-shared",
		"/api/v1/traces?limit=1000",
		"/api/v1/logs?request_id=req-shared",
		"/api/v1/logs",
		"/api/v1/logs?service=front_" + marker("b"),
		"/api/v1/slow?window=1h",
		"/api/v1/query?query=" + url.QueryEscape(`{__name__=~"traces_.+"}`),
		"/api/v1/query?query=" + url.QueryEscape(`traces_service_graph_request_total`),
		"/api/v1/series?match[]=" + url.QueryEscape(`{__name__=~"traces_.+"}`),
	} {
		for _, who := range []string{"a", "b", ""} {
			ans := send(t, http.MethodGet, base+path, who, "", nil)
			tried++
			switch who {
			case "":
				if ans.code != http.StatusUnauthorized || strings.Contains(ans.body, "_marker") {
					cross++
					t.Errorf("GET %s with no tenant: %d %.200s", path, ans.code, ans.body)
				}
			default:
				other := map[string]string{"a": "b", "b": "a"}[who]
				if strings.Contains(ans.body, marker(other)) {
					cross++
					t.Errorf("GET %s as %s reads %s's: %.400s", path, who, other, ans.body)
				}
			}
		}
	}
	t.Logf("request path: %d requests, %d cross-tenant reads", tried, cross)
	for _, who := range []string{"a", "b"} {
		ans := send(t, http.MethodGet, base+"/api/v1/traces/"+tidOf[who], who, "", nil)
		require.Equal(t, http.StatusOK, ans.code, ans.body)
		require.Contains(t, ans.body, marker(who))
		ans = send(t, http.MethodGet, base+"/api/v1/logs?request_id=req-shared", who, "", nil)
		require.Contains(t, ans.body, "handled for "+marker(who))
		ans = send(t, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(`sum by (service_name) (traces_span_metrics_calls_total)`), who, "", nil)
		require.Contains(t, ans.body, "front_"+marker(who), "%s's span metrics: %s", who, ans.body)
	}
}

// TestTenancyLimits: tenant a's limits, from the runtime file, refuse
// what goes over them with the status and a reason naming the limit and
// the tenant, while tenant b, under the defaults, writes on; a change of
// the file applies without a restart.
func TestTenancyLimits(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "limits.yml")
	require.NoError(t, os.WriteFile(file, []byte("overrides:\n  a:\n    ingestion_rate: 10\n    ingestion_burst_size: 50\n    max_push_groups: 1\n    max_request_bytes: 100000\n    spans_rate: 1\n    spans_burst_size: 2\n"), 0o600))
	cfg := testConfig(t, filepath.Join(dir, "data"))
	cfg.Evaluation.Enabled = false
	cfg.Tenancy.Enabled = true
	cfg.Tenancy.LimitsFile = file
	cfg.Tenancy.LimitsReloadPeriod = model.Duration(50 * time.Millisecond)
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	base := "http://" + s.Addr().String()
	now := time.Now()

	series := func(n int) [][]string {
		var out [][]string
		for i := range n {
			out = append(out, []string{"__name__", "m", "i", fmt.Sprint(i)})
		}
		return out
	}
	require.Equal(t, http.StatusNoContent, remoteWrite(t, base, "a", now, series(40)...), "within a's burst")
	// Far over its rate of 10 samples a second: refused whole, saying why.
	r := remoteWriteAnswer(t, base, "a", now.Add(time.Second), series(40)...)
	require.Equal(t, http.StatusTooManyRequests, r.code, r.body)
	require.Contains(t, r.body, `tenant "a"`)
	require.Contains(t, r.body, "ingestion_rate")
	for i := range 20 {
		require.Equal(t, http.StatusNoContent, remoteWrite(t, base, "b", now.Add(time.Duration(i)*time.Millisecond), series(100)...), "b writes on")
	}
	// Push groups: a's second group is refused, b's are not.
	push := func(id, job string) answer {
		return send(t, http.MethodPut, base+"/metrics/job/"+job, id, "text/plain", strings.NewReader("p 1\n"))
	}
	require.Equal(t, http.StatusOK, push("a", "one").code)
	ans := push("a", "two")
	require.Equal(t, http.StatusTooManyRequests, ans.code, ans.body)
	require.Contains(t, ans.body, "max_push_groups")
	require.Equal(t, http.StatusOK, push("a", "one").code, "a's own group again")
	require.Equal(t, http.StatusOK, push("b", "one").code)
	require.Equal(t, http.StatusOK, push("b", "two").code)
	// Request size.
	ans = send(t, http.MethodPut, base+"/metrics/job/one", "a", "text/plain", strings.NewReader(strings.Repeat("# padding\n", 20000)))
	require.Equal(t, http.StatusRequestEntityTooLarge, ans.code, ans.body)
	require.Contains(t, ans.body, "max_request_bytes")
	// Spans over a's rate.
	td := ptrace.NewTraces()
	for i := range 5 {
		sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, 15: byte(i)})
		sp.SetSpanID(pcommon.SpanID{1, 7: byte(i)})
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
	}
	err := s.Traces().ConsumeTraces(tenant.WithID(t.Context(), "a"), td)
	require.ErrorContains(t, err, "spans_rate")
	require.NoError(t, s.Traces().ConsumeTraces(tenant.WithID(t.Context(), "b"), td))

	// The file changes: a's rate is lifted without a restart.
	require.NoError(t, os.WriteFile(file, []byte("overrides:\n  a:\n    ingestion_rate: 100000\n    max_query_samples: 50\n"), 0o600))
	require.Eventually(t, func() bool {
		return remoteWrite(t, base, "a", now.Add(2*time.Second), series(100)...) == http.StatusNoContent
	}, 10*time.Second, 100*time.Millisecond, "the new limits apply")
	// A query that loads more than a's max_query_samples fails, saying why;
	// a small one and b's are answered.
	big := base + "/api/v1/query?query=" + url.QueryEscape(`sum(count_over_time(m[1h]))`) + "&time=" + fmt.Sprint(now.Add(3*time.Second).Unix())
	ans = send(t, http.MethodGet, big, "a", "", nil)
	require.Equal(t, http.StatusUnprocessableEntity, ans.code, ans.body)
	require.Contains(t, ans.body, "max_query_samples")
	require.Contains(t, ans.body, `tenant \"a\"`)
	ans = send(t, http.MethodGet, big, "b", "", nil)
	require.Equal(t, http.StatusOK, ans.code, ans.body)
	small := base + "/api/v1/query?query=" + url.QueryEscape(`p`) + "&time=" + fmt.Sprint(now.Add(3*time.Second).Unix())
	ans = send(t, http.MethodGet, small, "a", "", nil)
	require.Equal(t, http.StatusOK, ans.code, ans.body)
}

func remoteWriteAnswer(t *testing.T, base, id string, at time.Time, series ...[]string) answer {
	t.Helper()
	req := &prompb.WriteRequest{}
	for _, s := range series {
		var ls []prompb.Label
		for i := 0; i < len(s); i += 2 {
			ls = append(ls, prompb.Label{Name: s[i], Value: s[i+1]})
		}
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: 1, Timestamp: at.UnixMilli()}}})
	}
	raw, err := proto.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	require.NoError(t, err)
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	if id != "" {
		hr.Header.Set(tenant.Header, id)
	}
	return do(t, hr)
}

// TestTenancyEvaluations: with tenancy.evaluate, each listed tenant's own
// evaluation reads its data alone: a GPU that fell off the bus in tenant
// a's data opens an incident that a reads and b does not, while the
// platform's evaluation, over every tenant's data, has it too.
func TestTenancyEvaluations(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	now := start.Add(30 * time.Minute)
	cfg := testConfig(t, t.TempDir())
	cfg.OTLP.GRPCListen, cfg.OTLP.HTTPListen = "", ""
	cfg.Tenancy.Enabled = true
	cfg.Tenancy.Evaluate = []string{"a", "b"}
	require.NoError(t, cfg.Validate())
	s := New(Options{Config: cfg, Now: func() time.Time { return now }, Driven: true})
	require.NoError(t, s.Start(t.Context(), Host))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()

	w := tenant.Writes{A: s.Store()}
	for _, id := range []string{"a", "b"} {
		app := w.AppenderV2(tenant.WithID(t.Context(), id))
		for at := start; !at.After(now); at = at.Add(15 * time.Second) {
			v := 0.0
			if id == "a" && at.After(now.Add(-2*time.Minute)) {
				v = 79
			}
			ls := labels.FromStrings("__name__", "DCGM_FI_DEV_XID_ERRORS", "Hostname", "gpu-node-01", "gpu", "3", "UUID", "GPU-3", "modelName", "NVIDIA A100-SXM4-80GB")
			_, err := app.Append(0, ls, 0, at.UnixMilli(), v, nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, app.Commit())
	}
	for _, id := range []string{"a", "b"} {
		require.NoError(t, s.tenantEvals[id].watcher.Cycle(t.Context(), now))
	}
	require.NoError(t, s.Watcher().Cycle(t.Context(), now))

	base := "http://" + s.Addr().String()
	a := send(t, http.MethodGet, base+"/api/v1/incidents", "a", "", nil)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "gpu-node-01", "a's own incident")
	b := send(t, http.MethodGet, base+"/api/v1/incidents", "b", "", nil)
	require.Equal(t, http.StatusOK, b.code, b.body)
	require.NotContains(t, b.body, "gpu-node-01", "b's evaluation read a's data")
	require.Equal(t, http.StatusUnauthorized, send(t, http.MethodGet, base+"/api/v1/incidents", "", "", nil).code)
	var ids []string
	for _, i := range s.tenantEvals["a"].tracker.List() {
		ids = append(ids, i.ID)
	}
	require.NotEmpty(t, ids)
	one := send(t, http.MethodGet, base+"/api/v1/incidents/"+ids[0], "b", "", nil)
	require.Equal(t, http.StatusNotFound, one.code, "b reads a's incident by id: %s", one.body)
	one = send(t, http.MethodGet, base+"/api/v1/incidents/"+ids[0], "a", "", nil)
	require.Equal(t, http.StatusOK, one.code, one.body)
	// Each tenant's rules are its own evaluation's; its alerts its own.
	rules := send(t, http.MethodGet, base+"/api/v1/rules", "a", "", nil)
	require.Equal(t, http.StatusOK, rules.code, rules.body)
	require.Contains(t, rules.body, `"groups":[{`, "a's SLO rules")
	alerts := send(t, http.MethodGet, base+"/api/v1/alerts", "a", "", nil)
	require.Contains(t, alerts.body, "gpu-node-01", "a's firing incident: %s", alerts.body)
	alerts = send(t, http.MethodGet, base+"/api/v1/alerts", "b", "", nil)
	require.NotContains(t, alerts.body, "gpu-node-01")
	// The web UI: each tenant's incident pages are its own.
	page := send(t, http.MethodGet, base+"/incidents", "a", "", nil)
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.Contains(t, page.body, ids[0])
	page = send(t, http.MethodGet, base+"/incidents", "b", "", nil)
	require.Equal(t, http.StatusOK, page.code, page.body)
	require.NotContains(t, page.body, ids[0])
	require.Equal(t, http.StatusNotFound, send(t, http.MethodGet, base+"/incidents/"+ids[0], "b", "", nil).code)
	require.Equal(t, http.StatusUnauthorized, send(t, http.MethodGet, base+"/incidents", "", "", nil).code)
	platform := false
	for _, i := range s.Tracker().List() {
		platform = platform || strings.Contains(fmt.Sprint(i.Entity), "gpu-node-01")
	}
	require.True(t, platform, "the platform's evaluation reads every tenant's data")
}
