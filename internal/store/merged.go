package store

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// Merged is what an attached `vigil serve` reads: the team's backend (a
// Remote) and what Vigil derives and keeps itself (the Embedded store:
// span metrics, the service graph, log signals, pushes, drift, recorded
// rules), as one store. Reads merge both with Prometheus's merge querier
// (a series in both is one series, its samples deduplicated); writes go to
// the embedded store; PromQL is evaluated locally by the embedded store's
// engine. A failed read of either fails the query: an evaluation over
// half the data could page or resolve falsely.
type Merged struct {
	local  *Embedded
	remote storage.Queryable
}

var _ Store = (*Merged)(nil)

// NewMerged returns the store that reads local and remote (a Remote, or
// any other store read alongside) as one. It does not own them: Close
// closes neither.
func NewMerged(local *Embedded, remote storage.Queryable) *Merged {
	return &Merged{local: local, remote: remote}
}

// Querier implements storage.Queryable.
func (m *Merged) Querier(mint, maxt int64) (storage.Querier, error) {
	lq, err := m.local.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	rq, err := m.remote.Querier(mint, maxt)
	if err != nil {
		_ = lq.Close()
		return nil, err
	}
	return storage.NewMergeQuerier([]storage.Querier{lq, rq}, nil, storage.ChainedSeriesMerge), nil
}

// AppenderV2 implements storage.AppendableV2: the embedded store's.
func (m *Merged) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return m.local.AppenderV2(ctx)
}

// Engine implements Store: the embedded store's engine.
func (m *Merged) Engine() promql.QueryEngine { return m.local.Engine() }

// Now implements Store.
func (m *Merged) Now() time.Time { return m.local.Now() }

// Probe reports whether the backend answers (Remote.Probe); a store that
// cannot be probed always does.
func (m *Merged) Probe(ctx context.Context) error {
	if p, ok := m.remote.(interface{ Probe(context.Context) error }); ok {
		return p.Probe(ctx)
	}
	return nil
}

// Close implements Store; the stores are their owner's to close.
func (m *Merged) Close() error { return nil }
