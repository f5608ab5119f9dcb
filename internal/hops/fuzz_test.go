package hops

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fuzzTrace builds a span tree from data, 7 bytes a span: id, parent (0:
// none), start, duration (signed: an end before the start), kind, service,
// and flags (error, FOLLOWS_FROM link to the parent or to span 1, another
// trace id, a peer.service).
func fuzzTrace(data []byte) ptrace.Traces {
	td := ptrace.NewTraces()
	for len(data) >= 7 {
		b := data[:7]
		data = data[7:]
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", string('a'+rune(b[5]%5)))
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		tid := pcommon.TraceID{15: 1}
		if b[6]&8 != 0 {
			tid[0] = 2
		}
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{7: b[0]%24 + 1})
		if p := b[1] % 26; p != 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: p})
		}
		start := t0.Add(time.Duration(b[2]) * ms)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(int8(b[3])) * ms)))
		sp.SetKind(ptrace.SpanKind(b[4] % 6))
		if b[6]&1 != 0 {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		if b[6]&6 != 0 {
			l := sp.Links().AppendEmpty()
			l.SetTraceID(tid)
			to := sp.ParentSpanID()
			if b[6]&4 != 0 {
				to = pcommon.SpanID{7: 1}
			}
			l.SetSpanID(to)
			l.Attributes().PutStr("opentracing.ref_type", "follows_from")
		}
		if b[6]&16 != 0 {
			sp.Attributes().PutStr("peer.service", "ext")
		}
	}
	return td
}

// FuzzBreakdown checks that no span tree makes Breakdown panic, and that
// what it returns holds together: the path partitions the root, no span
// is on it for longer than it lasts, and every span of the trace is a row.
//
//	go test -run '^$' -fuzz FuzzBreakdown -fuzztime 1m ./internal/hops/
func FuzzBreakdown(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 100, 2, 0, 0, 2, 1, 10, 30, 3, 0, 0, 3, 2, 12, 26, 2, 1, 0, 4, 1, 50, 40, 1, 0, 0})
	f.Add([]byte{1, 2, 0, 10, 1, 0, 0, 2, 1, 0, 10, 1, 0, 0})                            // a cycle
	f.Add([]byte{1, 0, 50, 10, 3, 0, 0, 2, 1, 0, 100, 2, 1, 16, 3, 1, 60, 200, 4, 2, 6}) // skew, async
	f.Fuzz(func(t *testing.T, data []byte) {
		td := fuzzTrace(data)
		tr := Breakdown(td)
		var buf bytes.Buffer
		require.NoError(t, WriteText(&buf, tr))
		_, err := json.Marshal(tr)
		require.NoError(t, err)
		if td.SpanCount() == 0 {
			require.Empty(t, tr.Spans)
			return
		}
		var sum, crit time.Duration
		for _, s := range tr.Services {
			sum += s.Exclusive.D()
		}
		for _, s := range tr.Spans {
			require.LessOrEqual(t, s.Critical, s.Duration, "span %s", s.SpanID)
			require.GreaterOrEqual(t, s.Critical.D(), time.Duration(0))
			crit += s.Critical.D()
		}
		require.Equal(t, tr.Duration.D(), sum)
		require.Equal(t, tr.Duration.D(), crit)
		var path time.Duration
		for i, s := range tr.CriticalPath {
			require.Positive(t, s.Duration.D())
			if i > 0 {
				prev := tr.CriticalPath[i-1]
				require.Equal(t, prev.Offset+prev.Duration, s.Offset, "segments are contiguous")
			}
			path += s.Duration.D()
		}
		require.Equal(t, tr.Duration.D(), path)
		ids := map[string]bool{}
		for _, s := range tr.Spans {
			require.False(t, ids[s.SpanID], "span %s twice", s.SpanID)
			ids[s.SpanID] = true
		}
	})
}
