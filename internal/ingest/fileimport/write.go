package fileimport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/vigil-obs/vigil/internal/store"
)

// Stats counts what was loaded.
type Stats struct {
	Files, Series, Samples, Duplicates int
	// Blocks counts the TSDB blocks written (WriteBlocks only).
	Blocks int
	// MinT and MaxT are the oldest and newest timestamps in milliseconds.
	MinT, MaxT int64
	// Interval is the median gap between a series' consecutive samples, to
	// the second: how often the data was sampled (0 when no series has
	// two samples).
	Interval time.Duration
}

// Sum returns the totals over files (series are counted per file).
func Sum(files []*File) Stats {
	s := Stats{Files: len(files), MinT: math.MaxInt64, MaxT: math.MinInt64}
	gaps := map[int64]int{}
	for _, f := range files {
		s.Series += f.Series
		s.Samples += f.Samples
		s.Duplicates += f.Duplicates
		if f.Samples > 0 {
			s.MinT = min(s.MinT, f.MinT)
			s.MaxT = max(s.MaxT, f.MaxT)
		}
		for g, n := range f.gaps {
			gaps[g] += n
		}
	}
	if s.Samples == 0 {
		s.MinT, s.MaxT = 0, 0
	}
	s.Interval = medianGap(gaps)
	return s
}

// medianGap returns the median of gaps (seconds → how many), 0 for none.
func medianGap(gaps map[int64]int) time.Duration {
	keys := slices.Sorted(maps.Keys(gaps))
	total := 0
	for _, k := range keys {
		total += gaps[k]
	}
	seen := 0
	for _, k := range keys {
		if seen += gaps[k]; 2*seen >= total {
			return time.Duration(k) * time.Second
		}
	}
	return 0
}

// each calls fn for every sample of f with a timestamp in [mint, maxt),
// in file order, duplicates left out. It returns the smallest timestamp at
// or after maxt, or math.MaxInt64 when there is none.
func (f *File) each(mint, maxt int64, fn func(lset labels.Labels, t int64, v float64) error) (int64, error) {
	next := int64(math.MaxInt64)
	for _, s := range f.samples {
		if s.t < mint {
			continue
		}
		if s.t >= maxt {
			next = min(next, s.t)
			continue
		}
		if err := fn(f.series[s.ref], s.t, s.v); err != nil {
			return next, err
		}
	}
	return next, nil
}

// Append writes every sample of files through app in commits of at most
// batch samples. Samples older than what the appendable accepts (a TSDB
// head's out-of-order window) fail; use WriteBlocks for old history.
func Append(ctx context.Context, app storage.AppendableV2, files []*File, batch int) (Stats, error) {
	if batch <= 0 {
		batch = 10_000
	}
	for _, f := range files {
		a := app.AppenderV2(ctx)
		n := 0
		_, err := f.each(math.MinInt64, math.MaxInt64, func(lset labels.Labels, t int64, v float64) error {
			if _, err := a.Append(0, lset, 0, t, v, nil, nil, storage.AOptions{}); err != nil {
				return fmt.Errorf("%s: append %s at %s: %w", f.Name, lset, fmtMillis(t), err)
			}
			if n++; n%batch == 0 {
				if err := a.Commit(); err != nil {
					return fmt.Errorf("%s: commit: %w", f.Name, err)
				}
				a = app.AppenderV2(ctx)
			}
			return ctx.Err()
		})
		if err != nil {
			return Stats{}, errors.Join(err, a.Rollback())
		}
		if err := a.Commit(); err != nil {
			return Stats{}, fmt.Errorf("%s: commit: %w", f.Name, err)
		}
	}
	return Sum(files), nil
}

// WriteBlocks writes files as TSDB blocks of blockDuration (0 means the TSDB
// default of 2h) into dir, which the caller has locked. Files may hold the
// same series at interleaved times, in any order; a sample two files hold
// is written once when their values agree and is an error when they
// differ. Blocks are built in a
// staging directory inside dir and moved into place only when all are
// built, all or none (store.MoveBlocks: a crash between two renames is
// finished when the store next opens dir); on error nothing is left
// behind. A crash before the move leaves only the staging directory,
// which the TSDB removes when it next opens dir.
func WriteBlocks(ctx context.Context, dir string, files []*File, blockDuration int64, logger *slog.Logger) (Stats, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if blockDuration <= 0 {
		blockDuration = tsdb.DefaultBlockDuration
	}
	stats := Sum(files)
	if stats.Samples == 0 {
		return stats, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stats{}, fmt.Errorf("create data directory: %w", err)
	}
	if err := store.RecoverBlockMoves(dir, logger); err != nil {
		return Stats{}, err
	}
	staging := filepath.Join(dir, ulid.Make().String()+".tmp-for-creation")
	if err := os.Mkdir(staging, 0o755); err != nil {
		return Stats{}, fmt.Errorf("create staging directory: %w", err)
	}
	defer os.RemoveAll(staging)

	ids, dups, err := writeStaged(ctx, staging, files, stats.MinT, stats.MaxT, blockDuration, logger)
	if err != nil {
		return Stats{}, err
	}
	// A sample that several files hold is written once.
	stats.Samples -= dups
	stats.Duplicates += dups
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = id.String()
	}
	if err := store.MoveBlocks(dir, staging, names, afterBlockMove); err != nil {
		return Stats{}, err
	}
	stats.Blocks = len(ids)
	return stats, nil
}

// afterBlockMove, when set (tests), is called after each block's rename.
var afterBlockMove func(i int)

// writeStaged writes one block per block range, re-reading the files for
// each range as promtool's backfill does, so that memory holds one range.
// It returns the blocks and the samples that two files both hold.
func writeStaged(ctx context.Context, dir string, files []*File, mint, maxt, blockDuration int64, logger *slog.Logger) ([]ulid.ULID, int, error) {
	var ids []ulid.ULID
	dups := 0
	start := blockDuration * floorDiv(mint, blockDuration)
	for t := start; t <= maxt; {
		id, next, d, err := writeRange(ctx, dir, files, t, t+blockDuration, blockDuration, logger)
		if err != nil {
			return nil, 0, fmt.Errorf("write block %s to %s: %w", fmtMillis(t), fmtMillis(t+blockDuration), err)
		}
		dups += d
		if id != (ulid.ULID{}) {
			ids = append(ids, id)
		}
		if next == math.MaxInt64 {
			break
		}
		t = blockDuration * floorDiv(next, blockDuration)
	}
	return ids, dups, nil
}

// writeRange writes the samples of files in [mint, maxt) as one block. The
// samples of one file come in order, as Read checked; those of several files
// are merged first, because the block writer's head drops, without an
// error, a sample older than one of its series appended before in the same
// commit.
func writeRange(ctx context.Context, dir string, files []*File, mint, maxt, blockDuration int64, logger *slog.Logger) (_ ulid.ULID, next int64, dups int, err error) {
	// The block writer accepts samples at most half a block older than the
	// newest one; pretending the block is twice as large lets the whole
	// range in, as promtool does.
	w, err := tsdb.NewBlockWriter(logger, dir, 2*blockDuration)
	if err != nil {
		return ulid.ULID{}, 0, 0, fmt.Errorf("block writer: %w", err)
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	const batch = 50_000
	app := w.AppenderV2(ctx)
	n := 0
	add := func(name string, lset labels.Labels, t int64, v float64) error {
		if _, err := app.Append(0, lset, 0, t, v, nil, nil, storage.AOptions{}); err != nil {
			return fmt.Errorf("%s: append %s at %s: %w", name, lset, fmtMillis(t), err)
		}
		if n++; n%batch == 0 {
			if err := app.Commit(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			app = w.AppenderV2(ctx)
		}
		return ctx.Err()
	}
	next = math.MaxInt64
	if len(files) == 1 {
		f := files[0]
		next, err = f.each(mint, maxt, func(lset labels.Labels, t int64, v float64) error {
			return add(f.Name, lset, t, v)
		})
	} else {
		m := newMerger()
		for i, f := range files {
			var nf int64
			nf, err = f.each(mint, maxt, func(lset labels.Labels, t int64, v float64) error {
				m.add(i, lset, t, v)
				return ctx.Err()
			})
			if err != nil {
				break
			}
			next = min(next, nf)
		}
		if err == nil {
			dups, err = m.each(files, add)
		}
	}
	if err != nil {
		return ulid.ULID{}, 0, 0, errors.Join(err, app.Rollback())
	}
	if err := app.Commit(); err != nil {
		return ulid.ULID{}, 0, 0, fmt.Errorf("commit: %w", err)
	}
	if n == 0 {
		return ulid.ULID{}, next, dups, nil
	}
	id, err := w.Flush(ctx)
	if err != nil && !errors.Is(err, tsdb.ErrNoSeriesAppended) {
		return ulid.ULID{}, 0, 0, fmt.Errorf("flush: %w", err)
	}
	return id, next, dups, nil
}

// merger holds the samples of one block range from several files, by series.
type merger struct {
	byHash map[uint64][]*mergedSeries
	order  []*mergedSeries
}

type mergedSeries struct {
	lset    labels.Labels
	samples []mergedSample
}

type mergedSample struct {
	t    int64
	v    float64
	file int
}

func newMerger() *merger { return &merger{byHash: map[uint64][]*mergedSeries{}} }

func (m *merger) add(file int, lset labels.Labels, t int64, v float64) {
	h := lset.Hash()
	for _, s := range m.byHash[h] {
		if labels.Equal(s.lset, lset) {
			s.samples = append(s.samples, mergedSample{t: t, v: v, file: file})
			return
		}
	}
	s := &mergedSeries{lset: lset, samples: []mergedSample{{t: t, v: v, file: file}}}
	m.byHash[h] = append(m.byHash[h], s)
	m.order = append(m.order, s)
}

// each calls fn for every sample in time order within each series. A sample
// that several files hold with the same value is passed once and counted; with
// different values it is an error naming both files.
func (m *merger) each(files []*File, fn func(name string, lset labels.Labels, t int64, v float64) error) (dups int, err error) {
	for _, s := range m.order {
		slices.SortStableFunc(s.samples, func(a, b mergedSample) int { return cmp.Compare(a.t, b.t) })
		for i, cur := range s.samples {
			if i > 0 && s.samples[i-1].t == cur.t {
				prev := s.samples[i-1]
				if sameValue(prev.v, cur.v) {
					dups++
					continue
				}
				return dups, fmt.Errorf("%s and %s both hold %s at %s, with different values (%g and %g)",
					files[prev.file].Name, files[cur.file].Name, s.lset, fmtMillis(cur.t), prev.v, cur.v)
			}
			if err := fn(files[cur.file].Name, s.lset, cur.t, cur.v); err != nil {
				return dups, err
			}
		}
	}
	return dups, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
