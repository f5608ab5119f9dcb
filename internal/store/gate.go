package store

import (
	"context"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/gate"
)

// gateTracker bounds query concurrency without the on-disk active query log,
// for stores that have no directory of their own.
type gateTracker struct {
	g   *gate.Gate
	max int
}

var _ promql.QueryTracker = (*gateTracker)(nil)

func newGate(maxConcurrent int) *gateTracker {
	return &gateTracker{g: gate.New(maxConcurrent), max: maxConcurrent}
}

func (t *gateTracker) GetMaxConcurrent() int { return t.max }

func (t *gateTracker) Insert(ctx context.Context, _ string) (int, error) {
	return 0, t.g.Start(ctx)
}

func (t *gateTracker) Delete(int) { t.g.Done() }

func (t *gateTracker) Close() error { return nil }
