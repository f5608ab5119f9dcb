package nezha_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/realdata/nezha"
)

const header = "Time,TimeStamp,PodName,CpuUsageRate(%),PodServerLatencyP95(s),PodSuccessRate(%),NodeCpuUsageRate(%)\n"

// writeDay writes a day in the data set's layout: two pods, a row a minute
// from 10:00 for hours hours, faults at the given minutes past 10:00.
func writeDay(t *testing.T, hours int, faultMinutes ...int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "2024-05-01")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "metric"), 0o755))
	start := time.Date(2024, 5, 1, 10, 0, 19, 600_000_000, time.UTC)
	for k, pod := range []string{"cartservice-579f59597d-wc2lz", "frontend-579b9bff58-t2dbm"} {
		var b strings.Builder
		b.WriteString(header)
		for i := range hours * 60 {
			ts := start.Add(time.Duration(i) * time.Minute).Add(time.Duration(k*20) * time.Millisecond)
			// The second pod's TimeStamp column is 2×10⁸ s off, as in the data set.
			stamp := ts.Unix() + int64(k)*200_000_000
			fmt.Fprintf(&b, "%s m=+%d.1,%d,%s,%g,%g,0,%g\n", ts.Format("2006-01-02 15:04:05.999999999 -0700 MST"), i*60, stamp, pod,
				20+float64(i%3), 0.1+0.01*float64(i%2), 3.5)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "metric", pod+"_metric.csv"), []byte(b.String()), 0o644))
	}
	var faults []string
	for _, m := range faultMinutes {
		at := time.Date(2024, 5, 1, 10, m, 54, 0, time.UTC)
		faults = append(faults, fmt.Sprintf(`{"inject_time": %q, "inject_timestamp": "%d", "inject_pod": "frontend-579b9bff58-t2dbm", "inject_type": "cpu_contention"}`,
			at.Format(time.DateTime), at.Unix()+8*3600))
	}
	list := `{"10": [` + strings.Join(faults, ",") + `]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "2024-05-01-fault_list.json"), []byte(list), 0o644))
	return dir
}

func TestLoadAndWriteCase(t *testing.T) {
	d, err := nezha.Load(writeDay(t, 4, 20, 12, 28))
	require.NoError(t, err)
	require.Equal(t, "2024-05-01", d.Name)
	require.Len(t, d.Faults, 3)
	require.Equal(t, 12, d.Faults[0].At.Minute(), "sorted by time")
	require.Equal(t, "frontend", d.Faults[0].Service)
	require.Len(t, d.Pods, 2)
	require.Equal(t, "cartservice", d.Pods[0].Service)
	require.Len(t, d.Pods[1].Times, 240)
	require.Equal(t, []string{
		"3 of 3 faults have an inject_timestamp other than their inject_time: inject_time is used",
		"1 of 2 metric files have a TimeStamp column that disagrees with their Time column: rows are timed by Time",
		"PodSuccessRate(%) is 0 in every row of 2 of 2 metric files",
	}, d.Notes)

	var buf bytes.Buffer
	c, err := d.WriteCase(&buf, 1, nezha.CaseOptions{})
	require.NoError(t, err)
	require.Equal(t, time.Date(2024, 5, 1, 10, 25, 54, 0, time.UTC), c.At, "five minutes past the injection")
	require.Equal(t, 3*time.Minute, c.History, "from five minutes past the previous injection at 10:12:54")
	require.Equal(t, 8*time.Minute, c.Window)
	require.Equal(t, 2*4, c.Series)
	require.Equal(t, 2*4*8, c.Samples, "a row a minute from 10:18:19 to 10:25:19")

	f, err := fileimport.Read("case.om", &buf, fileimport.DefaultOptions(time.Now()))
	require.NoError(t, err, "the case is input vigil diagnose reads")
	st := fileimport.Sum([]*fileimport.File{f})
	require.Equal(t, time.Minute, st.Interval)
	require.LessOrEqual(t, st.MaxT, c.At.UnixMilli())
	require.GreaterOrEqual(t, st.MinT, c.At.Add(-c.Window).UnixMilli(), "the window holds the whole case")

	c0, err := d.WriteCase(&buf, 0, nezha.CaseOptions{})
	require.NoError(t, err)
	require.Equal(t, 12*time.Minute+54*time.Second-19*time.Second-600*time.Millisecond, c0.History, "the first fault: from the first row")
}

func TestWriteCaseErrors(t *testing.T) {
	d, err := nezha.Load(writeDay(t, 1, 10, 12))
	require.NoError(t, err)
	var buf bytes.Buffer
	c, err := d.WriteCase(&buf, 1, nezha.CaseOptions{})
	require.NoError(t, err)
	require.Equal(t, time.Minute, c.History, "a minute: the previous injection was two minutes before")
	_, err = d.WriteCase(&buf, 5, nezha.CaseOptions{})
	require.ErrorContains(t, err, "has 2 faults, not 6")
}

func TestLoadErrors(t *testing.T) {
	dir := writeDay(t, 1, 10)
	path := filepath.Join(dir, "metric", "cartservice-579f59597d-wc2lz_metric.csv")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte(",3.5\n"), []byte(",x\n"), 1), 0o644))
	_, err = nezha.Load(dir)
	require.ErrorContains(t, err, `cartservice-579f59597d-wc2lz_metric.csv:2: NodeCpuUsageRate(%): "x" is not a number`)

	dir = writeDay(t, 1, 10)
	require.NoError(t, os.Remove(filepath.Join(dir, "metric", "frontend-579b9bff58-t2dbm_metric.csv")))
	_, err = nezha.Load(dir)
	require.ErrorContains(t, err, "injects pod frontend-579b9bff58-t2dbm, which has no metric file")

	_, err = nezha.Load(t.TempDir())
	require.ErrorContains(t, err, "want one *-fault_list.json, found 0")
}

func TestMetricName(t *testing.T) {
	for col, want := range map[string]string{
		"PodClientLatencyP90(s)": "nezha_pod_client_latency_p90_seconds",
		"CpuUsageRate(%)":        "nezha_cpu_usage_rate_percent",
		"CpuUsage(m)":            "nezha_cpu_usage_millicores",
		"MemoryUsage(Mi)":        "nezha_memory_usage_mebibytes",
		"SyscallRead":            "nezha_syscall_read",
		"PodWorkload(Ops)":       "nezha_pod_workload_ops",
	} {
		require.Equal(t, want, nezha.MetricName(col), col)
	}
}

// TestLatencySummaries: each side's latency quantile columns become one
// Prometheus summary, a quantile label per column, with the pod's requests
// (its workload × the rows' interval, summed) as the summary's _count, so
// the diagnosis can tell a quantile of a handful of requests.
func TestLatencySummaries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2024-05-01")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "metric"), 0o755))
	start := time.Date(2024, 5, 1, 10, 0, 19, 0, time.UTC)
	var b strings.Builder
	b.WriteString("Time,TimeStamp,PodName,PodClientLatencyP90(s),PodServerLatencyP90(s),PodClientLatencyP99(s),PodWorkload(Ops)\n")
	for i := range 20 {
		ts := start.Add(time.Duration(i) * time.Minute)
		fmt.Fprintf(&b, "%s m=+1.0,%d,cartservice-579f59597d-wc2lz,0.01,0.02,0.5,0.2\n", ts.Format("2006-01-02 15:04:05.999999999 -0700 MST"), ts.Unix())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metric", "cartservice-579f59597d-wc2lz_metric.csv"), []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "2024-05-01-fault_list.json"),
		[]byte(`{"10": [{"inject_time": "2024-05-01 10:10:54", "inject_timestamp": "1", "inject_pod": "cartservice-579f59597d-wc2lz", "inject_type": "return"}]}`), 0o644))
	d, err := nezha.Load(dir)
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = d.WriteCase(&buf, 0, nezha.CaseOptions{})
	require.NoError(t, err)
	out := buf.String()
	require.Equal(t, 1, strings.Count(out, "# TYPE nezha_pod_client_latency_seconds summary"), "one family for both client columns")
	require.Contains(t, out, "# TYPE nezha_pod_server_latency_seconds summary")
	require.Contains(t, out, `nezha_pod_client_latency_seconds{service="cartservice",pod="cartservice-579f59597d-wc2lz",quantile="0.9"} 0.01 1714557679`)
	require.Contains(t, out, `nezha_pod_client_latency_seconds{service="cartservice",pod="cartservice-579f59597d-wc2lz",quantile="0.99"} 0.5 1714557679`)
	require.Contains(t, out, `nezha_pod_client_latency_seconds_count{service="cartservice",pod="cartservice-579f59597d-wc2lz"} 12 1714557679`,
		"0.2 requests/s for the minute since the row before: 12")
	require.Contains(t, out, "# TYPE nezha_pod_workload_ops gauge", "the workload stays a column of its own")
	_, err = fileimport.Read("case.om", &buf, fileimport.DefaultOptions(time.Now()))
	require.NoError(t, err, "vigil diagnose reads it")
}

// TestSharedDays reads the days in ../shared/realdata/nezha when they are
// there (CI has them) and writes every fault's case.
func TestSharedDays(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "realdata", "nezha")
	for day, faults := range map[string]int{"2022-08-22": 24, "2023-01-29": 28} {
		dir := filepath.Join(root, day)
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("%s is not here", dir)
		}
		d, err := nezha.Load(dir)
		require.NoError(t, err)
		require.Len(t, d.Faults, faults)
		t.Logf("%s: %d pods, %d faults; %s", day, len(d.Pods), len(d.Faults), strings.Join(d.Notes, "; "))
		for i := range d.Faults {
			var buf bytes.Buffer
			c, err := d.WriteCase(&buf, i, nezha.CaseOptions{})
			require.NoError(t, err)
			require.Positive(t, c.Samples)
		}
	}
}

// TestLogs: a day's log lines become OTLP log records, a resource per pod,
// the body the container's text with its trace and span; damaged rows are
// skipped and lines two files hold kept once, both reported; what vigil
// diagnose reads from them counts the templates.
func TestLogs(t *testing.T) {
	dir := writeDay(t, 4, 12, 20, 28)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "log"), 0o755))
	line := func(at time.Time, pod, msg string) string {
		return fmt.Sprintf("%s,%d,10.0.0.1,%s,server,%032x,%016x,\"{\"\"log\"\":\"\"%s\\n\"\",\"\"stream\"\":\"\"stdout\"\"}\"\n",
			at.Format(time.RFC3339Nano), at.UnixNano(), pod, at.Unix(), at.Unix(), msg)
	}
	at := time.Date(2024, 5, 1, 10, 22, 30, 0, time.UTC)
	head := "Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\n"
	first := line(at, "frontend-579b9bff58-t2dbm", "10:22:30.001 ERROR f.s.CartImpl#12 cart 17 failed")
	text := head + first +
		line(at.Add(time.Second), "frontend-579b9bff58-t2dbm", "10:22:31.001 ERROR f.s.CartImpl#12 cart 18 failed") +
		line(at.Add(2*time.Second), "frontend-579b9bff58-t2dbm", "no layout at all") +
		"2024-05-01T10:22:33Z,1,x,\"broken\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "log", "10_22_log.csv"), []byte(text), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "log", "10_23_log.csv"), []byte(head+first), 0o644))
	d, err := nezha.Load(dir)
	require.NoError(t, err)
	require.Contains(t, d.Notes, "1 rows of the log files are damaged CSV (two lines run together): skipped")
	require.Contains(t, d.Notes, "1 log lines are in two files (their minutes overlap): kept once")
	require.True(t, d.HasLogs())
	require.Equal(t, 3, d.CountLogs(at, at.Add(time.Minute)))

	var buf bytes.Buffer
	records, lines, err := d.WriteLogs(&buf, at, at.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, 3, records)
	require.Equal(t, 3, lines, "a second apart: a line each, as the batch processor's 200 ms cut them")
	var um plog.JSONUnmarshaler
	ld, err := um.UnmarshalLogs(bytes.SplitN(buf.Bytes(), []byte("\n"), 2)[0])
	require.NoError(t, err)
	rl := ld.ResourceLogs().At(0)
	svc, _ := rl.Resource().Attributes().Get("service.name")
	require.Equal(t, "frontend", svc.Str())
	lr := rl.ScopeLogs().At(0).LogRecords().At(0)
	require.Equal(t, "10:22:30.001 ERROR f.s.CartImpl#12 cart 17 failed", lr.Body().Str(), "the text without its newline")
	require.Equal(t, at, lr.Timestamp().AsTime())
	require.Equal(t, fmt.Sprintf("%032x", at.Unix()), lr.TraceID().String())

	opts := fileimport.DefaultOptions(at.Add(time.Minute))
	opts.DeriveFromOTLP = true
	f, err := fileimport.Read("case.logs.otlp.json", &buf, opts)
	require.NoError(t, err, "vigil diagnose reads it")
	tmpl := map[string]float64{}
	require.NoError(t, f.Each(func(lset labels.Labels, _ int64, v float64) error {
		if lset.Get("__name__") == "vigil_log_templates_total" {
			k := lset.Get("service") + " " + lset.Get("severity") + " " + lset.Get("template")
			tmpl[k] = max(tmpl[k], v)
		}
		return nil
	}))
	require.Equal(t, map[string]float64{"frontend error f.s.CartImpl#12 cart <*> failed": 2}, tmpl,
		"the two errors one template; the line with no level not mined")
}

// TestGraph: destination_50.csv's calls become servicegraph series, the
// server's requests each minute behind each call's latency.
func TestGraph(t *testing.T) {
	dir := writeDay(t, 4, 12, 20, 28)
	var b strings.Builder
	b.WriteString("time,timestamp,frontend_cartservice,cartservice_frontend\n")
	start := time.Date(2024, 5, 1, 10, 0, 19, 900_000_000, time.UTC)
	for i := range 240 {
		ts := start.Add(time.Duration(i) * time.Minute)
		fmt.Fprintf(&b, "%s m=+1.0,%d,0.004,\n", ts.Format("2006-01-02 15:04:05.999999999 -0700 MST"), ts.Unix())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metric", "destination_50.csv"), []byte(b.String()), 0o644))
	d, err := nezha.Load(dir)
	require.NoError(t, err)
	require.Len(t, d.Edges, 2)
	require.Equal(t, "cartservice", d.Edges[0].Server)

	var buf bytes.Buffer
	c, err := d.WriteCase(&buf, 1, nezha.CaseOptions{Graph: true})
	require.NoError(t, err)
	out := buf.String()
	require.Contains(t, out, `traces_service_graph_request_total{client="frontend",server="cartservice"} 1 `, "no workload column: one request a minute")
	require.Contains(t, out, `traces_service_graph_request_server_seconds_sum{client="frontend",server="cartservice"} 0.008 `)
	require.Contains(t, out, `traces_service_graph_request_total{client="cartservice",server="frontend"} 8 `, "no latency: requests still count")
	require.NotContains(t, out, "traces_service_graph_request_client_seconds_sum", "no source_50.csv: no client side")
	f, err := fileimport.Read("case.om", &buf, fileimport.DefaultOptions(time.Now()))
	require.NoError(t, err, "vigil diagnose reads it")
	require.Positive(t, c.Series)
	require.Greater(t, f.Series, 2*4)

	// The client's side (source_50.csv), its rows a fraction of a second
	// later: the client seconds of the calls it has, matched by time.
	b.Reset()
	b.WriteString("time,timestamp,frontend_cartservice,frontend_adservice\n")
	for i := range 240 {
		ts := start.Add(time.Duration(i)*time.Minute + 300*time.Millisecond)
		fmt.Fprintf(&b, "%s m=+1.0,%d,0.006,0.1\n", ts.Format("2006-01-02 15:04:05.999999999 -0700 MST"), ts.Unix())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metric", "source_50.csv"), []byte(b.String()), 0o644))
	d, err = nezha.Load(dir)
	require.NoError(t, err)
	require.Len(t, d.Edges, 2, "the calls are the server side's: adservice has none there")
	require.Equal(t, 0.006, d.Edges[0].ClientLatency[10])
	require.True(t, math.IsNaN(d.Edges[1].ClientLatency[10]), "cartservice → frontend has no client side")
	buf.Reset()
	_, err = d.WriteCase(&buf, 1, nezha.CaseOptions{Graph: true})
	require.NoError(t, err)
	out = buf.String()
	require.Contains(t, out, `traces_service_graph_request_client_seconds_sum{client="frontend",server="cartservice"} 0.012 `)
	require.NotContains(t, out, `traces_service_graph_request_client_seconds_sum{client="cartservice"`)
	_, err = fileimport.Read("case.om", &buf, fileimport.DefaultOptions(time.Now()))
	require.NoError(t, err, "vigil diagnose reads it")
}
