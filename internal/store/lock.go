package store

import (
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

// ErrLocked says a data directory is held by another process.
var ErrLocked = errors.New("data directory is locked by another process (a running vigil serve?)")

// isLockError says whether err is flock's "held by someone else". Other
// errors of taking the lock (a directory that cannot be created, no
// permission) are not: they are reported as they are.
func isLockError(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// LockDir takes the TSDB lock of dir, as the TSDB itself does, so that a
// writer outside the TSDB (block import) never races a running server. The
// returned function releases it.
func LockDir(dir string, logger *slog.Logger) (release func() error, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l, err := tsdbutil.NewDirLocker(dir, "tsdb", logger, nil)
	if err != nil {
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := l.Lock(); err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	return l.Release, nil
}
