package limits

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// queryRecheck is how often a query waiting for a slot reads the limit
// again, so that a limit raised by a reload lets it in without waiting
// for another query to end.
const queryRecheck = time.Second

// querySlots counts a tenant's running queries.
type querySlots struct {
	mu       sync.Mutex
	inflight int
	// wake is closed, and cleared, when a query ends.
	wake chan struct{}
}

func (q *querySlots) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inflight > 0
}

// AcquireQuery takes one of tenant's max_query_concurrency query slots.
// When all are taken it waits for one until ctx ends, then refuses with a
// *LimitError that wraps ctx's error: pass the request's context, bounded
// by the query timeout, so that a waiting query gives up when its client
// does or when it could no longer finish in time. (Mimir queues queries
// per tenant in the query-frontend; this is that queue without the
// frontend.) A slot is free again when release is called; calling release
// more than once is safe.
func (e *Enforcer) AcquireQuery(ctx context.Context, tenant string) (release func(), err error) {
	st := e.state(tenant, e.now())
	q := &st.q
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		limit := e.src.For(tenant).MaxQueryConcurrency
		q.mu.Lock()
		if limit == 0 || q.inflight < limit {
			q.inflight++
			q.mu.Unlock()
			return q.releaser(), nil
		}
		if q.wake == nil {
			q.wake = make(chan struct{})
		}
		wake := q.wake
		q.mu.Unlock()
		if t == nil {
			t = time.NewTimer(queryRecheck)
		} else {
			t.Reset(queryRecheck)
		}
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			st.m.rejected(e.m, MaxQueryConcurrency).Inc()
			return nil, &LimitError{
				Tenant: tenant,
				Limit:  MaxQueryConcurrency,
				Msg:    "query concurrency limit (" + strconv.Itoa(limit) + ") reached: no query slot freed before the request ended (" + ctx.Err().Error() + ")",
				cause:  ctx.Err(),
			}
		}
	}
}

// releaser returns a function that frees one slot, once.
func (q *querySlots) releaser() func() {
	var done atomic.Bool
	return func() {
		if done.Swap(true) {
			return
		}
		q.mu.Lock()
		q.inflight--
		if q.wake != nil {
			close(q.wake)
			q.wake = nil
		}
		q.mu.Unlock()
	}
}
