package traces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Limits of searches.
const (
	DefaultTraceLimit = 20
	MaxLimit          = 10_000
)

// TraceQuery selects traces that hold a span matching every field set, as
// Jaeger does: the span's service, operation (span name), tenant and
// correlation id; its start within [Start, End] (zero: unbounded); its
// duration within [MinDuration, MaxDuration] (MaxDuration 0: unbounded);
// its status ERROR when ErrorOnly. Limit (default 20, at most 10,000) keeps
// the traces with the newest matching spans, newest first; when
// MinDuration is the only selective field it keeps the slowest, slowest
// first.
type TraceQuery struct {
	Service, Operation, Tenant, CorrelationID string
	Start, End                                time.Time
	MinDuration, MaxDuration                  time.Duration
	ErrorOnly                                 bool
	Limit                                     int
}

// ErrBadQuery wraps the errors of invalid queries.
var ErrBadQuery = errors.New("bad query")

func (q *TraceQuery) check() error {
	switch {
	case q.Limit < 0:
		return fmt.Errorf("%w: limit must not be negative, got %d", ErrBadQuery, q.Limit)
	case !q.Start.IsZero() && !q.End.IsZero() && q.End.Before(q.Start):
		return fmt.Errorf("%w: end %s is before start %s", ErrBadQuery, q.End.Format(time.RFC3339Nano), q.Start.Format(time.RFC3339Nano))
	case q.MinDuration < 0 || q.MaxDuration < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrBadQuery)
	case q.MaxDuration > 0 && q.MaxDuration < q.MinDuration:
		return fmt.Errorf("%w: max duration %s is below min duration %s", ErrBadQuery, q.MaxDuration, q.MinDuration)
	}
	return nil
}

// plan is the index a query scans.
type plan struct {
	kind       byte
	strs       []string // the key's strings after the kind
	byDuration bool
	corr       string // a correlation id whose presence key is checked first
}

func planFor(q *TraceQuery) plan {
	switch {
	case q.CorrelationID != "":
		return plan{kind: kindSpanCorr, strs: []string{q.CorrelationID}, corr: q.CorrelationID}
	case q.Service != "" && q.Operation != "":
		return plan{kind: kindOperation, strs: []string{q.Service, q.Operation}}
	case q.Service != "":
		return plan{kind: kindService, strs: []string{q.Service}}
	case q.Tenant != "":
		return plan{kind: kindTenant, strs: []string{q.Tenant}}
	case q.ErrorOnly:
		return plan{kind: kindError}
	case q.MinDuration > 0:
		return plan{kind: kindDuration, byDuration: true}
	}
	return plan{kind: kindTime}
}

// window is a query's time range in nanoseconds, inclusive.
type window struct{ lo, hi uint64 }

func windowOf(start, end time.Time) window {
	w := window{hi: ^uint64(0)}
	if !start.IsZero() && start.UnixNano() > 0 {
		w.lo = uint64(start.UnixNano())
	}
	if !end.IsZero() {
		w.hi = uint64(max(end.UnixNano(), 0))
	}
	return w
}

func (w window) has(t uint64) bool { return t >= w.lo && t <= w.hi }

// parts returns the partitions that overlap w, newest first when reverse.
func (s *Store) partsIn(w window, reverse bool) []uint32 {
	var out []uint32
	for _, p := range s.partsSnapshot() {
		if partStart(p) <= w.hi && partStart(p)+uint64(partWidth) > w.lo {
			out = append(out, p)
		}
	}
	if reverse {
		slices.Reverse(out)
	}
	return out
}

// bounds are the keys of pl's index in partition p that can match.
func (pl plan) bounds(p uint32, q *TraceQuery, w window) (lower, upper []byte) {
	k := prefix(nil, p, pl.kind)
	for _, s := range pl.strs {
		k = appendStr(k, s)
	}
	if pl.byDuration {
		lower = be64(slices.Clone(k), uint64(q.MinDuration))
		if q.MaxDuration > 0 {
			return lower, be64(k, uint64(q.MaxDuration)+1)
		}
		return lower, prefixEnd(k)
	}
	lower = be64(slices.Clone(k), w.lo)
	if w.hi == ^uint64(0) {
		return lower, prefixEnd(k)
	}
	return lower, be64(k, w.hi+1)
}

// matches says whether a span's summary satisfies q.
func (q *TraceQuery) matches(w window, sum *spanSummary) bool {
	return w.has(sum.start) &&
		(q.Service == "" || string(sum.service) == q.Service) &&
		(q.Operation == "" || string(sum.name) == q.Operation) &&
		(q.Tenant == "" || string(sum.tenant) == q.Tenant) &&
		(!q.ErrorOnly || sum.isError()) &&
		sum.duration >= uint64(q.MinDuration) &&
		(q.MaxDuration == 0 || sum.duration <= uint64(q.MaxDuration))
}

// scanIndex calls fn with each span of partition p that matches q, in
// index order (backward when reverse), until fn returns false.
func (s *Store) scanIndex(ctx context.Context, p uint32, pl plan, q *TraceQuery, w window, reverse bool, fn func(spanRef, *spanSummary) bool) error {
	if pl.corr != "" {
		ok, err := s.present(append(prefix(nil, p, kindCorr), pl.corr...))
		if err != nil || !ok {
			return err
		}
	}
	lower, upper := pl.bounds(p, q, w)
	var bad error
	may := readableIn(ctx)
	err := s.scan(ctx, lower, upper, reverse, func(k, v []byte) bool {
		ref, ok := parseSpanRef(k)
		sum, err := decodeSpanSummary(v)
		if !ok || err != nil {
			bad = fmt.Errorf("read index entry %q: %w", k, errCorrupt)
			return false
		}
		if !q.matches(w, &sum) || !may.has(sum.owner) {
			return true
		}
		return fn(ref, &sum)
	})
	return errors.Join(err, bad)
}

// SearchTraces returns the summaries of the traces that q selects.
func (s *Store) SearchTraces(ctx context.Context, q TraceQuery) ([]TraceSummary, error) {
	if err := q.check(); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultTraceLimit
	}
	limit = min(limit, MaxLimit)
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	pl, w := planFor(&q), windowOf(q.Start, q.End)
	ids, err := s.findTraces(ctx, pl, &q, w, limit)
	if err != nil {
		return nil, fmt.Errorf("search traces: %w", err)
	}
	out := make([]TraceSummary, 0, len(ids))
	for _, id := range ids {
		ts, ok, err := s.summarize(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("search traces: %w", err)
		}
		if ok {
			out = append(out, ts)
		}
	}
	slices.SortStableFunc(out, func(a, b TraceSummary) int {
		if pl.byDuration {
			return int(b.Duration - a.Duration)
		}
		return b.Start.Compare(a.Start)
	})
	return out, nil
}

// findTraces returns the ids of up to limit traces with a matching span:
// those with the newest matching spans, or with the slowest when the plan
// scans durations.
func (s *Store) findTraces(ctx context.Context, pl plan, q *TraceQuery, w window, limit int) ([]pcommon.TraceID, error) {
	if pl.byDuration {
		return s.findSlowest(ctx, pl, q, w, limit)
	}
	seen := map[pcommon.TraceID]bool{}
	var ids []pcommon.TraceID
	for _, p := range s.partsIn(w, true) {
		err := s.scanIndex(ctx, p, pl, q, w, true, func(r spanRef, _ *spanSummary) bool {
			if !seen[r.tid] {
				seen[r.tid] = true
				ids = append(ids, r.tid)
			}
			return len(ids) < limit
		})
		if err != nil || len(ids) >= limit {
			return ids, err
		}
	}
	return ids, nil
}

// findSlowest keeps, per partition, the limit traces with the slowest
// matching spans, then the slowest limit of all.
func (s *Store) findSlowest(ctx context.Context, pl plan, q *TraceQuery, w window, limit int) ([]pcommon.TraceID, error) {
	best := map[pcommon.TraceID]uint64{}
	for _, p := range s.partsIn(w, true) {
		n := 0
		err := s.scanIndex(ctx, p, pl, q, w, true, func(r spanRef, sum *spanSummary) bool {
			if d, ok := best[r.tid]; !ok || sum.duration > d {
				if !ok {
					n++
				}
				best[r.tid] = sum.duration
			}
			return n < limit
		})
		if err != nil {
			return nil, err
		}
	}
	ids := make([]pcommon.TraceID, 0, len(best))
	for id := range best {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b pcommon.TraceID) int {
		if best[a] != best[b] {
			if best[a] > best[b] {
				return -1
			}
			return 1
		}
		return slices.Compare(a[:], b[:])
	})
	return ids[:min(limit, len(ids))], nil
}

// SpanQuery selects spans for request-path analysis: those of Service
// (every service when empty) named Operation (any when empty) that start
// within [Start, End] (zero: unbounded). Limit 0 means no limit.
type SpanQuery struct {
	Service, Operation string
	Start, End         time.Time
	Limit              int
}

// Span is one stored span with what the indexes know of it and the decoded
// OTLP span, its resource and scope (read only).
type Span struct {
	TraceID  pcommon.TraceID
	SpanID   pcommon.SpanID
	Service  string
	Name     string
	Tenant   string
	Start    time.Time
	Duration time.Duration
	Error    bool
	Root     bool
	Resource pcommon.Resource
	Scope    pcommon.InstrumentationScope
	Span     ptrace.Span
}

// Spans calls fn with each span q selects, oldest start first within each
// hour (and hours oldest first), until fn returns false or Limit spans
// were passed. fn must not call Close.
func (s *Store) Spans(ctx context.Context, q SpanQuery, fn func(Span) bool) error {
	tq := TraceQuery{Service: q.Service, Operation: q.Operation, Start: q.Start, End: q.End}
	if err := tq.check(); err != nil {
		return err
	}
	if q.Limit < 0 {
		return fmt.Errorf("%w: limit must not be negative, got %d", ErrBadQuery, q.Limit)
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	pl, w := planFor(&tq), windowOf(q.Start, q.End)
	res := resources{s: s}
	n, stop := 0, false
	var ferr error
	for _, p := range s.partsIn(w, false) {
		err := s.scanIndex(ctx, p, pl, &tq, w, false, func(r spanRef, sum *spanSummary) bool {
			sp, ok, err := s.loadSpan(r, sum, &res)
			if err != nil {
				ferr = err
				return false
			}
			if !ok {
				return true
			}
			n++
			stop = !fn(sp) || (q.Limit > 0 && n >= q.Limit)
			return !stop
		})
		if err = errors.Join(err, ferr); err != nil {
			return fmt.Errorf("read spans: %w", err)
		}
		if stop {
			break
		}
	}
	return nil
}

// loadSpan reads and decodes the span an index entry points to; false when
// it is gone.
func (s *Store) loadSpan(r spanRef, sum *spanSummary, res *resources) (Span, bool, error) {
	val, err := s.getCopy(spanKey(nil, r.part, r.tid, r.sid))
	if err != nil || val == nil {
		return Span{}, false, err
	}
	_, h, item, err := decodeRecord(val)
	if err != nil {
		return Span{}, false, err
	}
	sc, err := res.get(r.part, h)
	if err != nil {
		return Span{}, false, err
	}
	one := *sc
	one.items = [][]byte{item}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(appendRequest(nil, []wireScope{one}))
	if err != nil || td.SpanCount() != 1 {
		return Span{}, false, errors.Join(fmt.Errorf("decode span %s: %w", r.sid, errCorrupt), err)
	}
	rs := td.ResourceSpans().At(0)
	ss := rs.ScopeSpans().At(0)
	return Span{
		TraceID: r.tid, SpanID: r.sid,
		Service: string(sum.service), Name: string(sum.name), Tenant: string(sum.tenant),
		Start: timeOf(sum.start), Duration: time.Duration(sum.duration),
		Error: sum.isError(), Root: sum.isRoot(),
		Resource: rs.Resource(), Scope: ss.Scope(), Span: ss.Spans().At(0),
	}, true, nil
}
