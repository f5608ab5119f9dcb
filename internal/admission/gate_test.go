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
	g := NewFairGate(8, nil)
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
	if g.running != 0 || len(g.clients) != 0 {
		t.Fatalf("after every release: running %d, clients %d", g.running, len(g.clients))
	}
}

func TestFairGateCancel(t *testing.T) {
	g := NewFairGate(1, nil)
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
	if g.running != 0 || len(g.clients) != 0 {
		t.Fatalf("after cancel and release: running %d clients %d", g.running, len(g.clients))
	}
	var ng *FairGate
	if err := ng.Acquire(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	ng.Release("x")
}
