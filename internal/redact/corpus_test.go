package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// corpus is OTLP data with texts placed in every position redaction must
// cover.
type corpus struct {
	td ptrace.Traces
	ld plog.Logs
	md pmetric.Metrics
	rs ptrace.ResourceSpans
	ss ptrace.ScopeSpans
	rl plog.ResourceLogs
	sl plog.ScopeLogs
	rm pmetric.ResourceMetrics
	sm pmetric.ScopeMetrics
}

func newCorpus() *corpus {
	c := &corpus{td: ptrace.NewTraces(), ld: plog.NewLogs(), md: pmetric.NewMetrics()}
	c.rs = c.td.ResourceSpans().AppendEmpty()
	c.rs.Resource().Attributes().PutStr("service.name", "inference-gateway")
	c.ss = c.rs.ScopeSpans().AppendEmpty()
	c.rl = c.ld.ResourceLogs().AppendEmpty()
	c.sl = c.rl.ScopeLogs().AppendEmpty()
	c.rm = c.md.ResourceMetrics().AppendEmpty()
	c.sm = c.rm.ScopeMetrics().AppendEmpty()
	return c
}

// placement puts text in one position, under key where the position has
// keys, and returns a function that reads the value back as text.
type placement struct {
	name  string
	keyed bool
	put   func(c *corpus, key, text string) func() string
}

func (c *corpus) span() ptrace.Span {
	s := c.ss.Spans().AppendEmpty()
	s.SetName("POST /v1/chat/completions")
	return s
}

func str(v pcommon.Value) func() string { return v.AsString }

func mapValue(m pcommon.Map, key string) func() string {
	return func() string { v, _ := m.Get(key); return v.AsString() }
}

func jsonField(key, text string) string {
	b, _ := json.Marshal(map[string]any{"event": "upstream_error", key: text})
	return string(b)
}

var placements = []placement{
	{"span-attribute", true, func(c *corpus, k, t string) func() string {
		m := c.span().Attributes()
		m.PutStr(k, t)
		return mapValue(m, k)
	}},
	{"span-nested-map", true, func(c *corpus, k, t string) func() string {
		inner := c.span().Attributes().PutEmptyMap("app.request").PutEmptyMap("details")
		inner.PutStr(k, t)
		return mapValue(inner, k)
	}},
	{"span-slice", true, func(c *corpus, k, t string) func() string {
		s := c.span().Attributes().PutEmptySlice(k)
		s.AppendEmpty().SetStr("first")
		v := s.AppendEmpty()
		v.SetStr(t)
		return str(v)
	}},
	{"span-name", false, func(c *corpus, _, t string) func() string {
		s := c.span()
		s.SetName(t)
		return s.Name
	}},
	{"span-status", false, func(c *corpus, _, t string) func() string {
		s := c.span()
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage(t)
		return s.Status().Message
	}},
	{"span-event-attribute", true, func(c *corpus, k, t string) func() string {
		ev := c.span().Events().AppendEmpty()
		ev.SetName("exception")
		ev.Attributes().PutStr(k, t)
		return mapValue(ev.Attributes(), k)
	}},
	{"span-event-name", false, func(c *corpus, _, t string) func() string {
		ev := c.span().Events().AppendEmpty()
		ev.SetName(t)
		return ev.Name
	}},
	{"span-link-attribute", true, func(c *corpus, k, t string) func() string {
		l := c.span().Links().AppendEmpty()
		l.Attributes().PutStr(k, t)
		return mapValue(l.Attributes(), k)
	}},
	{"resource-attribute", true, func(c *corpus, k, t string) func() string {
		m := c.rs.Resource().Attributes()
		// Resource keys must be unique: nest each under its own map.
		inner := m.PutEmptyMap(fmt.Sprintf("k8s.pod.annotation.%d", m.Len()))
		inner.PutStr(k, t)
		return mapValue(inner, k)
	}},
	{"scope-attribute", true, func(c *corpus, k, t string) func() string {
		ss := c.rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("github.com/acme/llm-client")
		ss.Scope().Attributes().PutStr(k, t)
		return mapValue(ss.Scope().Attributes(), k)
	}},
	{"log-body", false, func(c *corpus, _, t string) func() string {
		lr := c.sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(t)
		return str(lr.Body())
	}},
	{"log-body-map", true, func(c *corpus, k, t string) func() string {
		lr := c.sl.LogRecords().AppendEmpty()
		m := lr.Body().SetEmptyMap()
		m.PutStr("msg", "request failed")
		m.PutStr(k, t)
		return mapValue(m, k)
	}},
	{"log-body-json", true, func(c *corpus, k, t string) func() string {
		lr := c.sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(jsonField(k, t))
		return str(lr.Body())
	}},
	{"log-attribute", true, func(c *corpus, k, t string) func() string {
		lr := c.sl.LogRecords().AppendEmpty()
		lr.Body().SetStr("request failed")
		lr.Attributes().PutStr(k, t)
		return mapValue(lr.Attributes(), k)
	}},
	{"log-scope-attribute", true, func(c *corpus, k, t string) func() string {
		sl := c.rl.ScopeLogs().AppendEmpty()
		sl.Scope().Attributes().PutStr(k, t)
		return mapValue(sl.Scope().Attributes(), k)
	}},
	{"json-in-attribute", true, func(c *corpus, k, t string) func() string {
		m := c.span().Attributes()
		m.PutStr("http.request.body", jsonField(k, t))
		return mapValue(m, "http.request.body")
	}},
	{"json-in-json", true, func(c *corpus, k, t string) func() string {
		lr := c.sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(jsonField("payload", jsonField(k, t)))
		return str(lr.Body())
	}},
	{"bytes-attribute", true, func(c *corpus, k, t string) func() string {
		m := c.span().Attributes()
		m.PutEmptyBytes(k).FromRaw([]byte(t))
		return func() string { v, _ := m.Get(k); return bytesOrStr(v) }
	}},
	{"gauge-point", true, func(c *corpus, k, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("vllm:num_requests_running")
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.Attributes().PutStr(k, t)
		return mapValue(dp.Attributes(), k)
	}},
	{"sum-point", true, func(c *corpus, k, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("http.server.requests")
		dp := m.SetEmptySum().DataPoints().AppendEmpty()
		dp.Attributes().PutStr(k, t)
		return mapValue(dp.Attributes(), k)
	}},
	{"histogram-point", true, func(c *corpus, k, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("gen_ai.client.operation.duration")
		dp := m.SetEmptyHistogram().DataPoints().AppendEmpty()
		dp.Attributes().PutStr(k, t)
		return mapValue(dp.Attributes(), k)
	}},
	{"exp-histogram-point", true, func(c *corpus, k, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("gen_ai.server.time_to_first_token")
		dp := m.SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
		dp.Attributes().PutStr(k, t)
		return mapValue(dp.Attributes(), k)
	}},
	{"summary-point", true, func(c *corpus, k, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("rpc.duration")
		dp := m.SetEmptySummary().DataPoints().AppendEmpty()
		dp.Attributes().PutStr(k, t)
		return mapValue(dp.Attributes(), k)
	}},
	{"exemplar", true, func(c *corpus, k, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("http.server.duration")
		dp := m.SetEmptyHistogram().DataPoints().AppendEmpty()
		ex := dp.Exemplars().AppendEmpty()
		ex.FilteredAttributes().PutStr(k, t)
		return mapValue(ex.FilteredAttributes(), k)
	}},
	{"metric-resource-attribute", true, func(c *corpus, k, t string) func() string {
		rm := c.md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr(k, t)
		return mapValue(rm.Resource().Attributes(), k)
	}},
	{"metric-description", false, func(c *corpus, _, t string) func() string {
		m := c.sm.Metrics().AppendEmpty()
		m.SetName("custom.metric")
		m.SetDescription(t)
		m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
		return m.Description
	}},
}

func bytesOrStr(v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeBytes {
		return string(v.Bytes().AsRaw())
	}
	return v.AsString()
}

// redactAll redacts the corpus and returns its JSON and protobuf encodings.
func (c *corpus) redactAll(t *testing.T, r *Redactor) [][]byte {
	r.Traces(c.td)
	r.Logs(c.ld)
	r.Metrics(c.md)
	var out [][]byte
	for _, f := range []func() ([]byte, error){
		func() ([]byte, error) { return (&ptrace.JSONMarshaler{}).MarshalTraces(c.td) },
		func() ([]byte, error) { return (&plog.JSONMarshaler{}).MarshalLogs(c.ld) },
		func() ([]byte, error) { return (&pmetric.JSONMarshaler{}).MarshalMetrics(c.md) },
		func() ([]byte, error) { return (&ptrace.ProtoMarshaler{}).MarshalTraces(c.td) },
		func() ([]byte, error) { return (&plog.ProtoMarshaler{}).MarshalLogs(c.ld) },
		func() ([]byte, error) { return (&pmetric.ProtoMarshaler{}).MarshalMetrics(c.md) },
	} {
		b, err := f()
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// TestCorpusSecrets places at least 200 fake secrets of every kind in every
// position of traces, logs and metrics, redacts, and searches the JSON and
// protobuf encodings for each secret and its distinctive substrings.
func TestCorpusSecrets(t *testing.T) {
	const perKind = 5
	c := newCorpus()
	var keyed, unkeyed []placement
	for _, p := range placements {
		if p.keyed {
			keyed = append(keyed, p)
		} else {
			unkeyed = append(unkeyed, p)
		}
	}
	type placed struct {
		kind, where string
		cores       []string
	}
	var all []placed
	used := map[string]int{}
	n := 0
	for _, s := range redacttest.Secrets(42, perKind) {
		var p placement
		key := "app.detail"
		if s.Key != "" {
			p, key = keyed[n%len(keyed)], s.Key
		} else {
			p = placements[n%len(placements)]
			if !p.keyed {
				p = unkeyed[n%len(unkeyed)]
			}
		}
		n++
		used[p.name]++
		p.put(c, key, s.Text)
		all = append(all, placed{s.Kind, p.name, s.Cores})
	}
	require.GreaterOrEqual(t, len(all), 200)
	for _, p := range placements {
		require.Positive(t, used[p.name], "position %s holds a secret", p.name)
	}

	r := newTestRedactor(t, Default())
	encoded := c.redactAll(t, r)
	survived := 0
	for _, s := range all {
		for _, core := range s.cores {
			for _, sub := range redacttest.Distinctive(core) {
				for _, enc := range encoded {
					if bytes.Contains(enc, []byte(sub)) {
						survived++
						t.Errorf("%s in %s: %q survived", s.kind, s.where, sub)
					}
				}
			}
		}
	}
	require.Zero(t, survived)
	t.Logf("%d secrets of %d kinds in %d positions: none survived", len(all), len(redacttest.SecretKinds()), len(placements))

	// Redacting again changes nothing.
	again := c.redactAll(t, r)
	require.Equal(t, encoded, again)
}

// TestCorpusBenign places at least 200 look-alikes in every position and
// requires that at most 1% change (in fact none do).
func TestCorpusBenign(t *testing.T) {
	const perKind = 10
	c := newCorpus()
	type placed struct {
		kind, where, text string
		get               func() string
	}
	var all []placed
	n := 0
	for _, b := range redacttest.LookAlikes(7, perKind) {
		p := placements[n%len(placements)]
		n++
		get := p.put(c, "app.detail", b.Text)
		switch p.name {
		case "log-body-json", "json-in-attribute":
			all = append(all, placed{b.Kind, p.name, jsonField("app.detail", b.Text), get})
		case "json-in-json":
			all = append(all, placed{b.Kind, p.name, jsonField("payload", jsonField("app.detail", b.Text)), get})
		default:
			all = append(all, placed{b.Kind, p.name, b.Text, get})
		}
	}
	require.GreaterOrEqual(t, len(all), 200)
	r := newTestRedactor(t, Default())
	c.redactAll(t, r)
	changed := 0
	for _, b := range all {
		if got := b.get(); got != b.text {
			changed++
			t.Logf("%s in %s changed: %q → %q", b.kind, b.where, b.text, got)
		}
	}
	t.Logf("%d of %d look-alikes changed", changed, len(all))
	require.LessOrEqual(t, float64(changed), 0.01*float64(len(all)))
}
