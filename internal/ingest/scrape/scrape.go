package scrape

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"

	// Discovery mechanisms Vigil supports besides static_configs.
	_ "github.com/prometheus/prometheus/discovery/file"
	_ "github.com/prometheus/prometheus/discovery/kubernetes"
)

// Scraper runs target discovery and scraping.
type Scraper struct {
	discovery *discovery.Manager
	scrape    *scrape.Manager
	cancel    context.CancelFunc
	logger    *slog.Logger
}

// New builds the discovery and scrape managers for cfg; samples go to app.
// Nothing runs until Run.
func New(cfg *promconfig.Config, app storage.AppendableV2, logger *slog.Logger, reg prometheus.Registerer) (*Scraper, error) {
	return NewWith(cfg, app, Options{}, logger, reg)
}

// Options are the scraper's settings beyond the configuration.
type Options struct {
	// PassTarget gives each appender a context holding its target, which
	// TargetJob reads (tenancy assigns a scrape job's series to a tenant).
	PassTarget bool
}

// TargetJob is the job label of the target an appender's context holds
// (with Options.PassTarget).
func TargetJob(ctx context.Context) (string, bool) {
	t, ok := scrape.TargetFromContext(ctx)
	if !ok || t == nil {
		return "", false
	}
	var job string
	t.LabelsRange(func(l labels.Label) {
		if l.Name == model.JobLabel {
			job = l.Value
		}
	})
	return job, true
}

// NewWith is New with opts.
func NewWith(cfg *promconfig.Config, app storage.AppendableV2, opts Options, logger *slog.Logger, reg prometheus.Registerer) (*Scraper, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	sdMetrics, err := discovery.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register discovery metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dm := discovery.NewManager(ctx, logger.With("component", "discovery"), reg, sdMetrics, discovery.Name("scrape"))
	if dm == nil {
		cancel()
		return nil, errors.New("create discovery manager")
	}
	sm, err := scrape.NewManager(&scrape.Options{PassMetadataInContext: opts.PassTarget}, logger.With("component", "scrape"), nil, nil, app, reg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create scrape manager: %w", err)
	}
	s := &Scraper{discovery: dm, scrape: sm, cancel: cancel, logger: logger}
	if err := s.ApplyConfig(cfg); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// ApplyConfig (re)loads the scrape jobs.
func (s *Scraper) ApplyConfig(cfg *promconfig.Config) error {
	if err := s.scrape.ApplyConfig(cfg); err != nil {
		return fmt.Errorf("apply scrape config: %w", err)
	}
	scfgs, err := cfg.GetScrapeConfigs()
	if err != nil {
		return fmt.Errorf("read scrape configs: %w", err)
	}
	c := make(map[string]discovery.Configs, len(scfgs))
	for _, v := range scfgs {
		c[v.JobName] = v.ServiceDiscoveryConfigs
	}
	if err := s.discovery.ApplyConfig(c); err != nil {
		return fmt.Errorf("apply discovery config: %w", err)
	}
	return nil
}

// Run discovers and scrapes until Stop.
func (s *Scraper) Run() error {
	errc := make(chan error, 1)
	go func() { errc <- s.discovery.Run() }()
	err := s.scrape.Run(s.discovery.SyncCh())
	s.cancel()
	derr := <-errc
	if errors.Is(derr, context.Canceled) {
		derr = nil
	}
	return errors.Join(err, derr)
}

// Stop ends Run: scraping stops (writing staleness markers, as Prometheus
// does) and discovery ends. It is safe to call more than once.
func (s *Scraper) Stop() {
	s.scrape.Stop()
	s.cancel()
}

// Manager exposes the scrape manager (targets and metadata for the API).
func (s *Scraper) Manager() *scrape.Manager { return s.scrape }
