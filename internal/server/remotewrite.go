package server

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promscrape "github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/ingest/scrape"
	"github.com/vigil-obs/vigil/internal/store"
)

// remoteFlushDeadline is how long a stopping server tries to send what its
// queues still hold, as Prometheus's --storage.remote.flush-deadline.
const remoteFlushDeadline = time.Minute

// openRemoteWrite returns Prometheus's own remote storage, sending what
// the embedded store writes — scraped and received series, and what Vigil
// derives: span metrics, the service graph, log signals, drift, recorded
// SLO series — to the endpoints of the remote_write: section, or nil when
// there is none. As in Prometheus, its queues tail the store's WAL: they
// are sharded, retry with backoff, and resume where they were after a
// restart.
func openRemoteWrite(cfg config.Config, st *store.Embedded, scraper readyScrape, logger *slog.Logger, reg prometheus.Registerer) (*remote.Storage, error) {
	if cfg.Scrape == nil || len(cfg.Scrape.RemoteWriteConfigs) == 0 {
		return nil, nil
	}
	rs := remote.NewStorage(logger.With("component", "remote-write-out"), reg, st.DB().StartTime, cfg.Storage.DataDir,
		remoteFlushDeadline, scraper, false)
	if err := rs.ApplyConfig(cfg.Scrape); err != nil {
		return nil, errors.Join(fmt.Errorf("remote_write: %w", err), rs.Close())
	}
	// The queues wake on every commit rather than at their next poll.
	st.DB().SetWriteNotified(rs)
	for _, rw := range cfg.Scrape.RemoteWriteConfigs {
		logger.Info("remote write out", "url", rw.URL.Redacted(), "name", rw.Name)
	}
	return rs, nil
}

// readyScrape gives the remote storage the scrape manager for the
// metadata it sends, once the server has started scraping; without
// scraping there is none.
type readyScrape struct {
	s *atomic.Pointer[scrape.Scraper]
}

var errNoScraping = errors.New("no scrape_configs: no scraped metadata")

func (r readyScrape) Get() (*promscrape.Manager, error) {
	sc := r.s.Load()
	if sc == nil {
		return nil, errNoScraping
	}
	return sc.Manager(), nil
}
