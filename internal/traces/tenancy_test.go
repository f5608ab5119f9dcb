package traces

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/tenant"
)

// TestTenancy: spans and logs written as tenants a and b (the same trace
// id in both, the same services and request id) are read by each tenant
// as its own only, by every read; a read without a principal (Vigil's
// own) sees both; a read across a|b sees both.
func TestTenancy(t *testing.T) {
	ts := open(t, nil)
	asA, asB := tenant.WithID(context.Background(), "a"), tenant.WithID(context.Background(), "b")
	for i, ctx := range []context.Context{asA, asB} {
		who := []string{"a", "b"}[i]
		require.NoError(t, ts.ConsumeTraces(ctx, traces(t,
			spanSpec{trace: 1, span: byte(1 + 10*i), service: "api", name: "GET " + who, start: time.Minute, dur: time.Second, attrs: map[string]any{"request_id": "req-1"}},
			spanSpec{trace: byte(2 + i), span: byte(2 + 10*i), service: "api", name: "only " + who, start: time.Minute, dur: time.Duration(i+1) * time.Second, err: true},
		)))
		require.NoError(t, ts.ConsumeLogs(ctx, logs(t,
			logSpec{service: "api", at: time.Minute, trace: 1, body: "log of " + who, attrs: map[string]any{"request_id": "req-1"}},
			logSpec{service: "api", at: 2 * time.Minute, body: "plain log of " + who},
		)))
	}
	names := func(ctx context.Context) []string {
		td, err := ts.Trace(ctx, tid(1))
		require.NoError(t, err)
		var out []string
		rs := td.ResourceSpans()
		for i := range rs.Len() {
			for j := range rs.At(i).ScopeSpans().Len() {
				sps := rs.At(i).ScopeSpans().At(j).Spans()
				for k := range sps.Len() {
					out = append(out, sps.At(k).Name())
				}
			}
		}
		return out
	}
	require.Equal(t, []string{"GET a"}, names(asA))
	require.Equal(t, []string{"GET b"}, names(asB))
	require.ElementsMatch(t, []string{"GET a", "GET b"}, names(context.Background()))
	require.ElementsMatch(t, []string{"GET a", "GET b"}, names(tenant.NewContext(context.Background(), tenant.Principal{IDs: []string{"a", "b"}})))
	_, err := ts.Trace(asA, tid(3))
	require.ErrorIs(t, err, ErrNotFound, "b's own trace, read as a")

	window := TraceQuery{Start: t0, End: t0.Add(time.Hour)}
	for _, q := range []TraceQuery{window, {Service: "api", Start: t0, End: t0.Add(time.Hour)}, {ErrorOnly: true, Start: t0, End: t0.Add(time.Hour)},
		{MinDuration: time.Millisecond, Start: t0, End: t0.Add(time.Hour)}, {CorrelationID: "req-1"}, {Limit: 1, ErrorOnly: true, Start: t0, End: t0.Add(time.Hour)}} {
		got, err := ts.SearchTraces(asA, q)
		require.NoError(t, err)
		require.NotEmpty(t, got, "a finds its own traces with %+v", q)
		for _, s := range got {
			require.NotEqual(t, tid(3), s.TraceID, "a finds b's trace with %+v", q)
			require.Equal(t, 1, s.SpanCount, "a's summary counts b's spans with %+v", q)
		}
	}
	var spans []string
	require.NoError(t, ts.Spans(asB, SpanQuery{Service: "api", Start: t0, End: t0.Add(time.Hour)}, func(s Span) bool {
		spans = append(spans, s.Name)
		return true
	}))
	require.ElementsMatch(t, []string{"GET b", "only b"}, spans)

	for _, q := range []LogQuery{{Start: t0, End: t0.Add(time.Hour)}, {Service: "api"}, {TraceID: tid(1)}, {RequestID: "req-1"}, {Limit: 1}} {
		recs, err := ts.SearchLogs(asA, q)
		require.NoError(t, err)
		require.NotEmpty(t, recs, "a finds its logs with %+v", q)
		for _, b := range bodies(recs) {
			require.Contains(t, []string{"log of a", "plain log of a"}, b, "a reads with %+v", q)
		}
	}
	recs, err := ts.SearchLogs(context.Background(), LogQuery{Service: "api"})
	require.NoError(t, err)
	require.Len(t, recs, 4, "Vigil's own read sees every tenant's")
}

// TestTenancyNoOverwrite: a tenant that writes a span with another
// tenant's trace and span ids (learnt from a propagated context) does not
// replace it; its own span is dropped and counted.
func TestTenancyNoOverwrite(t *testing.T) {
	ts := open(t, nil)
	spans := func(name string) ptrace.Traces {
		return traces(t, spanSpec{trace: 1, span: 1, service: "api", name: name, start: time.Minute, dur: time.Second})
	}
	require.NoError(t, ts.ConsumeTraces(tenant.WithID(context.Background(), "a"), spans("a's")))
	require.NoError(t, ts.ConsumeTraces(tenant.WithID(context.Background(), "b"), spans("b's")))
	td, err := ts.Trace(tenant.WithID(context.Background(), "a"), tid(1))
	require.NoError(t, err)
	require.Equal(t, "a's", td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name())
	_, err = ts.Trace(tenant.WithID(context.Background(), "b"), tid(1))
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, 1.0, testutil.ToFloat64(ts.m.dropped.WithLabelValues("spans", "other_tenant")))
}
