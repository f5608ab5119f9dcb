package logsignals

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the test's start on the clock.
var t0 = time.Date(2026, 11, 12, 2, 47, 0, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// res is a resource's attributes.
type res map[string]string

// rec is one log record: its body and, when set, its time and span (a
// span ID of that byte in trace 1).
type rec struct {
	body string
	at   time.Time
	span byte
}

// logsOf builds logs with one resource per entry of batches.
func logsOf(batches ...struct {
	res  res
	recs []rec
}) plog.Logs {
	ld := plog.NewLogs()
	for _, b := range batches {
		rl := ld.ResourceLogs().AppendEmpty()
		for k, v := range b.res {
			rl.Resource().Attributes().PutStr(k, v)
		}
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		for _, r := range b.recs {
			lr := lrs.AppendEmpty()
			lr.Body().SetStr(r.body)
			if !r.at.IsZero() {
				lr.SetTimestamp(pcommon.NewTimestampFromTime(r.at))
			}
			if r.span != 0 {
				lr.SetTraceID(pcommon.TraceID{1})
				lr.SetSpanID(pcommon.SpanID{r.span})
			}
		}
	}
	return ld
}

// one is logsOf for one resource.
func one(r res, recs ...rec) plog.Logs {
	return logsOf(struct {
		res  res
		recs []rec
	}{r, recs})
}

const (
	lineXID74   = "NVRM: Xid (PCI:0000:3b:00): 74, pid=48211, name=pt_main_thread, NVLink: fatal error detected on link 4"
	lineXID79   = "NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	lineTimeout = "[rank3]:[E1112 02:47:31.514301828 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600047 milliseconds before timing out."
	lineOOM     = "Memory cgroup out of memory: Killed process 48211 (python3) total-vm:98304128kB, anon-rss:66060288kB"
	line500     = `INFO:     10.42.3.15:41584 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error`
	line200     = `INFO:     10.42.3.15:41584 - "POST /v1/chat/completions HTTP/1.1" 200 OK`
)

// openStore opens an embedded store on clk.
func openStore(t *testing.T, clk *clock) *store.Embedded {
	t.Helper()
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clk.now, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// query evaluates q at ts; the result maps each series' labels (without
// __name__, sorted "k=v" joined by ",") to its value.
func query(t *testing.T, s store.Store, q string, ts time.Time) map[string]float64 {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, ts)
	require.NoError(t, err, q)
	out := map[string]float64{}
	for _, smp := range v.(promql.Vector) {
		var parts []string
		smp.Metric.Range(func(l labels.Label) {
			if l.Name != "__name__" {
				parts = append(parts, l.Name+"="+l.Value)
			}
		})
		sort.Strings(parts)
		out[strings.Join(parts, ",")] = smp.F
	}
	return out
}

// eventsConfig is the defaults with the templates of warning records only,
// none of which the event tests write: the series are the events'.
func eventsConfig() Config {
	cfg := DefaultConfig()
	cfg.Templates.MinSeverity = "warn"
	return cfg
}

func newConsumer(t *testing.T, cfg Config, app storage.AppendableV2, clk *clock, reg prometheus.Registerer) *Consumer {
	t.Helper()
	c, err := New(cfg, app, clk.now, nil, reg)
	require.NoError(t, err)
	return c
}

func TestCountersInTheStore(t *testing.T) {
	clk := &clock{t: t0}
	st := openStore(t, clk)
	reg := prometheus.NewRegistry()
	c := newConsumer(t, eventsConfig(), st, clk, reg)

	node6 := res{"k8s.node.name": "gpu-node-06", "host.name": "ignored-when-k8s-node-set", "k8s.namespace.name": "ml-train",
		"k8s.pod.name": "llm-pretrain-worker-6", "service.name": "llm-pretrain"}
	kernel2 := res{"host.name": "gpu-node-02"}
	vllm := res{"k8s.node.name": "gpu-node-01", "k8s.namespace.name": "inference", "k8s.pod.name": "vllm-0", "service.name": "vllm"}

	// Batch 1 at 02:47:10: an XID and a timeout on node 6, an XID 79 in
	// node 2's kernel log, a 500 and a 200 from vLLM.
	clk.set(t0.Add(10 * time.Second))
	require.NoError(t, c.ConsumeLogs(t.Context(), logsOf(
		struct {
			res  res
			recs []rec
		}{node6, []rec{{body: lineXID74}, {body: lineTimeout}, {body: "INFO step 48212 loss 1.87"}}},
		struct {
			res  res
			recs []rec
		}{kernel2, []rec{{body: lineXID79}}},
		struct {
			res  res
			recs []rec
		}{vllm, []rec{{body: line500}, {body: line200}}},
	)))
	at1 := t0.Add(10 * time.Second)
	got := query(t, st, "vigil_log_events_total", at1)
	require.Equal(t, map[string]float64{
		"event=xid,namespace=ml-train,node=gpu-node-06,pod=llm-pretrain-worker-6,service=llm-pretrain":          1,
		"event=nccl_timeout,namespace=ml-train,node=gpu-node-06,pod=llm-pretrain-worker-6,service=llm-pretrain": 1,
		"event=xid,node=gpu-node-02":                                                  1,
		"event=gpu_fell_off_bus,node=gpu-node-02":                                     1,
		"event=http_5xx,namespace=inference,node=gpu-node-01,pod=vllm-0,service=vllm": 1,
	}, got)
	require.Equal(t, map[string]float64{
		"node=gpu-node-06,pci=0000:3b:00,xid=74": 1,
		"node=gpu-node-02,pci=0000:44:00,xid=79": 1,
	}, query(t, st, "vigil_log_xid_total", at1))

	// Batch 2 a minute later: two more timeouts on node 6, one more 500.
	clk.set(t0.Add(70 * time.Second))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(node6, rec{body: lineTimeout}, rec{body: lineTimeout})))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(vllm, rec{body: line500})))
	// The second batch at the same clock time goes 1 ms later.
	at2 := t0.Add(71 * time.Second)
	got = query(t, st, `vigil_log_events_total{event=~"nccl_timeout|http_5xx|xid"}`, at2)
	require.Equal(t, 3.0, got["event=nccl_timeout,namespace=ml-train,node=gpu-node-06,pod=llm-pretrain-worker-6,service=llm-pretrain"])
	require.Equal(t, 2.0, got["event=http_5xx,namespace=inference,node=gpu-node-01,pod=vllm-0,service=vllm"])
	require.Equal(t, 1.0, got["event=xid,node=gpu-node-02"], "series not updated keep their last value within the lookback")

	// increase() sees the first event thanks to the leading zero, and
	// the later ones.
	inc := query(t, st, `increase(vigil_log_events_total{event="nccl_timeout"}[5m])`, at2)
	require.Len(t, inc, 1)
	for _, v := range inc {
		require.Greater(t, v, 2.0, "increase over the first count and the two later")
	}
	inc = query(t, st, `increase(vigil_log_xid_total{xid="79"}[5m])`, at1)
	require.Len(t, inc, 1, "a single event is visible to increase()")

	require.Equal(t, 9.0, testutil.ToFloat64(c.m.records))
	require.Equal(t, 7.0, testutil.ToFloat64(c.m.matched))
	require.Equal(t, 7.0, testutil.ToFloat64(c.m.series))
	require.Equal(t, 3.0, testutil.ToFloat64(c.m.writes.WithLabelValues("ok")))
}

func TestTimestamps(t *testing.T) {
	clk := &clock{t: t0.Add(-time.Hour)}
	app := &memApp{}
	c := newConsumer(t, DefaultConfig(), app, clk, nil)
	clk.set(t0.Add(time.Hour))
	node := res{"host.name": "gpu-node-03"}

	// The batch's newest record time, not the clock.
	require.NoError(t, c.ConsumeLogs(t.Context(), one(node,
		rec{body: lineOOM, at: t0.Add(time.Minute)}, rec{body: lineOOM, at: t0.Add(2 * time.Minute)})))
	s := app.last("vigil_log_events_total")
	require.Equal(t, t0.Add(2*time.Minute).UnixMilli(), s.t)
	require.Equal(t, 2.0, s.v)
	zero := app.samples[0]
	require.Equal(t, 0.0, zero.v)
	require.Equal(t, t0.Add(2*time.Minute-maxZeroGap).UnixMilli(), zero.t, "the leading zero at most 5 min before")

	// A record from the future is capped at the clock.
	require.NoError(t, c.ConsumeLogs(t.Context(), one(node, rec{body: lineOOM, at: t0.Add(48 * time.Hour)})))
	require.Equal(t, t0.Add(time.Hour).UnixMilli(), app.last("vigil_log_events_total").t)

	// An older record still goes after the previous write.
	require.NoError(t, c.ConsumeLogs(t.Context(), one(node, rec{body: lineOOM, at: t0})))
	s = app.last("vigil_log_events_total")
	require.Equal(t, t0.Add(time.Hour).UnixMilli()+1, s.t)
	require.Equal(t, 4.0, s.v)

	// No timestamp: the clock.
	clk.set(t0.Add(time.Hour + time.Minute))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "gpu-node-04"}, rec{body: lineOOM})))
	s = app.last("vigil_log_events_total")
	require.Equal(t, t0.Add(time.Hour+time.Minute).UnixMilli(), s.t)
	require.Equal(t, `{__name__="vigil_log_events_total", event="oom_killed", node="gpu-node-04"}`, s.lbls.String())
	zero = app.samples[len(app.samples)-2]
	require.Equal(t, 0.0, zero.v)
	require.Equal(t, t0.Add(time.Hour).UnixMilli()+1, zero.t, "a new series' zero at the previous write")
}

func TestOnlyChangedSeriesAreWritten(t *testing.T) {
	clk := &clock{t: t0}
	app := &memApp{}
	c := newConsumer(t, eventsConfig(), app, clk, nil)
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "a"}, rec{body: lineOOM})))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "b"}, rec{body: lineOOM})))
	n := len(app.samples)
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "b"}, rec{body: lineOOM}, rec{body: line200})))
	require.Len(t, app.samples, n+1, "one sample: b's, once per batch")
	require.Equal(t, 2.0, app.samples[n].v)
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "b"}, rec{body: line200})))
	require.Len(t, app.samples, n+1, "a batch without events writes nothing")
}

func TestCardinalityBound(t *testing.T) {
	clk := &clock{t: t0}
	app := &memApp{}
	reg := prometheus.NewRegistry()
	c := newConsumer(t, Config{MaxSeries: 3}, app, clk, reg)
	for _, pod := range []string{"p0", "p1", "p2", "p3", "p4"} {
		require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"k8s.pod.name": pod, "host.name": "n" + pod}, rec{body: lineXID74})))
	}
	// p0: xid event + xid series (2); p1: xid event (3); p1's xid
	// series and everything of p2..p4 overflow.
	got := map[string]float64{}
	for _, s := range app.samples {
		got[s.lbls.String()] = s.v
	}
	require.Equal(t, 1.0, got[`{__name__="vigil_log_events_total", event="xid", node="np0", pod="p0"}`])
	require.Equal(t, 1.0, got[`{__name__="vigil_log_events_total", event="xid", node="np1", pod="p1"}`])
	require.Equal(t, 1.0, got[`{__name__="vigil_log_xid_total", node="np0", pci="0000:3b:00", xid="74"}`])
	require.Equal(t, 3.0, got[`{__name__="vigil_log_events_total", event="xid", otel_metric_overflow="true"}`])
	require.Equal(t, 4.0, got[`{__name__="vigil_log_xid_total", otel_metric_overflow="true"}`])
	require.Len(t, got, 5)
	require.Equal(t, 7.0, testutil.ToFloat64(c.m.overflow))
	require.Equal(t, 5.0, testutil.ToFloat64(c.m.series))
}

func TestFailedWriteIsRetriedNotReturned(t *testing.T) {
	clk := &clock{t: t0}
	app := &memApp{failCommit: errors.New("disk full")}
	c := newConsumer(t, DefaultConfig(), app, clk, prometheus.NewRegistry())
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "a"}, rec{body: lineOOM})),
		"a failed write is not the client's problem: a retry would count twice")
	require.Empty(t, app.committed)
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.writes.WithLabelValues("error")))

	app.failCommit = nil
	clk.set(t0.Add(time.Second))
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "b"}, rec{body: lineOOM})))
	got := map[string]float64{}
	for _, s := range app.committed {
		got[s.lbls.Get("node")] = s.v
	}
	require.Equal(t, map[string]float64{"a": 1, "b": 1}, got, "a's total is written with the next batch")
}

func TestRejectedSamplesAreSkipped(t *testing.T) {
	clk := &clock{t: t0}
	app := &memApp{reject: storage.ErrOutOfBounds}
	c := newConsumer(t, DefaultConfig(), app, clk, prometheus.NewRegistry())
	require.NoError(t, c.ConsumeLogs(t.Context(), one(res{"host.name": "a"}, rec{body: lineOOM})))
	require.Equal(t, 2.0, testutil.ToFloat64(c.m.rejected))
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.writes.WithLabelValues("ok")))
}

func TestConcurrentBatches(t *testing.T) {
	clk := &clock{t: t0}
	st := openStore(t, clk)
	c := newConsumer(t, DefaultConfig(), st, clk, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				require.NoError(t, c.ConsumeLogs(context.Background(), one(res{"host.name": "n"}, rec{body: lineOOM}, rec{body: lineXID79})))
			}
		})
	}
	wg.Wait()
	got := query(t, st, "vigil_log_events_total", t0.Add(time.Second))
	require.Equal(t, map[string]float64{
		"event=oom_killed,node=n": 200, "event=xid,node=n": 200, "event=gpu_fell_off_bus,node=n": 200,
	}, got)
}

func TestConfig(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	err := Config{}.Validate()
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "max_series", fe.Field)
	require.EqualError(t, err, "max_series: must be at least 1, got 0")
	_, err = New(Config{MaxSeries: -1}, &memApp{}, nil, nil, nil)
	require.ErrorContains(t, err, "max_series")
	_, err = New(DefaultConfig(), nil, nil, nil, nil)
	require.Error(t, err)
}

// memApp is an AppendableV2 that keeps what it is given.
type memApp struct {
	mu         sync.Mutex
	samples    []memSample // appended
	committed  []memSample
	failCommit error
	reject     error
}

type memSample struct {
	lbls labels.Labels
	t    int64
	v    float64
}

func (m *memApp) AppenderV2(context.Context) storage.AppenderV2 { return &memAppender{m: m} }

// last returns the last appended sample of the metric.
func (m *memApp) last(name string) memSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.samples) - 1; i >= 0; i-- {
		if m.samples[i].lbls.Get("__name__") == name {
			return m.samples[i]
		}
	}
	return memSample{}
}

type memAppender struct {
	m       *memApp
	pending []memSample
}

func (a *memAppender) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	if a.m.reject != nil {
		return 0, a.m.reject
	}
	a.pending = append(a.pending, memSample{ls, t, v})
	a.m.mu.Lock()
	a.m.samples = append(a.m.samples, memSample{ls, t, v})
	a.m.mu.Unlock()
	return 0, nil
}

func (a *memAppender) Commit() error {
	if a.m.failCommit != nil {
		return a.m.failCommit
	}
	a.m.mu.Lock()
	a.m.committed = append(a.m.committed, a.pending...)
	a.m.mu.Unlock()
	return nil
}

func (a *memAppender) Rollback() error { return nil }
