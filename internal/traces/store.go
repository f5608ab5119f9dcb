package traces

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrNotFound says that the store holds no span of the trace asked for.
var ErrNotFound = errors.New("not found")

// ErrClosed is returned by every method of a closed Store.
var ErrClosed = errors.New("trace store closed")

// Background work intervals.
const (
	retentionInterval = time.Minute
	syncInterval      = 5 * time.Second
	// maxFuture is how far after the clock a span may start (or a log be
	// timed) and still be stored; later ones are dropped as "future".
	maxFuture = time.Hour
)

// Store keeps spans and logs in a Pebble database. All methods are safe for
// concurrent use.
type Store struct {
	cfg    Config
	logger *slog.Logger
	now    func() time.Time
	corr   correlator
	m      *metrics

	// mu: readers and writers hold it shared; retention's deletions and
	// Close hold it exclusively, so no write lands in a partition being
	// deleted and nothing runs on a closed database.
	mu     sync.RWMutex
	db     *pebble.DB
	closed bool
	// floor is the oldest partition writes may still use: deletion by age
	// or by size raised it. Guarded by mu (written under the write lock).
	floor uint32

	partMu sync.Mutex
	parts  []uint32 // partitions holding data, ascending; bounded by retention

	seq atomic.Uint64 // log record sequence numbers

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open opens (or creates) the store in cfg.Dir and starts its background
// work: retention every minute, a WAL sync every 5 s. now is the clock
// (nil: time.Now), used for retention and to reject data too old or from
// the future.
func Open(cfg Config, logger *slog.Logger, reg prometheus.Registerer, now func() time.Time) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("traces: no directory")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create trace store directory: %w", err)
	}
	logger = logger.With("component", "traces")
	cache := pebble.NewCache(cfg.CacheBytes)
	defer cache.Unref() // the database holds its own reference
	db, err := pebble.Open(cfg.Dir, pebbleOptions(cfg, cache, logger))
	if err != nil {
		return nil, fmt.Errorf("open trace store %s: %w", cfg.Dir, err)
	}
	s := &Store{
		cfg: cfg, logger: logger, now: now, db: db,
		corr: newCorrelator(cfg.CorrelationKeys),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.seq.Store(rand.Uint64())
	if s.parts, err = s.loadParts(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s.floor = s.ageFloor(now())
	s.m = newMetrics(reg, s.diskBytes)
	logger.Info("trace store opened", "dir", cfg.Dir, "hours", len(s.parts))
	go s.background()
	return s, nil
}

// pebbleOptions bounds memory: the block cache, and memtables of a quarter
// of it (4–64 MiB) of which at most four are queued before writes wait.
func pebbleOptions(cfg Config, cache *pebble.Cache, logger *slog.Logger) *pebble.Options {
	mem := min(max(cfg.CacheBytes/4, 4<<20), 64<<20)
	o := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                uint64(mem),
		MemTableStopWritesThreshold: 4,
		MaxOpenFiles:                1000,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{logger.With("component", "pebble")},
		WALBytesPerSync:             1 << 20,
	}
	o.Levels[0].FilterPolicy = bloom.FilterPolicy(10) // later levels inherit it
	o.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionBalanced })
	return o
}

// loadParts lists the partitions holding data: one seek per partition.
func (s *Store) loadParts() ([]uint32, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	var parts []uint32
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < partLen {
			ok = it.Next()
			continue
		}
		p := uint32(k[0])<<24 | uint32(k[1])<<16 | uint32(k[2])<<8 | uint32(k[3])
		parts = append(parts, p)
		if p == ^uint32(0) {
			break
		}
		ok = it.SeekGE(prefix(nil, p+1, 0)[:partLen])
	}
	return parts, errors.Join(it.Error(), it.Close())
}

// acquire takes the shared lock, failing on a closed store.
func (s *Store) acquire() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Store) release() { s.mu.RUnlock() }

// partsSnapshot returns the partitions holding data, ascending.
func (s *Store) partsSnapshot() []uint32 {
	s.partMu.Lock()
	defer s.partMu.Unlock()
	return slices.Clone(s.parts)
}

// addPart records that p holds data.
func (s *Store) addPart(p uint32) {
	s.partMu.Lock()
	defer s.partMu.Unlock()
	i, found := slices.BinarySearch(s.parts, p)
	if !found {
		s.parts = slices.Insert(s.parts, i, p)
	}
}

// ageFloor is the oldest partition that is not yet past retention at now.
func (s *Store) ageFloor(now time.Time) uint32 {
	cut := now.Add(-time.Duration(s.cfg.Retention)).UnixNano()
	if cut <= 0 {
		return 0
	}
	// Partition p is kept while its last nanosecond is within retention.
	return partOf(uint64(cut))
}

// diskBytes is the gauge's value: the database's files, 0 once closed.
func (s *Store) diskBytes() float64 {
	if s.acquire() != nil {
		return 0
	}
	defer s.release()
	return float64(s.db.Metrics().DiskSpaceUsage())
}

// background runs retention and syncs the WAL until Close.
func (s *Store) background() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	ret := time.NewTicker(retentionInterval)
	defer ret.Stop()
	sync := time.NewTicker(syncInterval)
	defer sync.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-sync.C:
			if err := s.syncWAL(); err != nil && !errors.Is(err, ErrClosed) {
				s.logger.Error("sync trace store WAL", "err", err)
			}
		case <-ret.C:
			if err := s.EnforceRetention(ctx); err != nil && !errors.Is(err, ErrClosed) && ctx.Err() == nil {
				s.logger.Error("trace store retention", "err", err)
			}
		}
	}
}

// syncWAL makes every write so far durable against an OS crash.
func (s *Store) syncWAL() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	return s.db.LogData(nil, pebble.Sync)
}

// Close stops the background work, syncs the WAL and closes the database.
// It is idempotent; every later call of another method returns ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		start := time.Now()
		s.closeErr = errors.Join(s.db.LogData(nil, pebble.Sync), s.db.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("close trace store: %w", s.closeErr)
		}
		s.logger.Info("trace store closed", "took", time.Since(start))
	})
	return s.closeErr
}

// pebbleLogger sends Pebble's logs to slog: informational ones at debug.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on an invariant it cannot go on without (a
// corrupt database); like Pebble's own logger it does not return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(msg)
}
