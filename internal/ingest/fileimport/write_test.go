package fileimport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/store"
)

// series renders samples of one gauge g{i} every step from start, in
// Prometheus text with millisecond timestamps; the value at step k of
// series i is i*100000 + k.
func series(start time.Time, step time.Duration, steps, n int) string {
	var b strings.Builder
	for k := range steps {
		ts := start.Add(time.Duration(k) * step).UnixMilli()
		for i := range n {
			fmt.Fprintf(&b, "g{i=\"%d\"} %d %d\n", i, i*100000+k, ts)
		}
	}
	return b.String()
}

func mustRead(t *testing.T, name, in string) *fileimport.File {
	t.Helper()
	f, err := fileimport.Read(name, strings.NewReader(in), opts())
	require.NoError(t, err)
	return f
}

// tree lists every path under dir with its size and modification time.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, fmt.Sprintf("%s %d %s", rel, info.Size(), info.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	require.NoError(t, err)
	return out
}

// blockDirs returns the names of the block directories in dir.
func blockDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if _, err := ulid.ParseStrict(e.Name()); err == nil && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// leftovers returns entries of dir that are not blocks (staging directories).
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

type blockMeta struct {
	MinTime, MaxTime int64
	Stats            struct{ NumSamples, NumSeries uint64 }
}

func readMeta(t *testing.T, dir string) blockMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	require.NoError(t, err)
	var m blockMeta
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func openEmbedded(t *testing.T, dir string) *store.Embedded {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(dir)
	cfg.Retention = 50 * 365 * 24 * time.Hour
	s, err := store.OpenEmbedded(cfg, func() time.Time { return at }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestWriteBlocksHistory(t *testing.T) {
	dir := t.TempDir()
	// Ten hours that start off the 2h grid, and half an hour seven years ago.
	recent := time.Date(2026, 3, 1, 0, 47, 0, 0, time.UTC)
	old := time.Date(2019, 6, 1, 12, 10, 0, 0, time.UTC)
	files := []*fileimport.File{
		mustRead(t, "recent.prom", series(recent, 5*time.Minute, 120, 3)),
		mustRead(t, "old.prom", series(old, time.Minute, 30, 2)),
	}
	stats, err := fileimport.WriteBlocks(t.Context(), dir, files, 0, nil)
	require.NoError(t, err)
	require.Equal(t, fileimport.Stats{
		Files: 2, Series: 5, Samples: 120*3 + 30*2, Blocks: 7,
		MinT: old.UnixMilli(), MaxT: recent.Add(119 * 5 * time.Minute).UnixMilli(), Interval: 5 * time.Minute,
	}, stats)

	blocks := blockDirs(t, dir)
	require.Len(t, blocks, 7)
	require.Empty(t, leftovers(t, dir))
	const twoHours = int64(2 * time.Hour / time.Millisecond)
	var samples uint64
	for _, b := range blocks {
		m := readMeta(t, filepath.Join(dir, b))
		start := m.MinTime - m.MinTime%twoHours
		require.LessOrEqual(t, m.MaxTime, start+twoHours, "block %s spans more than its 2h range", b)
		samples += m.Stats.NumSamples
	}
	require.Equal(t, uint64(stats.Samples), samples)

	s := openEmbedded(t, dir)
	for _, k := range []int{0, 1, 23, 24, 60, 119} {
		ts := recent.Add(time.Duration(k) * 5 * time.Minute)
		require.Equal(t, map[string]float64{"0": float64(k), "1": float64(100000 + k), "2": float64(200000 + k)},
			vectorOf(t, s, "g", ts, "i"), "at step %d", k)
	}
	for _, k := range []int{0, 17, 29} {
		ts := old.Add(time.Duration(k) * time.Minute)
		require.Equal(t, map[string]float64{"0": float64(k), "1": float64(100000 + k)}, vectorOf(t, s, "g", ts, "i"))
	}
	end := recent.Add(10 * time.Hour)
	require.Equal(t, map[string]float64{"0": 120, "1": 120, "2": 120}, vectorOf(t, s, "count_over_time(g[11h])", end, "i"))
	require.Equal(t, map[string]float64{"0": 29 * 30 / 2, "1": 100000*30 + 29*30/2},
		vectorOf(t, s, "sum_over_time(g[1h])", old.Add(40*time.Minute), "i"))
}

func TestWriteBlocksBlockDuration(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f := mustRead(t, "a.prom", series(start, time.Hour, 24, 1))
	stats, err := fileimport.WriteBlocks(t.Context(), dir, []*fileimport.File{f}, (6 * time.Hour).Milliseconds(), nil)
	require.NoError(t, err)
	require.Equal(t, 4, stats.Blocks)
	require.Len(t, blockDirs(t, dir), 4)
}

func TestWriteBlocksNothingToWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	f := mustRead(t, "comments.prom", "# HELP a A.\n# TYPE a gauge\n")
	stats, err := fileimport.WriteBlocks(t.Context(), dir, []*fileimport.File{f}, 0, nil)
	require.NoError(t, err)
	require.Equal(t, fileimport.Stats{Files: 1}, stats)
	require.NoDirExists(t, dir)
}

// TestWriteBlocksBadFileWritesNothing follows `vigil import`: every file is
// read before anything is written, so a bad one leaves the directory as it
// was, existing block included.
func TestWriteBlocksBadFileWritesNothing(t *testing.T) {
	dir := t.TempDir()
	existing := mustRead(t, "existing.prom", series(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Minute, 10, 1))
	_, err := fileimport.WriteBlocks(t.Context(), dir, []*fileimport.File{existing}, 0, nil)
	require.NoError(t, err)
	require.Len(t, blockDirs(t, dir), 1)
	before := tree(t, dir)

	inputs := map[string]string{
		"good.prom": series(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Minute, 10, 1),
		"bad.prom":  "g{i=\"0\"} 1 1769904000000\ng{i=\"0\"} 2 1769904060000\ng{i=\"0\" 3 1769904120000\n",
	}
	var files []*fileimport.File
	var readErr error
	for _, name := range []string{"good.prom", "bad.prom"} {
		f, err := fileimport.Read(name, strings.NewReader(inputs[name]), opts())
		if err != nil {
			readErr = err
			break
		}
		files = append(files, f)
	}
	var le *fileimport.LineError
	require.ErrorAs(t, readErr, &le)
	require.Equal(t, "bad.prom", le.File)
	require.Equal(t, 3, le.Line)
	require.Len(t, files, 1)
	require.Equal(t, before, tree(t, dir))
}

// cancelAfter is a context whose Err reports cancellation after n calls,
// which stops WriteBlocks at a chosen sample.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestWriteBlocksFailureLeavesNothing(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)
	// 3 series every 10 minutes for 6 hours, from 00:30: 4 blocks.
	f := mustRead(t, "six-hours.prom", series(start, 10*time.Minute, 36, 3))
	existing := mustRead(t, "existing.prom", series(start.Add(-24*time.Hour), time.Minute, 10, 1))

	tests := []struct {
		name    string
		ctx     func(context.Context) context.Context
		inBlock string
	}{
		{"cancelled before", func(ctx context.Context) context.Context {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return ctx
		}, "write block 2026-01-01T00:00:00Z to 2026-01-01T02:00:00Z"},
		// The 00:00-02:00 range has 27 samples and 02:00-04:00 36: two
		// blocks are staged when the third one fails.
		{"cancelled in the third block", func(ctx context.Context) context.Context {
			c := &cancelAfter{Context: ctx}
			c.n.Store(27 + 36 + 10)
			return c
		}, "write block 2026-01-01T04:00:00Z to 2026-01-01T06:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := fileimport.WriteBlocks(t.Context(), dir, []*fileimport.File{existing}, 0, nil)
			require.NoError(t, err)
			blocks := blockDirs(t, dir)
			require.Len(t, blocks, 1)

			_, err = fileimport.WriteBlocks(tt.ctx(t.Context()), dir, []*fileimport.File{f}, 0, nil)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorContains(t, err, tt.inBlock)
			require.Equal(t, blocks, blockDirs(t, dir), "no new block")
			require.Empty(t, leftovers(t, dir), "no staging directory")
		})
	}
}

// TestStagingRemovedOnOpen checks what WriteBlocks's doc promises after a
// crash: the TSDB removes a staging directory left behind when it opens.
func TestStagingRemovedOnOpen(t *testing.T) {
	dir := t.TempDir()
	staging := filepath.Join(dir, ulid.Make().String()+".tmp-for-creation")
	require.NoError(t, os.MkdirAll(filepath.Join(staging, ulid.Make().String()), 0o755))
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(dir), nil, nil, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoDirExists(t, staging)
}

func TestAppend(t *testing.T) {
	s := openEmbedded(t, t.TempDir())
	start := time.Date(2026, 11, 12, 1, 0, 0, 0, time.UTC)
	files := []*fileimport.File{
		mustRead(t, "a.prom", series(start, time.Minute, 10, 2)),
		mustRead(t, "b.prom", "h{k=\"x\"} 1.5 "+fmt.Sprint(start.UnixMilli())+"\nh{k=\"x\"} 1.5 "+fmt.Sprint(start.UnixMilli())+"\n"),
	}
	// A batch of 3 makes several commits.
	stats, err := fileimport.Append(t.Context(), s, files, 3)
	require.NoError(t, err)
	require.Equal(t, 21, stats.Samples)
	require.Equal(t, 1, stats.Duplicates)

	require.Equal(t, map[string]float64{"0": 7, "1": 100007}, vectorOf(t, s, "g", start.Add(7*time.Minute), "i"))
	require.Equal(t, map[string]float64{"0": 10, "1": 10}, vectorOf(t, s, "count_over_time(g[1h])", start.Add(30*time.Minute), "i"))
	require.Equal(t, map[string]float64{"x": 1}, vectorOf(t, s, "count_over_time(h[1h])", start.Add(30*time.Minute), "k"))

	t.Run("older than the out-of-order window", func(t *testing.T) {
		old := mustRead(t, "old.prom", series(start.Add(-72*time.Hour), time.Minute, 2, 1))
		_, err := fileimport.Append(t.Context(), s, []*fileimport.File{old}, 0)
		require.ErrorIs(t, err, storage.ErrTooOldSample)
		require.ErrorContains(t, err, "old.prom: append {__name__=\"g\", i=\"0\"}")
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		more := mustRead(t, "more.prom", series(start.Add(time.Hour), time.Minute, 2, 1))
		_, err := fileimport.Append(ctx, s, []*fileimport.File{more}, 0)
		require.ErrorIs(t, err, context.Canceled)
		// The uncommitted sample was rolled back.
		require.Empty(t, vectorOf(t, s, "g", start.Add(time.Hour), "i"))
	})
}

// failingAppendable fails the nth append and records rollbacks.
type failingAppendable struct {
	n         int
	rollbacks int
	commits   int
}

func (f *failingAppendable) AppenderV2(context.Context) storage.AppenderV2 {
	return &failingAppender{f}
}

type failingAppender struct{ f *failingAppendable }

func (a *failingAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AppendV2Options) (storage.SeriesRef, error) {
	if a.f.n--; a.f.n < 0 {
		return 0, errors.New("disk full")
	}
	return 0, nil
}
func (a *failingAppender) Commit() error   { a.f.commits++; return nil }
func (a *failingAppender) Rollback() error { a.f.rollbacks++; return nil }

func TestAppendRollsBackOnError(t *testing.T) {
	app := &failingAppendable{n: 4}
	f := mustRead(t, "a.prom", series(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Minute, 5, 1))
	_, err := fileimport.Append(t.Context(), app, []*fileimport.File{f}, 2)
	require.ErrorContains(t, err, "a.prom: append {__name__=\"g\", i=\"0\"} at 2026-01-01T00:04:00Z: disk full")
	require.Equal(t, 2, app.commits)
	require.Equal(t, 1, app.rollbacks)
}

// TestOpenTemp loads history more than a century wide and checks that Close
// removes the directory.
func TestOpenTemp(t *testing.T) {
	early := time.Date(2001, 5, 1, 0, 0, 0, 0, time.UTC)
	late := time.Date(2190, 5, 1, 0, 0, 0, 0, time.UTC)
	f := mustRead(t, "wide.prom", series(early, time.Minute, 3, 1)+series(late, time.Minute, 3, 1))
	s, err := fileimport.OpenTemp(t.Context(), []*fileimport.File{f}, func() time.Time { return late }, nil)
	require.NoError(t, err)
	dir := s.DB().Dir()
	require.DirExists(t, dir)
	require.Equal(t, late, s.Now())
	require.Equal(t, map[string]float64{"0": 2}, vectorOf(t, s, "g", early.Add(2*time.Minute), "i"))
	require.Equal(t, map[string]float64{"0": 1}, vectorOf(t, s, "g", late.Add(time.Minute), "i"))
	require.NoError(t, s.Close())
	require.NoDirExists(t, dir)
}

func TestSum(t *testing.T) {
	a := mustRead(t, "a", "a 1 1700000000000\na 1 1700000000000\n")
	b := mustRead(t, "b", "b 1 1600000000000\nc 2 1800000000000\n")
	empty := mustRead(t, "empty", "")
	require.Equal(t, fileimport.Stats{Files: 3, Series: 3, Samples: 3, Duplicates: 1, MinT: 1600000000000, MaxT: 1800000000000},
		fileimport.Sum([]*fileimport.File{a, empty, b}))
	require.Equal(t, fileimport.Stats{Files: 1}, fileimport.Sum([]*fileimport.File{empty}))
}

// TestWriteBlocksMergesFiles gives WriteBlocks files that hold the same
// series at interleaved and shared times, in any order.
func TestWriteBlocksMergesFiles(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// even and odd render g{i="0"} at even and odd minutes of one block;
	// the value is the minute.
	render := func(from, step, to int) string {
		var b strings.Builder
		for m := from; m < to; m += step {
			fmt.Fprintf(&b, "g{i=\"0\"} %d %d\n", m, start.Add(time.Duration(m)*time.Minute).UnixMilli())
		}
		return b.String()
	}
	even := mustRead(t, "even.prom", render(0, 2, 60))
	odd := mustRead(t, "odd.prom", render(1, 2, 60))
	firstHalf := mustRead(t, "first-half.prom", render(0, 1, 30))
	all := mustRead(t, "all.prom", render(0, 1, 60))

	tests := []struct {
		name       string
		files      []*fileimport.File
		samples    int
		duplicates int
	}{
		{"interleaved", []*fileimport.File{odd, even}, 60, 0},
		{"overlapping, later file first", []*fileimport.File{all, firstHalf}, 60, firstHalf.Samples},
		{"the same file twice", []*fileimport.File{all, all}, 60, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			stats, err := fileimport.WriteBlocks(t.Context(), dir, tt.files, 0, nil)
			require.NoError(t, err)
			require.Equal(t, tt.samples, stats.Samples)
			require.Equal(t, tt.duplicates, stats.Duplicates)
			require.Equal(t, 1, stats.Blocks)
			s := openEmbedded(t, dir)
			end := start.Add(59*time.Minute + 30*time.Second)
			require.Equal(t, map[string]float64{"0": 60}, vectorOf(t, s, "count_over_time(g[1h])", end, "i"))
			require.Equal(t, map[string]float64{"0": 59 * 60 / 2}, vectorOf(t, s, "sum_over_time(g[1h])", end, "i"))
			require.Equal(t, map[string]float64{"0": 37}, vectorOf(t, s, "g", start.Add(37*time.Minute), "i"))
		})
	}

	t.Run("different values at the same time", func(t *testing.T) {
		dir := t.TempDir()
		other := mustRead(t, "other.prom", fmt.Sprintf("g{i=\"0\"} 99 %d\n", start.Add(30*time.Minute).UnixMilli()))
		_, err := fileimport.WriteBlocks(t.Context(), dir, []*fileimport.File{all, other}, 0, nil)
		require.ErrorContains(t, err, `all.prom and other.prom both hold {__name__="g", i="0"} at 2026-01-01T00:30:00Z, with different values (30 and 99)`)
		require.Empty(t, blockDirs(t, dir))
		require.Empty(t, leftovers(t, dir))
	})
}

// crashImport is 3 series every 10 minutes for 6 hours from 00:30: 4
// blocks, 108 samples.
func crashImport() string {
	return series(time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC), 10*time.Minute, 36, 3)
}

// TestCrashBetweenBlockRenames kills an import between two of its block
// renames (a child process exits there) and opens the store: the import
// is finished from its journal, all 108 samples there; with a staged block
// lost as well, it is undone, none there. Either way no journal or
// staging directory is left.
func TestCrashBetweenBlockRenames(t *testing.T) {
	crash := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		require.Equal(t, 3, exit.ExitCode(), "%s", out)
		require.Len(t, blockDirs(t, dir), 2, "two blocks moved when it died")
		journals, err := filepath.Glob(filepath.Join(dir, "*.block-move.json"))
		require.NoError(t, err)
		require.Len(t, journals, 1)
		return dir
	}
	count := func(t *testing.T, dir string) map[string]float64 {
		t.Helper()
		s := openEmbedded(t, dir)
		return vectorOf(t, s, "count_over_time(g[7h])", time.Date(2026, 1, 1, 6, 30, 0, 0, time.UTC), "i")
	}
	t.Run("finished", func(t *testing.T) {
		dir := crash(t)
		require.Equal(t, map[string]float64{"0": 36, "1": 36, "2": 36}, count(t, dir))
		require.Len(t, blockDirs(t, dir), 4)
		require.Empty(t, leftovers(t, dir))
		journals, _ := filepath.Glob(filepath.Join(dir, "*.block-move.json"))
		require.Empty(t, journals)
	})
	t.Run("undone", func(t *testing.T) {
		dir := crash(t)
		staged, err := filepath.Glob(filepath.Join(dir, "*.tmp-for-creation", "*"))
		require.NoError(t, err)
		require.Len(t, staged, 2)
		require.NoError(t, os.RemoveAll(staged[0]))
		require.Empty(t, count(t, dir))
		require.Empty(t, blockDirs(t, dir))
		require.Empty(t, leftovers(t, dir))
	})
}
