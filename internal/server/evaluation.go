package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/component"

	"github.com/vigil-obs/vigil/internal/alert"
	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/drift"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/slo"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/watch"
)

// evaluation is the continuous path of the server: the incident tracker
// and the watcher (nil when evaluation is off).
type evaluation struct {
	tracker *incident.Tracker
	watcher *watch.Watcher
}

// source returns what the watcher reads: the embedded store alone; or,
// with source.url, the backend merged with it and the backend's probe;
// or, with Options.Read, that merged with it.
func (s *Server) source(ctx context.Context, host component.Host) (watch.Source, func(context.Context) error, error) {
	cfg := s.cfg
	switch {
	case s.opts.Read != nil:
		return store.NewMerged(s.st, s.opts.Read), nil, nil
	case cfg.Source.URL == "":
		return s.st, nil, nil
	}
	sel, err := cfg.Source.Matchers()
	if err != nil {
		return nil, nil, fmt.Errorf("source.selector: %w", err)
	}
	rc := store.DefaultRemoteConfig(cfg.Source.URL)
	rc.HTTPClient = cfg.Source.HTTPClient
	rc.Timeout = time.Duration(cfg.Source.Timeout)
	rc.Selector = sel
	rc.CacheSamples = CacheSamplesFor(s.budget)
	// Where a driven server's clock stands for the wall clock (a
	// benchmark's live cycles), the cache's settle window follows it.
	rc.Wall = s.opts.Wall
	// The merged store evaluates with the embedded store's engine: the
	// Remote's own engine goes unused, and registers no metrics.
	remote, err := store.NewRemote(rc, s.now, s.logger.With("component", "source"), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("source: %w", err)
	}
	s.onShutdown("source", func(context.Context) error { return remote.Close() })
	s.logger.Info("attached: the evaluation reads the source merged with the embedded store", "source", remote.URL(), "selector", cfg.Source.Selector,
		"cache_samples", rc.CacheSamples)
	m := store.NewMerged(s.st, remote)
	return m, m.Probe, nil
}

// startEvaluation opens the incidents of the data directory, builds the
// watcher over the source with the SLO rules and, unless Options.Driven,
// runs it.
func (s *Server) startEvaluation(ctx context.Context, host component.Host, sender *alert.Notifier) error {
	cfg, logger := s.cfg, s.logger
	ec := cfg.Evaluation
	if !ec.Enabled {
		return nil
	}
	tr, eng, err := s.openEvaluation(cfg.Storage.DataDir, logger)
	if err != nil {
		return fmt.Errorf("evaluation: %w", err)
	}
	ext := cfg.Alerting.ExternalURL
	if ext == "" && s.addr != nil {
		ext = "http://" + advertised(s.addr)
	}
	mon, err := drift.NewMonitor(cfg.Drift, s.st, s.st, logger.With("component", "drift"))
	if err != nil {
		return fmt.Errorf("evaluation: %w", err)
	}
	var snd watch.Sender
	switch {
	case s.opts.Sender != nil:
		snd = s.opts.Sender
	case sender != nil:
		snd = sender
	}
	src, probe := s.view, s.probe
	groups, sloCheck, err := sloGroups(ctx, ec, s.st, src, s.now(), logger)
	if err != nil {
		return err
	}
	costRec, err := newCostRecorder(cfg, src, s.st, logger.With("component", "cost"))
	if err != nil {
		return err
	}
	var reg prometheus.Registerer = s.reg
	if cfg.Tenancy.Enabled && len(cfg.Tenancy.Evaluate) > 0 {
		// Each tenant's evaluation counts itself under its tenant label;
		// the platform's under Vigil's own.
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": cfg.Tenancy.InternalTenant}, s.reg)
	}
	w, err := watch.New(watch.Options{
		Source: src, Probe: probe, Engine: eng, Groups: groups, Tracker: tr, Sender: snd,
		Interval: time.Duration(ec.Interval), ResendInterval: time.Duration(cfg.Alerting.ResendInterval),
		ExternalURL: ext, Now: s.now, Wall: s.opts.Wall, FindingConfidence: ec.FindingConfidence,
		Tasks:    tasks(mon.Evaluate, sloCheck, costRec.task()),
		Annotate: costRec.annotate,
		OnChange: s.opts.OnChange,
		Logger:   logger.With("component", "watch"), Registerer: reg,
	})
	if err != nil {
		return err
	}
	s.ev = &evaluation{tracker: tr, watcher: w}
	if err := s.startTenantEvaluations(ctx, host, src, snd, ext); err != nil {
		return err
	}
	if s.opts.Driven {
		return nil
	}
	return s.run(ctx, host, "evaluation", w.Run)
}

// openEvaluation opens the incidents kept in dir and a diagnosis engine:
// what one evaluation needs beside its source.
func (s *Server) openEvaluation(dir string, logger *slog.Logger) (*incident.Tracker, *diagnose.Engine, error) {
	ec := s.cfg.Evaluation
	tr, err := incident.Open(incident.Options{
		Path:         filepath.Join(dir, "incidents.json"),
		ResolveAfter: time.Duration(ec.ResolveAfter),
		KeepResolved: s.opts.KeepResolved,
		Logger:       logger.With("component", "incidents"),
	})
	if err != nil {
		return nil, nil, err
	}
	eng, err := diagnose.New(diagnose.Options{Window: time.Duration(ec.Window), Logger: logger.With("component", "diagnose")})
	if err != nil {
		return nil, nil, err
	}
	return tr, eng, nil
}

// tasks lists the watcher's scheduled tasks, the nil ones left out.
func tasks(fs ...func(context.Context, time.Time) error) []func(context.Context, time.Time) error {
	var out []func(context.Context, time.Time) error
	for _, f := range fs {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// startNotifier starts the notifier of the alerting section; nil when it
// names no Alertmanager and no webhook, or Options.Sender replaces it.
func (s *Server) startNotifier(ctx context.Context, host component.Host) (*alert.Notifier, error) {
	if s.opts.Sender != nil || !s.cfg.Evaluation.Enabled {
		return nil, nil
	}
	n, err := openNotifier(s.cfg, s.logger, s.reg)
	if err != nil || n == nil {
		return nil, err
	}
	return n, s.run(ctx, host, "notifier", n.Run)
}

// ContinuousCacheSamples bounds the samples a continuous reader of a
// backend (an attached serve's cycles, a replay's instants) keeps from one
// read to the next, so that each reads only what is new, when there is no
// memory budget: 16 M samples, 256 MiB of times and values, an hour of a
// 128-node cluster's series twice over (8.3 M a window at 30 s).
const ContinuousCacheSamples = 16 << 20

// cacheBytesPerSample is what a cached sample holds: its time and value.
const cacheBytesPerSample = 16

// CacheSamplesFor is the sample cache of a continuous reader under a
// memory budget of budget bytes (0: none, ContinuousCacheSamples): a
// quarter of it. Attached, the embedded store's head holds only what Vigil
// derives, so the quarter a budget gives the head's series (admission.
// SeriesFor) goes to the backend's samples instead; the default a 2 GiB
// budget gives is 32 M samples, an hour of about 3,800 GPUs at 30 s.
func CacheSamplesFor(budget int64) int64 {
	if budget <= 0 {
		return ContinuousCacheSamples
	}
	return max(budget/4/cacheBytesPerSample, 1<<20)
}

// openNotifier returns the notifier of the alerting section, or nil when
// it names no Alertmanager and no webhook.
func openNotifier(cfg config.Config, logger *slog.Logger, reg prometheus.Registerer) (*alert.Notifier, error) {
	if len(cfg.Alerting.Alertmanagers)+len(cfg.Alerting.Webhooks) == 0 {
		return nil, nil
	}
	ac := cfg.Alerting
	ac.ExternalLabels = shardLabels(cfg)
	return alert.New(ac, logger.With("component", "alert"), reg)
}

// shardLabels are the alerts' external labels: alerting.external_labels,
// and, for an attached serve, the equality matchers of source.selector
// the section does not name. A selector's {cluster="a"} is a label every
// series this Vigil reads carries, so it is the shard's identity: two
// shards on one Alertmanager page apart, an HA pair (one selector) once.
func shardLabels(cfg config.Config) map[string]string {
	out := maps.Clone(cfg.Alerting.ExternalLabels)
	if cfg.Source.URL == "" {
		return out
	}
	ms, err := cfg.Source.Matchers()
	if err != nil {
		return out // Validate checked it
	}
	for _, m := range ms {
		if m.Type != labels.MatchEqual || m.Name == model.MetricNameLabel || m.Value == "" {
			continue
		}
		if _, set := out[m.Name]; !set {
			if out == nil {
				out = map[string]string{}
			}
			out[m.Name] = m.Value
		}
	}
	return out
}

// alertmanagers lists the configured Alertmanagers for the API.
type alertmanagers []string

func (a alertmanagers) Alertmanagers() []*url.URL {
	var out []*url.URL
	for _, s := range a {
		if u, err := url.Parse(s); err == nil {
			u.User = nil
			out = append(out, u.JoinPath("/api/v2/alerts"))
		}
	}
	return out
}

func (alertmanagers) DroppedAlertmanagers() []*url.URL { return nil }

// advertised is a listen address as others reach it: a wildcard host
// becomes localhost.
func advertised(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// sloGroups returns the SLO rule groups the watcher evaluates: those of
// the SLO file, or the built-in presets, and, for a file, the task that
// checks its SLOs' metrics against what the watcher reads (read: the
// embedded store, or it merged with the source): those it does not hold are
// named in a warning (a rule that can never fire must not be silent). The
// check runs at once when the store already holds sloCheckAfter of data
// (a restart), else at the first evaluation sloCheckAfter after the start,
// so that a fresh install does not warn about every SLO before its first
// scrapes.
func sloGroups(ctx context.Context, ec config.EvaluationConfig, st *store.Embedded, read storage.Queryable, now time.Time, logger *slog.Logger) ([]rulefmt.RuleGroup, func(context.Context, time.Time) error, error) {
	var spec *slo.Spec
	var task func(context.Context, time.Time) error
	switch {
	case ec.SLOFile != "":
		s, err := slo.ParseFile(ec.SLOFile)
		if err != nil {
			return nil, nil, UsageError{fmt.Errorf("evaluation.slo_file: %w", err)}
		}
		spec = s
		check := func(ctx context.Context, at time.Time) {
			ws, err := slo.CheckMetrics(ctx, spec, slo.StoreLookup(read, at.Add(-time.Hour), at))
			if err != nil {
				logger.Warn("could not check the SLOs against the store", "err", err)
			}
			for _, w := range ws {
				logger.Warn("SLO check: "+w.String(), "slo", w.SLO)
			}
		}
		if oldest, err := st.DB().StartTime(); err == nil && now.Sub(time.UnixMilli(oldest)) >= sloCheckAfter {
			check(ctx, now)
			break
		}
		logger.Info("the SLO file's metrics are checked against the store once it holds data", "after", sloCheckAfter.String())
		done := false
		task = func(ctx context.Context, at time.Time) error {
			if !done && at.Sub(now) >= sloCheckAfter {
				done = true
				check(ctx, at)
			}
			return nil
		}
	case ec.SLOPresets:
		spec = slo.Presets()
	default:
		return nil, nil, nil
	}
	groups, err := slo.Groups(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluation: SLO rules: %w", err)
	}
	return groups, task, nil
}

// sloCheckAfter is how much data the store must hold before the SLO
// file's metrics are checked against it: a few scrapes of every target.
const sloCheckAfter = 10 * time.Minute
