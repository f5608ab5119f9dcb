package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

// acquired reports whether Acquire returns within a short wait.
func acquired(g *FairGate, ctx context.Context, client string) chan error {
	ch := make(chan error, 1)
	go func() { ch <- g.Acquire(ctx, client) }()
	return ch
}

func waitFor(t *testing.T, ch chan error, want bool) {
	t.Helper()
	select {
	case err := <-ch:
		if !want {
			t.Fatalf("acquired (err %v), want it still waiting", err)
		}
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(100 * time.Millisecond):
		if want {
			t.Fatal("still waiting, want acquired")
		}
	}
}

func TestFairGateShares(t *testing.T) {
	g := NewFairGate(8, "test", nil)
	g.cores = 2
	ctx := context.Background()
	// Alone, the dashboard may run up to the capacity.
	for range 8 {
		if err := g.Acquire(ctx, "dashboard"); err != nil {
			t.Fatal(err)
		}
	}
	more := acquired(g, ctx, "dashboard")
	waitFor(t, more, false)
	// The pager waits for a slot, and gets the first one freed, before
	// the dashboard's waiting query.
	pager := acquired(g, ctx, "pager")
	waitFor(t, pager, false)
	g.Release("dashboard")
	waitFor(t, pager, true)
	waitFor(t, more, false)
	// While both are active the dashboard's share is one core: its
	// queries wait until it runs fewer than one.
	for range 6 {
		g.Release("dashboard")
	}
	waitFor(t, more, false)
	g.Release("dashboard") // the last of the first eight
	waitFor(t, more, true)
	// The pager, running one of its share of one, waits for its own.
	second := acquired(g, ctx, "pager")
	waitFor(t, second, false)
	g.Release("pager")
	waitFor(t, second, true)
	g.Release("pager")
	g.Release("dashboard")
	if g.running != 0 {
		t.Fatalf("after every release: running %d", g.running)
	}
	// The pager keeps its place for a while after its last query: the
	// dashboard's share stays one core.
	if err := g.Acquire(ctx, "dashboard"); err != nil {
		t.Fatal(err)
	}
	third := acquired(g, ctx, "dashboard")
	waitFor(t, third, false)
	// Once the pager has been quiet for activeFor, it is forgotten and the
	// dashboard alone gets the whole gate again.
	now := time.Now().Add(activeFor + 2*time.Second)
	g.mu.Lock()
	g.now = func() time.Time { return now }
	g.mu.Unlock()
	fourth := acquired(g, ctx, "dashboard") // its Acquire sweeps
	waitFor(t, third, true)
	waitFor(t, fourth, true)
	if len(g.clients) != 1 {
		t.Fatalf("clients after the sweep: %d, want 1", len(g.clients))
	}
}

func TestFairGateCancel(t *testing.T) {
	g := NewFairGate(1, "test", nil)
	if err := g.Acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquired(g, ctx, "b")
	waitFor(t, ch, false)
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled wait: %v", err)
	}
	g.Release("a")
	if g.running != 0 || g.clients["b"].waiters.Len() != 0 {
		t.Fatalf("after cancel and release: running %d, b waiting %d", g.running, g.clients["b"].waiters.Len())
	}
	var ng *FairGate
	if err := ng.Acquire(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	ng.Release("x")
}

func TestFairGateWithin(t *testing.T) {
	g := NewFairGate(1, "test", nil)
	if err := g.Within(context.Background(), "a", time.Second); err != nil {
		t.Fatal(err)
	}
	err := g.Within(context.Background(), "b", 50*time.Millisecond)
	var r *Refusal
	if !errors.As(err, &r) || r.Status != 429 {
		t.Fatalf("past the wait: %v, want a 429 refusal", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Within(ctx, "b", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("client gone: %v, want context.Canceled", err)
	}
	g.Release("a")
	var ng *FairGate
	if err := ng.Within(context.Background(), "x", time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
