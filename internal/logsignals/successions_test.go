package logsignals

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestSuccessions: within a span, each mined record counts as coming next
// after the span's previous one, in time even where the batch lists them
// out of order, and across batches; records of other spans, records that
// name no span and a record older than its span's latest count no
// succession; switched off, nothing is counted.
func TestSuccessions(t *testing.T) {
	contacts := res{"k8s.namespace.name": "ts", "k8s.pod.name": "ts-contacts-service-866bd68c97-xcqfx", "service.name": "ts-contacts-service"}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const (
		find  = "16:43:20.000 INFO  c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: 415d1665"
		found = "16:43:20.100 INFO  c.s.ContactsServiceImpl#34 contacts found, 3 of them"
		none  = "16:43:21.000 ERROR c.s.ContactsServiceImpl#37 No contacts according to contactsId"
	)
	count := func(successions bool) map[string]float64 {
		clk := &clock{t: t0}
		st := openStore(t, clk)
		cfg := DefaultConfig()
		cfg.Templates.Successions = successions
		c := newConsumer(t, cfg, st, clk, prometheus.NewRegistry())
		clk.set(at(60))
		require.NoError(t, c.ConsumeLogs(t.Context(), one(contacts,
			rec{body: found, at: at(2), span: 1}, // listed before the record it follows
			rec{body: find, at: at(1), span: 1},
			rec{body: find, at: at(3), span: 2},
			rec{body: find, at: at(4)}, // no span
			rec{body: found, at: at(5)},
			rec{body: find, at: at(6), span: 3},
		)))
		require.NoError(t, c.ConsumeLogs(t.Context(), one(contacts,
			rec{body: none, at: at(7), span: 2},  // the next batch
			rec{body: find, at: at(5), span: 3},  // older than span 3's latest
			rec{body: found, at: at(8), span: 3}, // follows the record at 6 s
		)))
		out := map[string]float64{}
		for k, v := range query(t, st, MetricSuccessions, at(60)) {
			out[k[strings.Index(k, "next="):]] = v
		}
		return out
	}
	got := count(true)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	require.Len(t, got, 2, "%v", keys)
	foundAfterFind, errAfterFind := 0.0, 0.0
	for k, v := range got {
		switch {
		case strings.Contains(k, "severity=info") && strings.Contains(k, "next=c.s.ContactsServiceImpl#34 contacts found"):
			foundAfterFind = v
		case strings.Contains(k, "severity=error") && strings.Contains(k, "next=c.s.ContactsServiceImpl#37 No contacts"):
			errAfterFind = v
		}
		require.Contains(t, k, "template=c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: <*>", "the record each came next after")
	}
	require.Equal(t, 2.0, foundAfterFind, "spans 1 and 3")
	require.Equal(t, 1.0, errAfterFind, "span 2, across batches")
	require.Empty(t, count(false), "switched off")
}

// TestSpanFirst: each span's first mined record counts under the span's
// name, once, whether the span came before its records or after them, or
// was read elsewhere (SetSpanNames); a span with no record counts
// nothing, and neither do later records of a span; switched off,
// ConsumeTraces learns nothing.
func TestSpanFirst(t *testing.T) {
	contacts := res{"k8s.namespace.name": "ts", "k8s.pod.name": "ts-contacts-service-866bd68c97-xcqfx", "service.name": "ts-contacts-service"}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const (
		find  = "16:43:20.000 INFO  c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: 415d1665"
		found = "16:43:20.100 INFO  c.s.ContactsServiceImpl#34 contacts found, 3 of them"
	)
	spans := func(ids ...byte) ptrace.Traces {
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for _, id := range ids {
			sp := ss.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{1})
			sp.SetSpanID(pcommon.SpanID{id})
			sp.SetName("ContactsController.find")
		}
		return td
	}
	count := func(successions bool, lookup SpanNames) float64 {
		clk := &clock{t: t0}
		st := openStore(t, clk)
		cfg := DefaultConfig()
		cfg.Templates.Successions = successions
		c := newConsumer(t, cfg, st, clk, prometheus.NewRegistry())
		if lookup != nil {
			c.SetSpanNames(lookup)
		}
		clk.set(at(60))
		require.NoError(t, c.ConsumeTraces(t.Context(), spans(1, 4))) // span 1 before its records; 4 has none
		require.NoError(t, c.ConsumeLogs(t.Context(), one(contacts,
			rec{body: find, at: at(1), span: 1},
			rec{body: found, at: at(2), span: 1}, // not the first: counts no span
			rec{body: find, at: at(3), span: 2},
			rec{body: find, at: at(4), span: 3},
		)))
		require.NoError(t, c.ConsumeTraces(t.Context(), spans(2))) // span 2 after its record
		got := query(t, st, MetricSpanFirst, at(60))
		require.LessOrEqual(t, len(got), 1, "%v", got)
		for k, v := range got {
			require.Contains(t, k, "span_name=ContactsController.find")
			require.Contains(t, k, "template=c.s.ContactsServiceImpl#31 FIND CONTACTS BY ID: <*>")
			require.Contains(t, k, "service=ts-contacts-service")
			return v
		}
		return 0
	}
	require.Equal(t, 2.0, count(true, nil), "spans 1 and 2; 3 was never received, 4 logged nothing")
	require.Equal(t, 3.0, count(true, names{{1}: "x", {3}: "ContactsController.find"}), "span 3's name from the lookup")
	require.Zero(t, count(false, nil), "switched off")
}

// names is a SpanNames of spans in trace 1 by their span ID's first byte.
type names map[[1]byte]string

func (n names) SpanName(k SpanKey) string {
	if k[0] != 1 {
		return ""
	}
	return n[[1]byte{k[16]}]
}
