package diagnose_test

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/store"
)

// logLine is a source of log lines: a service writes body (%d replaced by
// a running number) every `every`, from `from` to `to` (zero: the whole
// run), or `burst` lines at once every `every`.
type logLine struct {
	service, body string
	every         time.Duration
	from, to      time.Duration
	burst         int
	// span, when set, puts the line's k-th record in span k of request
	// path span: lines of one path and period are one request's steps.
	span byte
}

// diagnoseLogs writes 30 minutes of the lines through internal/logsignals
// into a fresh store, a batch every 5 s, and diagnoses the end with
// --entity-label service.
func diagnoseLogs(t *testing.T, lines ...logLine) *diagnose.Report {
	t.Helper()
	return diagnoseLogsSpans(t, nil, lines...)
}

// spanLine is a source of server spans: a service's spans of one name,
// every `every` from `from` to `to`, the k-th in span k of request path
// span (a logLine of the same path and period writes its records in it).
type spanLine struct {
	service, name string
	every         time.Duration
	from, to      time.Duration
	span          byte
}

// due calls fn with each occurrence k of a source of period every in
// [from, to) that falls in (at-batch, at].
func due(at, batch, every, from, to time.Duration, fn func(k int, d time.Duration)) {
	for k := (at - batch) / every; ; k++ {
		d := k * every
		if d <= at-batch {
			continue
		}
		if d > at {
			return
		}
		if d >= from && d < to {
			fn(int(k), d)
		}
	}
}

// ids are the trace and span IDs of occurrence k of request path span.
func ids(span byte, k int) (pcommon.TraceID, pcommon.SpanID) {
	var id pcommon.SpanID
	id[0] = span
	binary.BigEndian.PutUint32(id[4:], uint32(k))
	return pcommon.TraceID{0: span, 15: 1}, id
}

// diagnoseLogsSpans is diagnoseLogs with spans as well: each batch's spans
// go through internal/spanmetrics (their calls) and, before the batch's
// records, internal/logsignals (their names).
func diagnoseLogsSpans(t *testing.T, spans []spanLine, lines ...logLine) *diagnose.Report {
	t.Helper()
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clock, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	c, err := logsignals.New(logsignals.DefaultConfig(), st, clock, nil, nil)
	require.NoError(t, err)
	sm, err := spanmetrics.New(spanmetrics.DefaultConfig(), st, clock, nil, nil)
	require.NoError(t, err)
	const run, batch = 30 * time.Minute, 5 * time.Second
	n := 0
	for at := batch; at <= run; at += batch {
		td := ptrace.NewTraces()
		for _, sl := range spans {
			to := cmp.Or(sl.to, run)
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", sl.service)
			ss := rs.ScopeSpans().AppendEmpty().Spans()
			due(at, batch, sl.every, sl.from, to, func(k int, d time.Duration) {
				sp := ss.AppendEmpty()
				tid, sid := ids(sl.span, k)
				sp.SetTraceID(tid)
				sp.SetSpanID(sid)
				sp.SetName(sl.name)
				sp.SetKind(ptrace.SpanKindServer)
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d + 10*time.Millisecond)))
			})
		}
		ld := plog.NewLogs()
		for _, l := range lines {
			to := cmp.Or(l.to, run)
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", l.service)
			rl.Resource().Attributes().PutStr("k8s.pod.name", l.service+"-7d9f8b6c5-x2x9z")
			recs := rl.ScopeLogs().AppendEmpty().LogRecords()
			due(at, batch, l.every, l.from, to, func(k int, d time.Duration) {
				for range max(1, l.burst) {
					n++
					lr := recs.AppendEmpty()
					lr.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
					if l.span != 0 {
						tid, sid := ids(l.span, k)
						lr.SetTraceID(tid)
						lr.SetSpanID(sid)
					}
					lr.Body().SetStr(fmt.Sprintf("%s "+l.body, start.Add(d).Format("15:04:05.000"), n))
				}
			})
		}
		now = start.Add(at)
		if len(spans) > 0 {
			require.NoError(t, c.ConsumeTraces(t.Context(), td))
			require.NoError(t, sm.ConsumeTraces(t.Context(), td))
			require.NoError(t, sm.Flush(t.Context()))
		}
		require.NoError(t, c.ConsumeLogs(t.Context(), ld))
	}
	eng, err := diagnose.New(diagnose.Options{EntityLabel: "service", Window: 30 * time.Minute, Step: 15 * time.Second})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), st, now)
	require.NoError(t, err)
	return rep
}

// background is a healthy application's warnings and errors: steady
// ones, a rare one, and a batch job that writes 40 warnings at once every
// five minutes.
var background = []logLine{
	{service: "orders", body: "WARN  o.s.OrderServiceImpl#88 [getSoldTickets][Left ticket info is empty][train %d]", every: 4 * time.Second},
	{service: "payment", body: "ERROR p.s.PaymentImpl#12 card declined for order %d", every: 20 * time.Second},
	{service: "users", body: "WARN  u.s.UserImpl#40 password about to expire for user %d", every: 90 * time.Second},
	{service: "reports", body: "WARN  r.s.ReportJob#7 row %d skipped: no price", every: 5 * time.Minute, burst: 40},
}

// TestLogTemplateRise: a service that starts writing a new error template
// at 20 min ranks first, with the template, its counts and the time it
// rose as evidence; at half the rate too.
func TestLogTemplateRise(t *testing.T) {
	for _, every := range []time.Duration{5 * time.Second, 10 * time.Second} {
		t.Run(every.String(), func(t *testing.T) {
			rep := diagnoseLogs(t, append(background[:len(background):len(background)],
				logLine{service: "contacts", body: "ERROR c.s.ContactsServiceImpl#37 [findContactsById][No contacts according to contactsId %d]",
					every: every, from: 20 * time.Minute})...)
			require.NotEmpty(t, rep.Causes)
			c := rep.Causes[0]
			require.Equal(t, diagnose.KindMetricAnomaly, c.Kind)
			require.Equal(t, "ts-contacts", "ts-"+c.Entity["service"])
			require.Contains(t, c.Evidence[0].Signal, "No contacts according to contactsId")
			require.Contains(t, c.Evidence[0].Summary, "records of this error template")
			require.NotNil(t, c.Since)
			require.WithinDuration(t, time.Date(2026, 12, 2, 10, 20, 0, 0, time.UTC), *c.Since, 30*time.Second)
			require.GreaterOrEqual(t, c.Confidence, 0.5, "ten minutes of history, a minute or more of a new error: strong")
			for _, o := range rep.Causes[1:] {
				require.Less(t, o.Confidence, 0.5, "%s", o.Entity)
			}
		})
	}
}

// TestLogTemplateRiseWentBack: a service that wrote a new error template
// from minute 12 to minute 16 only (a fault that ended) ranks first, the
// stretch's end in the evidence: against the steps before it and, apart,
// the steps after it, the four minutes are a rise, where set against the
// window's whole rest at a split they are diluted by the fourteen quiet
// minutes after them. At half the rate too, less sure.
func TestLogTemplateRiseWentBack(t *testing.T) {
	for _, tc := range []struct {
		every   time.Duration
		atLeast float64
	}{{5 * time.Second, 0.5}, {10 * time.Second, 0.3}} {
		every := tc.every
		t.Run(every.String(), func(t *testing.T) {
			rep := diagnoseLogs(t, append(background[:len(background):len(background)],
				logLine{service: "contacts", body: "ERROR c.s.ContactsServiceImpl#37 [findContactsById][No contacts according to contactsId %d]",
					every: every, from: 12 * time.Minute, to: 16 * time.Minute})...)
			require.NotEmpty(t, rep.Causes)
			c := rep.Causes[0]
			require.Equal(t, diagnose.Entity{"service": "contacts"}, c.Entity, "%+v", rep.Causes)
			require.Contains(t, c.Evidence[0].Signal, "No contacts according to contactsId")
			require.Contains(t, c.Evidence[0].Summary, "around it")
			require.Regexp(t, `from 10:1[12]:\d\d to 10:1[56]:\d\d`, c.Evidence[0].Summary)
			require.NotNil(t, c.Since)
			require.WithinDuration(t, time.Date(2026, 12, 2, 10, 12, 0, 0, time.UTC), *c.Since, 30*time.Second)
			require.GreaterOrEqual(t, c.Confidence, tc.atLeast, "twelve minutes of history, four of a new error")
			for _, o := range rep.Causes[1:] {
				require.Less(t, o.Confidence, math.Min(0.5, c.Confidence), "%s", o.Entity)
			}
		})
	}
}

// TestLogTemplateDecoys: steady templates, a bursting batch job, a
// template whose rate did not change and one that fell silent name no
// cause: the logs of a healthy application are healthy.
func TestLogTemplateDecoys(t *testing.T) {
	rep := diagnoseLogs(t, append(background[:len(background):len(background)],
		logLine{service: "search", body: "WARN  s.s.SearchImpl#3 index %d stale, served anyway", every: 30 * time.Second, to: 20 * time.Minute})...)
	require.True(t, rep.Healthy, "%+v", rep.Causes)
	for _, c := range rep.Causes {
		require.Less(t, c.Confidence, 0.5, "%s %s", c.Entity, c.Summary)
	}
}
