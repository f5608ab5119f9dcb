package reqpath_test

import (
	"bufio"
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// runStart is the first instant of every test run.
func runStart() time.Time { return time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC) }

// span is a decoded span with its resource's attributes.
type span struct {
	trace, id, parent string
	service, version  string
	pod, node         string
	name              string
	kind              ptrace.SpanKind
	start, end        time.Time
	err               bool
	res, attrs        map[string]any
}

func (s span) dur() time.Duration { return s.end.Sub(s.start) }

// logLine is a decoded log record with its resource's attributes.
type logLine struct {
	trace, span string
	service     string
	t           time.Time
	sev         plog.SeverityNumber
	body        string
	attrs       map[string]any
}

// dataset is everything one run wrote.
type dataset struct {
	spans []span
	logs  []logLine
}

func (d *dataset) addTraces(td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes().AsRaw()
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				d.spans = append(d.spans, span{
					trace: s.TraceID().String(), id: s.SpanID().String(), parent: s.ParentSpanID().String(),
					service: str(res["service.name"]), version: str(res["service.version"]),
					pod: str(res["k8s.pod.name"]), node: str(res["k8s.node.name"]),
					name: s.Name(), kind: s.Kind(), start: s.StartTimestamp().AsTime(), end: s.EndTimestamp().AsTime(),
					err: s.Status().Code() == ptrace.StatusCodeError, res: res, attrs: s.Attributes().AsRaw(),
				})
			}
		}
	}
}

func (d *dataset) addLogs(ld plog.Logs) {
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes()
		svc, _ := res.Get("service.name")
		for _, sl := range rl.ScopeLogs().All() {
			for _, l := range sl.LogRecords().All() {
				d.logs = append(d.logs, logLine{
					trace: l.TraceID().String(), span: l.SpanID().String(), service: svc.Str(),
					t: l.Timestamp().AsTime(), sev: l.SeverityNumber(), body: l.Body().Str(), attrs: l.Attributes().AsRaw(),
				})
			}
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// generate runs cfg in memory.
func generate(t testing.TB, cfg reqpath.Config) *dataset {
	t.Helper()
	g, err := reqpath.New(cfg)
	require.NoError(t, err)
	d := &dataset{}
	for b := range g.Batches() {
		d.addTraces(b.Traces)
		d.addLogs(b.Logs)
	}
	return d
}

// writeFiles runs cfg into two buffers.
func writeFiles(t testing.TB, cfg reqpath.Config) ([]byte, []byte) {
	t.Helper()
	var tb, lb bytes.Buffer
	require.NoError(t, reqpath.WriteFiles(cfg, &tb, &lb))
	return tb.Bytes(), lb.Bytes()
}

// decodeFiles decodes every line of the two files with pdata.
func decodeFiles(t testing.TB, traces, logs []byte) *dataset {
	t.Helper()
	d := &dataset{}
	lines := func(b []byte, each func(n int, line []byte)) {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<30)
		n := 0
		for sc.Scan() {
			n++
			each(n, sc.Bytes())
		}
		require.NoError(t, sc.Err())
		require.Positive(t, n)
	}
	var tu ptrace.JSONUnmarshaler
	lines(traces, func(n int, line []byte) {
		td, err := tu.UnmarshalTraces(line)
		require.NoError(t, err, "traces line %d", n)
		require.Positive(t, td.SpanCount(), "traces line %d", n)
		d.addTraces(td)
	})
	var lu plog.JSONUnmarshaler
	lines(logs, func(n int, line []byte) {
		ld, err := lu.UnmarshalLogs(line)
		require.NoError(t, err, "logs line %d", n)
		require.Positive(t, ld.LogRecordCount(), "logs line %d", n)
		d.addLogs(ld)
	})
	return d
}

// isRoot tells a span without a parent.
func isRoot(s span) bool { return s.parent == (pcommon.SpanID{}).String() }

// roots are the spans without a parent, by trace.
func (d *dataset) roots() map[string]span {
	out := map[string]span{}
	for _, s := range d.spans {
		if isRoot(s) {
			out[s.trace] = s
		}
	}
	return out
}

// where keeps the spans that match.
func (d *dataset) where(keep func(span) bool) []span {
	var out []span
	for _, s := range d.spans {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// server keeps the SERVER spans of service.
func server(service string) func(span) bool {
	return func(s span) bool { return s.service == service && s.kind == ptrace.SpanKindServer }
}

// between keeps spans that start in [from, to).
func between(keep func(span) bool, from, to time.Time) func(span) bool {
	return func(s span) bool { return keep(s) && !s.start.Before(from) && s.start.Before(to) }
}

// durations are the spans' durations in seconds.
func durations(spans []span) []float64 {
	out := make([]float64, len(spans))
	for i, s := range spans {
		out[i] = s.dur().Seconds()
	}
	return out
}

// floatAttr is a numeric attribute of each span that has it.
func floatAttr(spans []span, key string) []float64 {
	var out []float64
	for _, s := range spans {
		if v, ok := s.attrs[key].(float64); ok {
			out = append(out, v)
		}
	}
	return out
}

// quantile is the q-quantile of xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// logSpread is the standard deviation of the logarithms of xs.
func logSpread(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		l := math.Log(x)
		sum += l
		sq += l * l
	}
	n := float64(len(xs))
	return math.Sqrt(sq/n - (sum/n)*(sum/n))
}

// errorRate is the share of spans with status Error.
func errorRate(spans []span) float64 {
	n := 0
	for _, s := range spans {
		if s.err {
			n++
		}
	}
	return float64(n) / float64(len(spans))
}
