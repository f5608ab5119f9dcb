package traces

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/tenant"
)

const unknownService = "unknown_service"

// ConsumeTraces stores the spans of td (already redacted by the caller) in
// one batch. When it returns nil the spans are in the write-ahead log and
// readable: they survive a crash of the process; an OS crash or power loss
// may lose what was written in the last 5 s (the WAL is synced every 5 s
// and on Close). Spans past retention, starting over an hour after the
// clock, or without a trace id, span id or start time are dropped and
// counted in vigil_traces_dropped_total. td is not modified.
func (s *Store) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if td.SpanCount() == 0 {
		return nil
	}
	raw, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("marshal spans: %w", err)
	}
	wire, err := parseWire(raw)
	if err != nil {
		return fmt.Errorf("cut spans: %w", err)
	}
	w := s.newWriter("spans")
	defer w.close()
	w.owner, _ = tenant.WriteID(ctx)
	rss := td.ResourceSpans()
	if len(wire) != rss.Len() {
		return fmt.Errorf("cut spans: %d resources on the wire, %d in the request", len(wire), rss.Len())
	}
	for i := range rss.Len() {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		service, resTenant := serviceOf(res), strAttr(res, s.cfg.TenantAttribute)
		sss := rs.ScopeSpans()
		if len(wire[i].scopes) != sss.Len() {
			return fmt.Errorf("cut spans: %d scopes on the wire, %d in the request", len(wire[i].scopes), sss.Len())
		}
		for j := range sss.Len() {
			sc, spans := &wire[i].scopes[j], sss.At(j).Spans()
			if len(sc.items) != spans.Len() {
				return fmt.Errorf("cut spans: %d spans on the wire, %d in the request", len(sc.items), spans.Len())
			}
			rec := resourceRecord(sc)
			h := resourceHash(rec)
			for k := range spans.Len() {
				w.span(spans.At(k), sc.items[k], service, resTenant, rec, h)
			}
		}
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("store spans: %w", err)
	}
	s.m.spans.Add(float64(w.stored))
	return nil
}

// ConsumeLogs stores the log records of ld in one batch; durability and
// drops are as for ConsumeTraces. A record is timed by its timestamp, else
// its observed timestamp, else the clock.
func (s *Store) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if ld.LogRecordCount() == 0 {
		return nil
	}
	raw, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	if err != nil {
		return fmt.Errorf("marshal logs: %w", err)
	}
	wire, err := parseWire(raw)
	if err != nil {
		return fmt.Errorf("cut logs: %w", err)
	}
	w := s.newWriter("logs")
	defer w.close()
	w.owner, _ = tenant.WriteID(ctx)
	rls := ld.ResourceLogs()
	if len(wire) != rls.Len() {
		return fmt.Errorf("cut logs: %d resources on the wire, %d in the request", len(wire), rls.Len())
	}
	for i := range rls.Len() {
		rl := rls.At(i)
		service := serviceOf(rl.Resource().Attributes())
		sls := rl.ScopeLogs()
		if len(wire[i].scopes) != sls.Len() {
			return fmt.Errorf("cut logs: %d scopes on the wire, %d in the request", len(wire[i].scopes), sls.Len())
		}
		for j := range sls.Len() {
			sc, recs := &wire[i].scopes[j], sls.At(j).LogRecords()
			if len(sc.items) != recs.Len() {
				return fmt.Errorf("cut logs: %d records on the wire, %d in the request", len(sc.items), recs.Len())
			}
			rec := resourceRecord(sc)
			h := resourceHash(rec)
			for k := range recs.Len() {
				w.log(recs.At(k), sc.items[k], service, rec, h)
			}
		}
	}
	if err := w.commit(); err != nil {
		return fmt.Errorf("store logs: %w", err)
	}
	s.m.logs.Add(float64(w.stored))
	return nil
}

// writer fills one batch. Its maps are bounded by the request.
type writer struct {
	s           *Store
	signal      string
	b           *pebble.Batch
	now         uint64
	floor, ceil uint32
	key, val    []byte
	sum         []byte
	ids         []string
	resources   map[resourceRef]bool
	markers     map[string]bool // marker keys written in this batch
	parts       map[uint32]bool
	stored      int
	err         error
	// owner is the tenant of the batch (tenancy), stamped on every
	// record's summary.
	owner string
}

type resourceRef struct {
	part uint32
	hash uint64
}

func (s *Store) newWriter(signal string) *writer {
	now := s.now()
	ns := uint64(max(now.UnixNano(), 0))
	return &writer{
		s: s, signal: signal, b: s.db.NewBatch(), now: ns,
		floor:     max(s.floor, s.ageFloor(now)),
		ceil:      partOf(ns + uint64(maxFuture)),
		resources: map[resourceRef]bool{},
		markers:   map[string]bool{},
		parts:     map[uint32]bool{},
	}
}

func (w *writer) close() { _ = w.b.Close() }

// part is the partition of time t, or false (and a count) when t is out of
// the window the store accepts.
func (w *writer) part(t uint64) (uint32, bool) {
	p := partOf(t)
	switch {
	case p < w.floor:
		w.s.m.dropped.WithLabelValues(w.signal, "too_old").Inc()
		return 0, false
	case p > w.ceil:
		w.s.m.dropped.WithLabelValues(w.signal, "future").Inc()
		return 0, false
	}
	w.parts[p] = true
	return p, true
}

func (w *writer) set(key, val []byte) {
	if w.err == nil {
		w.err = w.b.Set(key, val, nil)
	}
}

// marker writes a marker key (kinds T, U, K) once per batch.
func (w *writer) marker(key []byte) {
	if !w.markers[string(key)] {
		w.markers[string(key)] = true
		w.set(key, nil)
	}
}

// resource writes a resource record once per partition and batch.
func (w *writer) resource(p uint32, h uint64, rec []byte) {
	if r := (resourceRef{p, h}); !w.resources[r] {
		w.resources[r] = true
		w.set(resourceKey(w.key[:0], p, h), rec)
	}
}

// span writes a span, its resource and its index entries.
func (w *writer) span(sp ptrace.Span, item []byte, service, resTenant string, rec []byte, h uint64) {
	tid, sid, start := sp.TraceID(), sp.SpanID(), uint64(sp.StartTimestamp())
	if tid.IsEmpty() || sid.IsEmpty() || start == 0 {
		w.s.m.dropped.WithLabelValues(w.signal, "invalid").Inc()
		return
	}
	p, ok := w.part(start)
	if !ok {
		return
	}
	if w.owner != "" && w.ownedElsewhere(spanKey(w.key[:0], p, tid, sid)) {
		// Another tenant's span of the same ids: first written, kept.
		w.s.m.dropped.WithLabelValues(w.signal, "other_tenant").Inc()
		return
	}
	var dur uint64
	if end := uint64(sp.EndTimestamp()); end > start {
		dur = end - start
	}
	var flags byte
	if sp.Status().Code() == ptrace.StatusCodeError {
		flags |= flagError
	}
	if sp.ParentSpanID().IsEmpty() {
		flags |= flagRoot
	}
	tenant := strAttr(sp.Attributes(), w.s.cfg.TenantAttribute)
	if tenant == "" {
		tenant = resTenant
	}
	name := sp.Name()
	w.sum = appendSummary(w.sum[:0], start, dur, flags, service, name, tenant, w.owner)
	w.resource(p, h, rec)
	w.val = appendRecord(w.val[:0], w.sum, h, item)
	w.set(spanKey(w.key[:0], p, tid, sid), w.val)
	w.marker(traceKey(w.key[:0], p, kindTrace, tid))

	index := func(kind byte, parts ...string) {
		k := prefix(w.key[:0], p, kind)
		for _, s := range parts {
			k = appendStr(k, s)
		}
		w.key = appendSpanRef(k, start, tid, sid)
		w.set(w.key, w.sum)
	}
	index(kindTime)
	index(kindService, service)
	index(kindOperation, service, name)
	w.key = appendSpanRef(be64(prefix(w.key[:0], p, kindDuration), dur), start, tid, sid)
	w.set(w.key, w.sum)
	if tenant != "" {
		index(kindTenant, tenant)
	}
	if flags&flagError != 0 {
		index(kindError)
	}
	w.ids = w.s.corr.fromMap(w.ids[:0], sp.Attributes())
	for _, id := range w.ids {
		index(kindSpanCorr, id)
		w.marker(append(prefix(w.key[:0], p, kindCorr), id...))
	}
	w.stored++
}

// ownedElsewhere reports whether the span at key is stored already under
// another owner than the batch's: a tenant never replaces another's span,
// even one whose trace and span ids it learnt from a propagated context.
func (w *writer) ownedElsewhere(key []byte) bool {
	v, err := w.s.getCopy(key)
	if err != nil || v == nil {
		return err != nil
	}
	b, _, _, err := decodeRecord(v)
	if err != nil {
		return true
	}
	sum, err := decodeSpanSummary(b)
	return err != nil || string(sum.owner) != w.owner
}

// log writes a log record, its resource and its index entries.
func (w *writer) log(lr plog.LogRecord, item []byte, service string, rec []byte, h uint64) {
	t := uint64(lr.Timestamp())
	if t == 0 {
		t = uint64(lr.ObservedTimestamp())
	}
	if t == 0 {
		t = w.now
	}
	p, ok := w.part(t)
	if !ok {
		return
	}
	ref := logRef{part: p, t: t, seq: w.s.seq.Add(1)}
	w.resource(p, h, rec)
	w.sum = appendLogSummary(w.sum[:0], service, w.owner)
	w.val = appendRecord(w.val[:0], w.sum, h, item)
	w.set(logKey(w.key[:0], ref), w.val)

	tail := func(k []byte) []byte { return be64(be64(k, ref.t), ref.seq) }
	if tid := lr.TraceID(); !tid.IsEmpty() {
		w.set(tail(traceKey(w.key[:0], p, kindLogTrace, tid)), nil)
		w.marker(traceKey(w.key[:0], p, kindLogTraceP, tid))
	}
	w.ids = w.s.corr.fromMap(w.ids[:0], lr.Attributes())
	w.ids = w.s.corr.fromBody(w.ids, lr.Body())
	for _, id := range w.ids {
		w.set(tail(appendStr(prefix(w.key[:0], p, kindLogCorr), id)), nil)
		w.marker(append(prefix(w.key[:0], p, kindCorr), id...))
	}
	w.set(tail(appendStr(prefix(w.key[:0], p, kindLogSvc), service)), nil)
	w.stored++
}

// commit registers the partitions written and applies the batch.
func (w *writer) commit() error {
	if w.err != nil {
		return w.err
	}
	if w.b.Empty() {
		return nil
	}
	for p := range w.parts {
		w.s.addPart(p)
	}
	return w.b.Commit(pebble.NoSync)
}

// serviceOf is the service.name of a resource.
func serviceOf(res pcommon.Map) string {
	if s := strAttr(res, "service.name"); s != "" {
		return s
	}
	return unknownService
}

// strAttr is the string value of attribute k, "" when absent.
func strAttr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

// timeOf converts nanoseconds to a time.
func timeOf(ns uint64) time.Time { return time.Unix(0, int64(ns)).UTC() }
