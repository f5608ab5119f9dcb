package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// EmbeddedConfig configures the embedded store.
type EmbeddedConfig struct {
	// Dir is the TSDB directory (blocks, WAL, lock file).
	Dir string
	// Retention is how long samples are kept.
	Retention time.Duration
	// OutOfOrderWindow is how far behind the newest sample the head still
	// accepts samples (backfilled history older than that goes in as blocks).
	OutOfOrderWindow time.Duration
	// MaxExemplars is the size of the exemplar ring buffer; 0 disables exemplars.
	MaxExemplars int64
	// Engine sets the PromQL limits.
	Engine EngineConfig
}

// DefaultEmbeddedConfig returns the defaults of `vigil serve`.
func DefaultEmbeddedConfig(dir string) EmbeddedConfig {
	return EmbeddedConfig{
		Dir:              dir,
		Retention:        15 * 24 * time.Hour,
		OutOfOrderWindow: 24 * time.Hour,
		MaxExemplars:     100_000,
		Engine:           DefaultEngineConfig(),
	}
}

// Validate reports the first invalid setting.
func (c EmbeddedConfig) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("data directory is empty")
	case c.Retention <= 0:
		return fmt.Errorf("retention must be positive, got %s", c.Retention)
	case c.OutOfOrderWindow < 0:
		return fmt.Errorf("out-of-order window must not be negative, got %s", c.OutOfOrderWindow)
	case c.MaxExemplars < 0:
		return fmt.Errorf("max exemplars must not be negative, got %d", c.MaxExemplars)
	}
	return c.Engine.Validate()
}

// Embedded is the Store on the Prometheus TSDB in a local directory.
type Embedded struct {
	db     *tsdb.DB
	stats  *tsdb.DBStats
	engine *promql.Engine
	now    func() time.Time
}

var _ Store = (*Embedded)(nil)

// OpenEmbedded opens (or creates) the TSDB in cfg.Dir, replaying its WAL.
// It fails with a clear error when another process holds the directory.
// now is the clock; nil means time.Now.
func OpenEmbedded(cfg EmbeddedConfig, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) (*Embedded, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	// An import a crash interrupted is finished (or undone) before the
	// TSDB reads the blocks, under the lock the TSDB then takes.
	release, err := LockDir(cfg.Dir, nil)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("open data directory %s: %w", cfg.Dir, ErrLocked)
	}
	if err != nil {
		return nil, err
	}
	if err := errors.Join(RecoverBlockMoves(cfg.Dir, logger.With("component", "tsdb")), release()); err != nil {
		return nil, fmt.Errorf("open data directory %s: %w", cfg.Dir, err)
	}
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = cfg.Retention.Milliseconds()
	opts.OutOfOrderTimeWindow = cfg.OutOfOrderWindow.Milliseconds()
	opts.EnableExemplarStorage = cfg.MaxExemplars > 0
	opts.MaxExemplars = cfg.MaxExemplars
	opts.EnableOverlappingCompaction = true
	stats := tsdb.NewDBStats()
	db, err := tsdb.Open(cfg.Dir, logger.With("component", "tsdb"), reg, opts, stats)
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("open data directory %s: %w", cfg.Dir, ErrLocked)
		}
		return nil, fmt.Errorf("open data directory %s: %w", cfg.Dir, err)
	}
	engine, err := newEngine(cfg.Engine, filepath.Join(cfg.Dir, "queries"), logger.With("component", "promql"), reg)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &Embedded{db: db, stats: stats, engine: engine, now: now}, nil
}

// Querier implements storage.Queryable.
func (e *Embedded) Querier(mint, maxt int64) (storage.Querier, error) {
	return e.db.Querier(mint, maxt)
}

// ChunkQuerier implements storage.ChunkQueryable (used by remote read).
func (e *Embedded) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	return e.db.ChunkQuerier(mint, maxt)
}

// ExemplarQuerier implements storage.ExemplarQueryable.
func (e *Embedded) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	return e.db.ExemplarQuerier(ctx)
}

// AppenderV2 implements storage.AppendableV2.
func (e *Embedded) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return e.db.AppenderV2(ctx)
}

// Engine implements Store.
func (e *Embedded) Engine() promql.QueryEngine { return e.engine }

// Now implements Store.
func (e *Embedded) Now() time.Time { return e.now() }

// DB exposes the TSDB for administration (stats, snapshots, the status API).
func (e *Embedded) DB() *tsdb.DB { return e.db }

// BlockMetas lists the persisted blocks (for the TSDB status API).
func (e *Embedded) BlockMetas() ([]tsdb.BlockMeta, error) { return e.db.BlockMetas(), nil }

// Stats returns head cardinality statistics (for the TSDB status API).
func (e *Embedded) Stats(statsByLabelName string, limit int) (*tsdb.Stats, error) {
	return e.db.Head().Stats(statsByLabelName, limit), nil
}

// WALReplayStatus reports the progress of the WAL replay at start-up.
func (e *Embedded) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return e.stats.Head.WALReplayStatus.GetWALReplayStatus(), nil
}

// Delete marks samples matching ms in [mint, maxt] deleted (admin API).
func (e *Embedded) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	return e.db.Delete(ctx, mint, maxt, ms...)
}

// CleanTombstones removes deleted data from disk (admin API).
func (e *Embedded) CleanTombstones() error { return e.db.CleanTombstones() }

// Snapshot writes a snapshot of the store into dir (admin API).
func (e *Embedded) Snapshot(dir string, withHead bool) error { return e.db.Snapshot(dir, withHead) }

// Close stops the engine and closes the TSDB; the WAL makes everything
// committed durable, and closing lets the head be persisted cleanly.
func (e *Embedded) Close() error {
	return errors.Join(e.engine.Close(), e.db.Close())
}
