package fileimport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/vigil-obs/vigil/internal/store"
)

// TempStore is an embedded store on a temporary directory holding files,
// for one-shot commands (`vigil diagnose --input`). Close removes it.
type TempStore struct {
	*store.Embedded
	dir      string
	interval time.Duration
}

// OpenTemp writes files as blocks into a new temporary directory and opens
// an embedded store on it with the default limits; now is its clock.
func OpenTemp(ctx context.Context, files []*File, now func() time.Time, logger *slog.Logger) (*TempStore, error) {
	dir, err := os.MkdirTemp("", "vigil-input-")
	if err != nil {
		return nil, fmt.Errorf("create temporary store: %w", err)
	}
	if _, err := WriteBlocks(ctx, dir, files, 0, logger); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cfg := store.DefaultEmbeddedConfig(dir)
	// Retention counts back from the newest block: keep everything loaded,
	// whatever its span (the plausible range of Options is two centuries).
	cfg.Retention = time.Duration(math.MaxInt64)
	cfg.OutOfOrderWindow = 0
	s, err := store.OpenEmbedded(cfg, now, logger, nil)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return &TempStore{Embedded: s, dir: dir, interval: Sum(files).Interval}, nil
}

// Interval is how often the files' series were sampled: the median gap
// between consecutive samples (0 when no series has two).
func (t *TempStore) Interval() time.Duration { return t.interval }

// Close closes the store and removes its directory.
func (t *TempStore) Close() error {
	return errors.Join(t.Embedded.Close(), os.RemoveAll(t.dir))
}
