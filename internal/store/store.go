package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// Store is the metric storage every part of Vigil writes to and reads from.
//
// Time ranges are in milliseconds since the Unix epoch and inclusive at both
// ends, as in storage.Queryable. Appenders are not safe for concurrent use;
// take one per goroutine and Commit or Rollback it. Queriers and query results
// must not be used after Close. All methods are safe for concurrent use.
type Store interface {
	storage.Queryable
	storage.AppendableV2

	// Engine returns the PromQL engine that evaluates queries over this Store,
	// with the Store's limits (samples, timeout, concurrency) applied.
	Engine() promql.QueryEngine
	// Now returns the Store's notion of the current time (injected in tests,
	// the simulator and the demo).
	Now() time.Time
	// Close flushes what needs flushing and releases the Store's resources.
	Close() error
}

// ErrReadOnly is returned by appenders of stores that cannot be written to.
var ErrReadOnly = errors.New("store is read-only")

// EngineConfig sets the limits of the PromQL engine.
type EngineConfig struct {
	// MaxSamples is the most samples one query may load into memory.
	MaxSamples int
	// Timeout is the most time one query may take.
	Timeout time.Duration
	// MaxConcurrency is the most queries evaluated at once; more wait.
	MaxConcurrency int
	// LookbackDelta is how far back an instant selector looks for a sample.
	LookbackDelta time.Duration
}

// DefaultEngineConfig returns Prometheus's defaults.
func DefaultEngineConfig() EngineConfig {
	return EngineConfig{
		MaxSamples:     50_000_000,
		Timeout:        2 * time.Minute,
		MaxConcurrency: 20,
		LookbackDelta:  5 * time.Minute,
	}
}

// Validate reports the first invalid limit.
func (c EngineConfig) Validate() error {
	switch {
	case c.MaxSamples <= 0:
		return fmt.Errorf("max_samples must be positive, got %d", c.MaxSamples)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout must be positive, got %s", c.Timeout)
	case c.MaxConcurrency <= 0:
		return fmt.Errorf("max_concurrency must be positive, got %d", c.MaxConcurrency)
	case c.LookbackDelta <= 0:
		return fmt.Errorf("lookback_delta must be positive, got %s", c.LookbackDelta)
	}
	return nil
}

// newEngine builds a PromQL engine with the limits of cfg. trackerDir holds
// the active-query log that bounds concurrency; empty means a bound without
// the log file.
func newEngine(cfg EngineConfig, trackerDir string, logger *slog.Logger, reg prometheus.Registerer) (*promql.Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	var tracker promql.QueryTracker
	if trackerDir != "" {
		t, err := promql.NewActiveQueryTracker(trackerDir, cfg.MaxConcurrency, logger)
		if err != nil {
			return nil, fmt.Errorf("active query tracker in %s: %w", trackerDir, err)
		}
		tracker = t
	} else {
		tracker = newGate(cfg.MaxConcurrency)
	}
	return promql.NewEngine(promql.EngineOpts{
		Logger:               logger,
		Reg:                  reg,
		MaxSamples:           cfg.MaxSamples,
		Timeout:              cfg.Timeout,
		ActiveQueryTracker:   tracker,
		LookbackDelta:        cfg.LookbackDelta,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		Parser:               parser.NewParser(parser.Options{}),
	}), nil
}

// Query evaluates an instant PromQL query over s at ts. The result is the
// caller's: it stays valid after later queries.
func Query(ctx context.Context, s Store, qs string, ts time.Time) (parser.Value, annotations.Annotations, error) {
	q, err := s.Engine().NewInstantQuery(ctx, s, nil, qs, ts)
	if err != nil {
		return nil, nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	return detach(res.Value), res.Warnings, res.Err
}

// QueryRange evaluates a range PromQL query over s. The result is the
// caller's: it stays valid after later queries.
func QueryRange(ctx context.Context, s Store, qs string, start, end time.Time, step time.Duration) (parser.Value, annotations.Annotations, error) {
	q, err := s.Engine().NewRangeQuery(ctx, s, nil, qs, start, end, step)
	if err != nil {
		return nil, nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	return detach(res.Value), res.Warnings, res.Err
}

// detach copies what of a result the engine keeps in its pools: Close hands
// the point slices (and the histograms they point to) to the next query,
// which overwrites them.
func detach(v parser.Value) parser.Value {
	switch v := v.(type) {
	case promql.Matrix:
		out := make(promql.Matrix, len(v))
		for i, s := range v {
			out[i] = s
			out[i].Floats = slices.Clone(s.Floats)
			if s.Histograms != nil {
				out[i].Histograms = make([]promql.HPoint, len(s.Histograms))
				for j, p := range s.Histograms {
					out[i].Histograms[j] = promql.HPoint{T: p.T, H: p.H.Copy()}
				}
			}
		}
		return out
	case promql.Vector:
		out := slices.Clone(v)
		for i := range out {
			if out[i].H != nil {
				out[i].H = out[i].H.Copy()
			}
		}
		return out
	}
	return v
}
