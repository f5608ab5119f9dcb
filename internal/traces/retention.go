package traces

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// EnforceRetention deletes the hours past retention, then, while the
// tables exceed MaxBytes, the oldest hours left, never the newest one. Each
// deletion is one range deletion followed by a compaction of the range,
// which gives the disk space back. Writes for a deleted hour are dropped
// from then on (until restart for deletions by size). The background loop
// runs it every minute; callers may run it at any time.
func (s *Store) EnforceRetention(ctx context.Context) error {
	floor := s.ageFloor(s.now())
	if parts := s.partsSnapshot(); len(parts) > 0 && parts[0] < floor {
		n := 0
		for n < len(parts) && parts[n] < floor {
			n++
		}
		if err := s.deleteParts(ctx, 0, floor, "age", n); err != nil {
			return err
		}
	}
	if s.cfg.MaxBytes == 0 {
		return nil
	}
	for {
		parts := s.partsSnapshot()
		if len(parts) <= 1 {
			return nil
		}
		size, err := s.tableBytes()
		if err != nil || size <= uint64(s.cfg.MaxBytes) {
			return err
		}
		if err := s.deleteParts(ctx, parts[0], parts[0]+1, "size", 1); err != nil {
			return err
		}
	}
}

// tableBytes is the size of the live tables, what MaxBytes bounds.
func (s *Store) tableBytes() (uint64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	m := s.db.Metrics()
	return m.Table.Local.LiveSize + m.BlobFiles.Local.LiveSize, nil
}

// deleteParts deletes partitions [from, to), n of which hold data, and
// compacts their range.
func (s *Store) deleteParts(ctx context.Context, from, to uint32, reason string, n int) error {
	lo := binary.BigEndian.AppendUint32(nil, from)
	hi := binary.BigEndian.AppendUint32(nil, to)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	est, err := s.db.EstimateDiskUsage(lo, hi)
	if err != nil {
		est = 0
	}
	s.floor = max(s.floor, to)
	err = s.db.DeleteRange(lo, hi, pebble.NoSync)
	if err == nil {
		s.partMu.Lock()
		i := 0
		for i < len(s.parts) && s.parts[i] < to {
			i++
		}
		s.parts = append(s.parts[:0], s.parts[i:]...)
		s.partMu.Unlock()
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("delete hours %d to %d (%s): %w", from, to, reason, err)
	}
	s.m.retentionParts.WithLabelValues(reason).Add(float64(n))
	s.m.retentionBytes.WithLabelValues(reason).Add(float64(est))
	s.logger.Info("trace store retention", "reason", reason, "hours", n, "bytes", est,
		"before", timeOf(partStart(to)))

	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.db.Compact(ctx, lo, hi, false); err != nil {
		return fmt.Errorf("compact deleted hours (%s): %w", reason, err)
	}
	return nil
}
