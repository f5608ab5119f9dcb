package forward

import (
	"context"
	"iter"
	"sync"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// batch is one queued request: the copy of what a consumer was given.
type batch struct {
	// signal is SignalTraces or SignalLogs.
	signal string
	traces ptrace.Traces
	logs   plog.Logs
	// n is the number of spans or log records.
	n int
}

// queue is a bounded FIFO of batches that drops the oldest when full.
// Pushes never block; pops wait for a batch, the queue's close or the
// context's end.
type queue struct {
	// mu serialises pushes and close: between a push's taking the oldest
	// batch out and putting its own in, only pops run, which only make
	// room.
	mu     sync.Mutex
	ch     chan *batch
	closed bool
}

func newQueue(size int) *queue { return &queue{ch: make(chan *batch, size)} }

// len returns the number of queued batches.
func (q *queue) len() int { return len(q.ch) }

// push adds b; when the queue is full it takes out the oldest batch and
// hands it to drop first. After close, b itself is dropped.
func (q *queue) push(b *batch, drop func(*batch)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		drop(b)
		return
	}
	for {
		select {
		case q.ch <- b:
			return
		default:
		}
		select {
		case old := <-q.ch:
			drop(old)
		default:
		}
	}
}

// pop returns the oldest batch; false when the queue is closed and empty
// or ctx has ended.
func (q *queue) pop(ctx context.Context) (*batch, bool) {
	select {
	case b, ok := <-q.ch:
		return b, ok
	case <-ctx.Done():
		return nil, false
	}
}

// close ends pushes; pops return what is left, then false. It is safe to
// call twice.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}

// rest yields what is left in a closed queue.
func (q *queue) rest() iter.Seq[*batch] {
	return func(yield func(*batch) bool) {
		for b := range q.ch {
			if !yield(b) {
				return
			}
		}
	}
}
