package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A page never waits on a slow query past its render budget
// (Options.RenderBudget). Every query of a page runs through loads: a
// query that has not answered by the budget goes on in the background,
// under its own QueryTimeout, and the page renders what it has, a chart
// that waits says it is loading, and the page reloads itself with its data
// clock pinned (?at=), so that the reload asks the same queries and finds
// their answers here. Only such a reload takes a kept answer: a page asked
// anew reads anew, and joins a run of the same query still in progress. A page whose own data (its answer's counts) waits
// renders its frame and says so. The JSON APIs carry no budget: they wait
// for their queries, as a client of a JSON API expects.

// errLoading is a query that ran past the page's render budget and goes
// on in the background.
var errLoading = errors.New("still loading")

const (
	// defaultRenderBudget is how long a page waits for its queries.
	defaultRenderBudget = 3 * time.Second
	// loadTTL is how long an answer is kept for the reloads that ask
	// for it.
	loadTTL = time.Minute
	// maxLoads bounds the answers kept; the oldest answered go first.
	maxLoads = 256
	// loadReload is the loading page's reload interval, in seconds.
	loadReload = 2
)

// load is one query's run: done is closed when val and err are set.
type load struct {
	done chan struct{}
	val  any
	err  error
	at   time.Time // when it answered
}

// loads runs the pages' queries once per key, keeps their answers for
// loadTTL, and bounds the queries running in the background.
type loads struct {
	mu  sync.Mutex
	m   map[string]*load
	bg  chan struct{}
	now func() time.Time // wall clock
}

func newLoads(parallel int) *loads {
	return &loads{m: map[string]*load{}, bg: make(chan struct{}, parallel), now: time.Now}
}

// budgetKey carries a page request's *budget in its context.
type budgetKey struct{}

// budget is a page request's render budget: until when its queries are
// waited for, whether it may take kept answers (a reload's), and how many
// ran past it.
type budget struct {
	until   time.Time
	reuse   bool
	pending atomic.Int32
}

func withBudget(ctx context.Context, until time.Time, reuse bool) (context.Context, *budget) {
	b := &budget{until: until, reuse: reuse}
	return context.WithValue(ctx, budgetKey{}, b), b
}

// do returns the answer of run for key: a kept one, the one of a run in
// progress, or a new run's. The run goes on without ctx's cancellation,
// bounded by timeout. Under a page's budget, a run that has not answered
// by its end is errLoading; without one, do waits for it (or for ctx).
func (l *loads) do(ctx context.Context, key string, timeout time.Duration, run func(context.Context) (any, error)) (any, error) {
	return l.wait(ctx, l.get(ctx, key, timeout, true, run))
}

// take is do for an answer that is used once: a page's data, whose
// charts may have been loading when it was built. The answer is dropped
// when it is returned; one still running is left for the reload.
func (l *loads) take(ctx context.Context, key string, timeout time.Duration, run func(context.Context) (any, error)) (any, error) {
	v, err := l.wait(ctx, l.get(ctx, key, timeout, false, run))
	if !errors.Is(err, errLoading) {
		l.mu.Lock()
		delete(l.m, key)
		l.mu.Unlock()
	}
	return v, err
}

// wait waits for e as do says.
func (l *loads) wait(ctx context.Context, e *load) (any, error) {
	var wait <-chan time.Time
	b, _ := ctx.Value(budgetKey{}).(*budget)
	if b != nil {
		t := time.NewTimer(max(0, time.Until(b.until)))
		defer t.Stop()
		wait = t.C
	}
	select {
	case <-e.done:
		return e.val, e.err
	case <-wait:
		b.pending.Add(1)
		return nil, errLoading
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// get returns key's load, starting run for it when there is none. A run
// in progress is joined; a kept answer is taken only by a reload (a
// budget that may reuse), so that a page asked anew reads anew. A query's
// run takes one of the query slots (slot); a page's, whose queries take
// theirs, does not.
func (l *loads) get(ctx context.Context, key string, timeout time.Duration, slot bool, run func(context.Context) (any, error)) *load {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if e, ok := l.m[key]; ok {
		select {
		case <-e.done:
			if b != nil && b.reuse && now.Sub(e.at) < loadTTL {
				return e
			}
		default:
			return e // running
		}
	}
	l.evict(now)
	e := &load{done: make(chan struct{})}
	l.m[key] = e
	bctx := context.WithoutCancel(ctx)
	go func() {
		// The wait for a slot counts against the run's timeout, so a
		// burst of pages cannot queue runs for longer than that.
		qctx, cancel := context.WithTimeout(bctx, timeout)
		defer cancel()
		var val any
		var err error
		switch {
		case !slot:
			val, err = run(qctx)
		default:
			select {
			case l.bg <- struct{}{}:
				val, err = run(qctx)
				<-l.bg
			case <-qctx.Done():
				err = fmt.Errorf("waited %s for one of the UI's %d query slots", timeout, cap(l.bg))
			}
		}
		l.mu.Lock()
		e.val, e.err, e.at = val, err, l.now()
		l.mu.Unlock()
		close(e.done)
	}()
	return e
}

// evict drops the answers older than loadTTL and, past maxLoads, the
// oldest answered; runs in progress stay. l.mu is held.
func (l *loads) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	answered := 0
	for k, e := range l.m {
		select {
		case <-e.done:
		default:
			continue
		}
		if now.Sub(e.at) >= loadTTL {
			delete(l.m, k)
			continue
		}
		answered++
		if oldest == "" || e.at.Before(oldestAt) {
			oldest, oldestAt = k, e.at
		}
	}
	if answered >= maxLoads && oldest != "" {
		delete(l.m, oldest)
	}
}
