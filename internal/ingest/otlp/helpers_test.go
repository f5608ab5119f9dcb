package otlp

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestMain checks that no test leaves a goroutine behind: the receiver
// serves in goroutines, and the exporters of the tests start their own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sink is a consumer of every signal that keeps what it gets; fail, when
// set, decides what each call returns.
type sink struct {
	mu      sync.Mutex
	traces  []ptrace.Traces
	logs    []plog.Logs
	metrics []pmetric.Metrics
	calls   int
	fail    func(call int) error
}

func (s *sink) consume(keep func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		if err := s.fail(s.calls); err != nil {
			return err
		}
	}
	keep()
	return nil
}

func (s *sink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	return s.consume(func() { s.traces = append(s.traces, td) })
}

func (s *sink) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	return s.consume(func() { s.logs = append(s.logs, ld) })
}

func (s *sink) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	return s.consume(func() { s.metrics = append(s.metrics, md) })
}

func (s *sink) spans() []ptrace.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ptrace.Span
	for _, td := range s.traces {
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				for k := range sss.At(j).Spans().Len() {
					out = append(out, sss.At(j).Spans().At(k))
				}
			}
		}
	}
	return out
}

func (s *sink) logRecords() []plog.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []plog.LogRecord
	for _, ld := range s.logs {
		rls := ld.ResourceLogs()
		for i := range rls.Len() {
			sls := rls.At(i).ScopeLogs()
			for j := range sls.Len() {
				for k := range sls.At(j).LogRecords().Len() {
					out = append(out, sls.At(j).LogRecords().At(k))
				}
			}
		}
	}
	return out
}

// testReceiver is a receiver serving on 127.0.0.1.
type testReceiver struct {
	*Receiver
	grpcAddr string
	httpURL  string
	reg      *prometheus.Registry
}

// startReceiver serves opts with both listeners on free ports; consumers
// left nil in opts are s. It shuts down when the test ends.
func startReceiver(t testing.TB, s *sink, opts Options) *testReceiver {
	t.Helper()
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	opts.GRPC, opts.HTTP = gl, hl
	if s != nil {
		opts.Traces, opts.Logs, opts.Metrics = s, s, s
	}
	reg := prometheus.NewPedanticRegistry()
	opts.Registerer = reg
	r, err := New(opts)
	require.NoError(t, err)
	require.NoError(t, r.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Shutdown(ctx))
	})
	return &testReceiver{Receiver: r, grpcAddr: gl.Addr().String(), httpURL: "http://" + hl.Addr().String(), reg: reg}
}

// dial returns a gRPC connection to addr, closed when the test ends.
func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

var (
	traceID = pcommon.TraceID{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c}
	spanID  = pcommon.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74}
)

// newTraces returns n spans of one service, all with valid ids unless
// invalid says how many of them lack a trace id.
func newTraces(n, invalid int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	ss := rs.ScopeSpans().AppendEmpty()
	for i := range n {
		sp := ss.Spans().AppendEmpty()
		sp.SetName("GET /cart")
		if i >= invalid {
			sp.SetTraceID(traceID)
		}
		id := spanID
		id[7] = byte(i)
		sp.SetSpanID(id)
		sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + i))
		sp.SetEndTimestamp(pcommon.Timestamp(1_700_000_000_100_000_000 + i))
		sp.Attributes().PutStr("http.route", "/cart")
		sp.Attributes().PutInt("http.response.status_code", 200)
	}
	return td
}

func newLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout")
	sl := rl.ScopeLogs().AppendEmpty()
	for range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.Body().SetStr("cart loaded")
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
	}
	return ld
}

func newMetricsData(n int, at time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "checkout")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("queue.depth")
	g := m.SetEmptyGauge()
	for i := range n {
		dp := g.DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(at))
		dp.SetIntValue(int64(i))
		dp.Attributes().PutInt("queue", int64(i))
	}
	return md
}

// counterValue returns the value of the counter name with the label pairs
// kv in reg, 0 when there is none.
func counterValue(t testing.TB, reg prometheus.Gatherer, name string, kv ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if have[kv[i]] != kv[i+1] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func logsProto(t testing.TB, n int) []byte {
	t.Helper()
	b, err := plogotlp.NewExportRequestFromLogs(newLogs(n)).MarshalProto()
	require.NoError(t, err)
	return b
}

func metricsProto(t testing.TB, n int) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(newMetricsData(n, time.Now())).MarshalProto()
	require.NoError(t, err)
	return b
}

// deepTracesProto returns an OTLP traces request of one span whose
// attribute "deep" nests lists depth levels deep, built without recursion
// (the bytes are written back to front).
func deepTracesProto(depth int) []byte {
	rev := []byte{0x01, 0x18} // AnyValue{int_value: 1}, reversed
	wrap := func(tag byte) {
		n := len(rev)
		v := protowire.AppendVarint(nil, uint64(n))
		for i := len(v) - 1; i >= 0; i-- {
			rev = append(rev, v[i])
		}
		rev = append(rev, tag)
	}
	for range depth {
		wrap(0x0a) // ArrayValue.values
		wrap(0x2a) // AnyValue.array_value
	}
	anyValue := make([]byte, len(rev))
	for i, c := range rev {
		anyValue[len(rev)-1-i] = c
	}
	kv := protowire.AppendTag(nil, 1, protowire.BytesType)
	kv = protowire.AppendString(kv, "deep")
	kv = protowire.AppendTag(kv, 2, protowire.BytesType)
	kv = protowire.AppendBytes(kv, anyValue)
	span := protowire.AppendTag(nil, 1, protowire.BytesType)
	span = protowire.AppendBytes(span, traceID[:])
	span = protowire.AppendTag(span, 2, protowire.BytesType)
	span = protowire.AppendBytes(span, spanID[:])
	span = protowire.AppendTag(span, 5, protowire.BytesType)
	span = protowire.AppendString(span, "deep")
	span = protowire.AppendTag(span, 9, protowire.BytesType)
	span = protowire.AppendBytes(span, kv)
	msg := span
	for _, num := range []protowire.Number{2, 2, 1} { // ScopeSpans.spans, ResourceSpans.scope_spans, request.resource_spans
		msg = protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), msg)
	}
	return msg
}

// twoMillionLevels is deepTracesProto(2_000_000), 19 MB, built once: deep
// enough to exhaust the stack of pdata's decoder.
var twoMillionLevels = sync.OnceValue(func() []byte { return deepTracesProto(2_000_000) })

// deepTracesJSON is deepTracesProto in OTLP JSON, alternating lists and
// maps.
func deepTracesJSON(t testing.TB, depth int) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"deep","attributes":[{"key":"deep","value":`)
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`{"arrayValue":{"values":[`)
		} else {
			b.WriteString(`{"kvlistValue":{"values":[{"key":"k","value":`)
		}
	}
	b.WriteString(`{"intValue":"1"}`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`]}}`)
		} else {
			b.WriteString(`}]}}`)
		}
	}
	b.WriteString(`}]}]}]}]}`)
	return []byte(b.String())
}

// discard is a consumer of every signal that keeps nothing.
type discard struct{}

func (*discard) ConsumeTraces(context.Context, ptrace.Traces) error    { return nil }
func (*discard) ConsumeLogs(context.Context, plog.Logs) error          { return nil }
func (*discard) ConsumeMetrics(context.Context, pmetric.Metrics) error { return nil }
