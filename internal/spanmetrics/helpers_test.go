package spanmetrics

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// t0 is the start of the hand-built traces.
var t0 = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

// tspan is a hand-built span: ids are single bytes, times offsets from t0;
// attributes named "res:KEY" go on the resource as KEY.
type tspan struct {
	service, name string
	kind          ptrace.SpanKind
	id, parent    byte
	start, dur    time.Duration
	err           bool
	attrs         map[string]any
}

// build makes one trace (trace id tid) of spans, one resource per service.
func build(tid byte, spans ...tspan) ptrace.Traces {
	td := ptrace.NewTraces()
	addTrace(td, tid, spans...)
	return td
}

func addTrace(td ptrace.Traces, tid byte, spans ...tspan) {
	for _, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", s.service)
		attrs := map[string]any{}
		for k, v := range s.attrs {
			if r, ok := strings.CutPrefix(k, "res:"); ok {
				rs.Resource().Attributes().PutStr(r, v.(string))
				continue
			}
			attrs[k] = v
		}
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{15: tid})
		sp.SetSpanID(pcommon.SpanID{7: s.id})
		if s.parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: s.parent})
		}
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.start)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(s.start + s.dur)))
		if s.err {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		if err := sp.Attributes().FromRaw(attrs); err != nil {
			panic(err)
		}
	}
}

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

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// recorder is a storage.AppendableV2 that keeps the last committed value
// of every series and every exemplar.
type recorder struct {
	mu        sync.Mutex
	values    map[string]float64
	lbls      map[string]labels.Labels
	times     map[string]int64
	exemplars map[string][]exemplar.Exemplar
	commits   int
}

func newRecorder() *recorder {
	return &recorder{values: map[string]float64{}, lbls: map[string]labels.Labels{}, times: map[string]int64{}, exemplars: map[string][]exemplar.Exemplar{}}
}

func (r *recorder) AppenderV2(context.Context) storage.AppenderV2 { return &recApp{r: r} }

type recSample struct {
	lbls labels.Labels
	t    int64
	v    float64
	ex   []exemplar.Exemplar
}

type recApp struct {
	r       *recorder
	samples []recSample
}

func (a *recApp) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	a.samples = append(a.samples, recSample{ls, t, v, append([]exemplar.Exemplar(nil), opts.Exemplars...)})
	return 1, nil
}

func (a *recApp) Commit() error {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	for _, s := range a.samples {
		k := s.lbls.String()
		a.r.values[k] = s.v
		a.r.lbls[k] = s.lbls
		a.r.times[k] = s.t
		a.r.exemplars[k] = append(a.r.exemplars[k], s.ex...)
	}
	a.r.commits++
	return nil
}

func (a *recApp) Rollback() error { return nil }

// value is the last value of the series written as labels.String().
func (r *recorder) value(t *testing.T, series string) float64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.values[series]
	require.True(t, ok, "no series %s; have:\n%s", series, r.listLocked())
	return v
}

func (r *recorder) has(series string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.values[series]
	return ok
}

// series lists the series whose name is name.
func (r *recorder) series(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k, l := range r.lbls {
		if l.Get(model.MetricNameLabel) == name {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (r *recorder) listLocked() string {
	keys := make([]string, 0, len(r.values))
	for k := range r.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += k + "\n"
	}
	return s
}

// newTestConsumer returns a Consumer flushing after every batch into a
// recorder, on a clock at t0+1m.
func newTestConsumer(t *testing.T, mod func(*Config)) (*Consumer, *recorder, *clock) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.FlushInterval = 0
	if mod != nil {
		mod(&cfg)
	}
	rec := newRecorder()
	clk := &clock{t: t0.Add(time.Minute)}
	c, err := New(cfg, rec, clk.now, nil, nil)
	require.NoError(t, err)
	return c, rec, clk
}

// key is the labels.String() of the series name{kv...}.
func key(name string, kv ...string) string {
	return labels.FromStrings(append(kv, model.MetricNameLabel, name)...).String()
}
