package traces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ctxCheckEvery is how many index entries a scan reads between looks at
// its context.
const ctxCheckEvery = 1024

// present says whether key exists; Pebble's bloom filters answer most
// absent keys without reading a data block.
func (s *Store) present(key []byte) (bool, error) {
	_, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// getCopy returns a copy of key's value, nil when absent.
func (s *Store) getCopy(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// scan calls fn with each key and value in [lower, upper), backward when
// reverse, until fn returns false. The slices are valid during the call.
func (s *Store) scan(ctx context.Context, lower, upper []byte, reverse bool, fn func(k, v []byte) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	n := 0
	step, ok := it.Next, it.First()
	if reverse {
		step, ok = it.Prev, it.Last()
	}
	for ; ok; ok = step() {
		if n++; n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, it.Close())
			}
		}
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// eachTracePart calls fn with each partition that holds spans (kind T) or
// logs (kind U) of trace tid, oldest first.
func (s *Store) eachTracePart(kind byte, tid pcommon.TraceID, fn func(p uint32) error) error {
	var key []byte
	for _, p := range s.partsSnapshot() {
		key = traceKey(key[:0], p, kind, tid)
		ok, err := s.present(key)
		if err != nil {
			return fmt.Errorf("look up trace %s: %w", tid, err)
		}
		if ok {
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachSpanRecord calls fn with the value of each stored span of trace tid
// that a read in ctx may see.
func (s *Store) eachSpanRecord(ctx context.Context, tid pcommon.TraceID, fn func(p uint32, val []byte) error) error {
	may := readableIn(ctx)
	return s.eachTracePart(kindTrace, tid, func(p uint32) error {
		lower := traceKey(nil, p, kindSpan, tid)
		var ferr error
		err := s.scan(ctx, lower, prefixEnd(lower), false, func(_, v []byte) bool {
			if may.on {
				b, _, _, err := decodeRecord(v)
				if err != nil {
					ferr = fmt.Errorf("read span of trace %s: %w", tid, err)
					return false
				}
				sum, err := decodeSpanSummary(b)
				if err != nil {
					ferr = fmt.Errorf("read span of trace %s: %w", tid, err)
					return false
				}
				if !may.has(sum.owner) {
					return true
				}
			}
			ferr = fn(p, v)
			return ferr == nil
		})
		return errors.Join(err, ferr)
	})
}

// resources reads resource records, each once per call.
type resources struct {
	s    *Store
	recs map[uint64]*wireScope
}

// get returns the resource record h of partition p (an empty one when it
// is missing). It keeps at most 1024 records.
func (r *resources) get(p uint32, h uint64) (*wireScope, error) {
	if sc, ok := r.recs[h]; ok {
		return sc, nil
	}
	if r.recs == nil || len(r.recs) >= 1024 {
		r.recs = map[uint64]*wireScope{}
	}
	b, err := r.s.getCopy(resourceKey(nil, p, h))
	if err != nil {
		return nil, fmt.Errorf("read resource: %w", err)
	}
	sc, err := decodeResourceRecord(b)
	if err != nil && b != nil {
		return nil, err
	}
	r.recs[h] = &sc
	return &sc, nil
}

// Trace returns every stored span of the trace, grouped by resource and
// scope; ErrNotFound when there is none.
func (s *Store) Trace(ctx context.Context, tid pcommon.TraceID) (ptrace.Traces, error) {
	if err := s.acquire(); err != nil {
		return ptrace.Traces{}, err
	}
	defer s.release()
	res := resources{s: s}
	var groups []wireScope
	byHash := map[uint64]int{}
	err := s.eachSpanRecord(ctx, tid, func(p uint32, val []byte) error {
		_, h, item, err := decodeRecord(val)
		if err != nil {
			return fmt.Errorf("read span of trace %s: %w", tid, err)
		}
		i, ok := byHash[h]
		if !ok {
			sc, err := res.get(p, h)
			if err != nil {
				return err
			}
			i = len(groups)
			byHash[h] = i
			groups = append(groups, wireScope{
				resource: sc.resource, resourceSchema: sc.resourceSchema,
				scope: sc.scope, scopeSchema: sc.scopeSchema,
			})
		}
		groups[i].items = append(groups[i].items, append([]byte(nil), item...))
		return nil
	})
	if err != nil {
		return ptrace.Traces{}, err
	}
	if len(groups) == 0 {
		return ptrace.Traces{}, ErrNotFound
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(appendRequest(nil, groups))
	if err != nil {
		return ptrace.Traces{}, fmt.Errorf("decode trace %s: %w", tid, err)
	}
	return td, nil
}

// TraceSummary describes one trace found by SearchTraces.
type TraceSummary struct {
	TraceID pcommon.TraceID
	// RootService and RootOperation are those of the earliest span without
	// a parent, or of the earliest span while the root is missing.
	RootService, RootOperation string
	// Start is the earliest span start; Duration runs to the latest end.
	Start     time.Time
	Duration  time.Duration
	SpanCount int
	// Error is set when any span has status ERROR.
	Error bool
	// Services are the services of the trace's spans, sorted.
	Services []string
	// Tenant is the root's tenant, else the first one found.
	Tenant string
}

// summarize builds the summary of trace tid from its spans' summaries;
// false when no span is stored.
func (s *Store) summarize(ctx context.Context, tid pcommon.TraceID) (TraceSummary, bool, error) {
	ts := TraceSummary{TraceID: tid}
	var first, end uint64
	rootStart := ^uint64(0)
	var haveRoot bool
	var rootTenant, anyTenant string
	err := s.eachSpanRecord(ctx, tid, func(_ uint32, val []byte) error {
		b, _, _, err := decodeRecord(val)
		if err != nil {
			return fmt.Errorf("read span of trace %s: %w", tid, err)
		}
		sum, err := decodeSpanSummary(b)
		if err != nil {
			return fmt.Errorf("read span of trace %s: %w", tid, err)
		}
		ts.SpanCount++
		if ts.SpanCount == 1 || sum.start < first {
			first = sum.start
		}
		end = max(end, sum.start+sum.duration)
		ts.Error = ts.Error || sum.isError()
		if svc := string(sum.service); !slices.Contains(ts.Services, svc) {
			ts.Services = append(ts.Services, svc)
		}
		if sum.isRoot() && (!haveRoot || sum.start < rootStart) || !haveRoot && sum.start <= rootStart {
			haveRoot = haveRoot || sum.isRoot()
			rootStart = sum.start
			ts.RootService, ts.RootOperation = string(sum.service), string(sum.name)
			rootTenant = string(sum.tenant)
		}
		if anyTenant == "" {
			anyTenant = string(sum.tenant)
		}
		return nil
	})
	if err != nil || ts.SpanCount == 0 {
		return ts, false, err
	}
	slices.Sort(ts.Services)
	ts.Tenant = rootTenant
	if ts.Tenant == "" {
		ts.Tenant = anyTenant
	}
	ts.Start = timeOf(first)
	ts.Duration = time.Duration(end - first)
	return ts, true, nil
}
