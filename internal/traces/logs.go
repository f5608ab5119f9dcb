package traces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Limits of log searches.
const (
	DefaultLogLimit = 1000
	// maxRequestTraces bounds the traces a request is followed through.
	maxRequestTraces = 1000
)

// LogQuery selects log records: those carrying TraceID, or RequestID (a
// correlation id, followed as LogsForRequest does), of Service, timed
// within [Start, End] (zero: unbounded). Limit (default 1000, at most
// 10,000) keeps the newest; results are oldest first.
type LogQuery struct {
	TraceID    pcommon.TraceID
	RequestID  string
	Service    string
	Start, End time.Time
	Limit      int
}

// LogRecord is one stored log record.
type LogRecord struct {
	Time, ObservedTime time.Time
	// Service is the resource's service.name.
	Service        string
	SeverityText   string
	SeverityNumber plog.SeverityNumber
	Body           pcommon.Value
	Attributes     pcommon.Map
	Resource       pcommon.Resource
	Scope          pcommon.InstrumentationScope
	TraceID        pcommon.TraceID
	SpanID         pcommon.SpanID
	// CorrelationIDs are the ids the store found in the attributes and body.
	CorrelationIDs []string
}

// SearchLogs returns the records q selects.
func (s *Store) SearchLogs(ctx context.Context, q LogQuery) ([]LogRecord, error) {
	limit, err := logLimit(q.Limit, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	w := windowOf(q.Start, q.End)
	keep := func(r logRef) bool { return w.has(r.t) }
	var refs []logRef
	switch {
	case q.RequestID != "":
		refs, err = s.requestLogRefs(ctx, q.RequestID, keep)
	case !q.TraceID.IsEmpty():
		refs, err = s.traceLogRefs(ctx, q.TraceID, keep)
	default:
		return s.scanLogs(ctx, q.Service, w, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("search logs: %w", err)
	}
	recs, err := s.loadLogs(refs, q.Service, readableIn(ctx))
	if err != nil {
		return nil, fmt.Errorf("search logs: %w", err)
	}
	return recs[max(0, len(recs)-limit):], nil
}

// LogsForRequest returns, oldest first, the log records that carry id as a
// correlation id, and those of the traces whose spans carry it or whose
// logs carry it together with a trace id: one request followed across
// services. It follows at most 1000 traces and keeps the newest 10,000
// records.
func (s *Store) LogsForRequest(ctx context.Context, id string) ([]LogRecord, error) {
	return s.SearchLogs(ctx, LogQuery{RequestID: id, Limit: MaxLimit})
}

func logLimit(limit int, start, end time.Time) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: limit must not be negative, got %d", ErrBadQuery, limit)
	case !start.IsZero() && !end.IsZero() && end.Before(start):
		return 0, fmt.Errorf("%w: end %s is before start %s", ErrBadQuery, end.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
	case limit == 0:
		return DefaultLogLimit, nil
	}
	return min(limit, MaxLimit), nil
}

// traceLogRefs lists the records of trace tid that keep accepts.
func (s *Store) traceLogRefs(ctx context.Context, tid pcommon.TraceID, keep func(logRef) bool) ([]logRef, error) {
	var refs []logRef
	err := s.eachTracePart(kindLogTraceP, tid, func(p uint32) error {
		lower := traceKey(nil, p, kindLogTrace, tid)
		return s.scanRefs(ctx, lower, func(r logRef) bool {
			if keep(r) {
				refs = append(refs, r)
			}
			return len(refs) < MaxLimit
		})
	})
	return refs, err
}

// scanRefs calls fn with the log reference at the end of each key that
// starts with pfx.
func (s *Store) scanRefs(ctx context.Context, pfx []byte, fn func(logRef) bool) error {
	return s.scan(ctx, pfx, prefixEnd(pfx), false, func(k, _ []byte) bool {
		r, ok := parseLogRef(k)
		if !ok || len(k) != len(pfx)+logRefLen {
			return true
		}
		return fn(r)
	})
}

// corrParts lists the partitions where id is carried by a span or a log.
func (s *Store) corrParts(id string) ([]uint32, error) {
	var out []uint32
	var key []byte
	for _, p := range s.partsSnapshot() {
		key = append(prefix(key[:0], p, kindCorr), id...)
		ok, err := s.present(key)
		if err != nil {
			return nil, fmt.Errorf("look up correlation id: %w", err)
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// requestLogRefs lists the records that keep accepts of the request id:
// those carrying it, and those of the traces it leads to.
func (s *Store) requestLogRefs(ctx context.Context, id string, keep func(logRef) bool) ([]logRef, error) {
	parts, err := s.corrParts(id)
	if err != nil {
		return nil, err
	}
	seen := map[logRef]bool{}
	var refs []logRef
	add := func(r logRef) bool {
		if keep(r) && !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
		return len(refs) < MaxLimit
	}
	traces := map[pcommon.TraceID]bool{}
	var order []pcommon.TraceID
	addTrace := func(tid pcommon.TraceID) {
		if !tid.IsEmpty() && !traces[tid] && len(order) < maxRequestTraces {
			traces[tid] = true
			order = append(order, tid)
		}
	}
	for _, p := range parts {
		var all []logRef
		if err := s.scanRefs(ctx, appendStr(prefix(nil, p, kindLogCorr), id), func(r logRef) bool {
			all = append(all, r)
			return len(all) < MaxLimit
		}); err != nil {
			return nil, err
		}
		for _, r := range all {
			add(r)
			tid, err := s.logTraceID(r)
			if err != nil {
				return nil, err
			}
			addTrace(tid)
		}
		q := TraceQuery{CorrelationID: id}
		pl := planFor(&q)
		if err := s.scanIndex(ctx, p, pl, &q, windowOf(time.Time{}, time.Time{}), false, func(r spanRef, _ *spanSummary) bool {
			addTrace(r.tid)
			return len(order) < maxRequestTraces
		}); err != nil {
			return nil, err
		}
	}
	for _, tid := range order {
		trefs, err := s.traceLogRefs(ctx, tid, keep)
		if err != nil {
			return nil, err
		}
		for _, r := range trefs {
			add(r)
		}
	}
	return refs, nil
}

// logTraceID reads the trace id of a stored record.
func (s *Store) logTraceID(r logRef) (pcommon.TraceID, error) {
	recs, err := s.loadLogs([]logRef{r}, "", readable{})
	if err != nil || len(recs) == 0 {
		return pcommon.TraceID{}, err
	}
	return recs[0].TraceID, nil
}

// scanLogs reads the newest limit records of service (every service when
// empty) in w.
func (s *Store) scanLogs(ctx context.Context, service string, w window, limit int) ([]LogRecord, error) {
	var refs []logRef
	// Under tenancy the records themselves are scanned, so that the limit
	// counts only the tenant's: the service index holds no owner.
	may := readableIn(ctx)
	var bad error
	for _, p := range s.partsIn(w, true) {
		pfx := prefix(nil, p, kindLog)
		if service != "" && !may.on {
			pfx = appendStr(prefix(nil, p, kindLogSvc), service)
		}
		lower, upper := be64(slices.Clone(pfx), w.lo), prefixEnd(pfx)
		if w.hi != ^uint64(0) {
			upper = be64(slices.Clone(pfx), w.hi+1)
		}
		err := s.scan(ctx, lower, upper, true, func(k, v []byte) bool {
			r, ok := parseLogRef(k)
			if !ok || len(k) != len(pfx)+logRefLen {
				return true
			}
			if may.on {
				sum, _, _, err := decodeRecord(v)
				if err != nil {
					bad = fmt.Errorf("read log record: %w", err)
					return false
				}
				svc, owner, err := decodeLogSummary(sum)
				if err != nil {
					bad = fmt.Errorf("read log record: %w", err)
					return false
				}
				if service != "" && string(svc) != service || !may.has(owner) {
					return true
				}
			}
			refs = append(refs, r)
			return len(refs) < limit
		})
		if err = errors.Join(err, bad); err != nil {
			return nil, fmt.Errorf("search logs: %w", err)
		}
		if len(refs) >= limit {
			break
		}
	}
	recs, err := s.loadLogs(refs, service, may)
	if err != nil {
		return nil, fmt.Errorf("search logs: %w", err)
	}
	return recs, nil
}

// loadLogs reads the records refs name, of service when it is not empty
// and that may has, sorted oldest first.
func (s *Store) loadLogs(refs []logRef, service string, may readable) ([]LogRecord, error) {
	slices.SortFunc(refs, func(a, b logRef) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	res := resources{s: s}
	out := make([]LogRecord, 0, len(refs))
	var key []byte
	for _, r := range refs {
		key = logKey(key[:0], r)
		val, err := s.getCopy(key)
		if err != nil {
			return nil, fmt.Errorf("read log record: %w", err)
		}
		if val == nil {
			continue // deleted by retention meanwhile
		}
		rec, ok, err := s.decodeLog(r, val, service, may, &res)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out, nil
}

// decodeLog decodes a stored record; false when it is not of service or
// not one may has.
func (s *Store) decodeLog(r logRef, val []byte, service string, may readable, res *resources) (LogRecord, bool, error) {
	sum, h, item, err := decodeRecord(val)
	if err != nil {
		return LogRecord{}, false, fmt.Errorf("read log record: %w", err)
	}
	svc, owner, err := decodeLogSummary(sum)
	if err != nil {
		return LogRecord{}, false, fmt.Errorf("read log record: %w", err)
	}
	if service != "" && string(svc) != service || !may.has(owner) {
		return LogRecord{}, false, nil
	}
	sc, err := res.get(r.part, h)
	if err != nil {
		return LogRecord{}, false, err
	}
	one := *sc
	one.items = [][]byte{item}
	ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(appendRequest(nil, []wireScope{one}))
	if err != nil || ld.LogRecordCount() != 1 {
		return LogRecord{}, false, errors.Join(fmt.Errorf("decode log record: %w", errCorrupt), err)
	}
	rl := ld.ResourceLogs().At(0)
	sl := rl.ScopeLogs().At(0)
	lr := sl.LogRecords().At(0)
	ids := s.corr.fromMap(nil, lr.Attributes())
	var observed time.Time
	if ts := lr.ObservedTimestamp(); ts != 0 {
		observed = ts.AsTime().UTC()
	}
	return LogRecord{
		Time: timeOf(r.t), ObservedTime: observed,
		Service: string(svc), SeverityText: lr.SeverityText(), SeverityNumber: lr.SeverityNumber(),
		Body: lr.Body(), Attributes: lr.Attributes(), Resource: rl.Resource(), Scope: sl.Scope(),
		TraceID: lr.TraceID(), SpanID: lr.SpanID(),
		CorrelationIDs: s.corr.fromBody(ids, lr.Body()),
	}, true, nil
}
