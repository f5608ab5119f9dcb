package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/vigil-obs/vigil/internal/alert"
	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/drift"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/slo"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/watch"
)

// evaluation is the continuous path of `vigil serve`: the incident
// tracker and the watcher (nil when evaluation is off).
type evaluation struct {
	tracker *incident.Tracker
	watcher *watch.Watcher
	// remote is the backend of an attached Vigil (source.url), or nil.
	remote *store.Remote
}

// attachedSource returns what the watcher reads: st alone, or, with
// source.url, the backend merged with st and the backend's probe.
func attachedSource(cfg config.Config, e *env, st *store.Embedded, logger *slog.Logger) (watch.Source, *store.Remote, func(context.Context) error, error) {
	if cfg.Source.URL == "" {
		return st, nil, nil, nil
	}
	sel, err := cfg.Source.Matchers()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("source.selector: %w", err)
	}
	rc := store.DefaultRemoteConfig(cfg.Source.URL)
	rc.HTTPClient = cfg.Source.HTTPClient
	rc.Timeout = time.Duration(cfg.Source.Timeout)
	rc.Selector = sel
	rc.CacheSamples = continuousCacheSamples
	// The merged store evaluates with the embedded store's engine: the
	// Remote's own engine goes unused, and registers no metrics.
	remote, err := store.NewRemote(rc, e.now, logger.With("component", "source"), nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("source: %w", err)
	}
	logger.Info("attached: the evaluation reads the source merged with the embedded store", "source", remote.URL(), "selector", cfg.Source.Selector)
	m := store.NewMerged(st, remote)
	return m, remote, m.Probe, nil
}

// openEvaluation opens the incidents of the data directory and builds the
// watcher over st with the SLO rules; nothing runs yet.
func openEvaluation(cfg config.Config, e *env, st *store.Embedded, addr net.Addr, logger *slog.Logger, reg prometheus.Registerer, sender *alert.Notifier) (*evaluation, error) {
	ec := cfg.Evaluation
	if !ec.Enabled {
		return nil, nil
	}
	tr, err := incident.Open(incident.Options{
		Path:         filepath.Join(cfg.Storage.DataDir, "incidents.json"),
		ResolveAfter: time.Duration(ec.ResolveAfter),
		Logger:       logger.With("component", "incidents"),
	})
	if err != nil {
		return nil, err
	}
	eng, err := diagnose.New(diagnose.Options{Window: time.Duration(ec.Window), Logger: logger.With("component", "diagnose")})
	if err != nil {
		return nil, fmt.Errorf("evaluation: %w", err)
	}
	groups, sloCheck, err := sloGroups(context.Background(), ec, st, e.now(), logger)
	if err != nil {
		return nil, err
	}
	ext := cfg.Alerting.ExternalURL
	if ext == "" {
		ext = "http://" + advertised(addr)
	}
	mon, err := drift.NewMonitor(cfg.Drift, st, st, logger.With("component", "drift"))
	if err != nil {
		return nil, fmt.Errorf("evaluation: %w", err)
	}
	var snd watch.Sender
	if sender != nil {
		snd = sender
	}
	src, remote, probe, err := attachedSource(cfg, e, st, logger)
	if err != nil {
		return nil, err
	}
	w, err := watch.New(watch.Options{
		Source: src, Probe: probe, Engine: eng, Groups: groups, Tracker: tr, Sender: snd,
		Interval: time.Duration(ec.Interval), ResendInterval: time.Duration(cfg.Alerting.ResendInterval),
		ExternalURL: ext, Now: e.now, FindingConfidence: ec.FindingConfidence,
		Tasks:  tasks(mon.Evaluate, sloCheck),
		Logger: logger.With("component", "watch"), Registerer: reg,
	})
	if err != nil {
		if remote != nil {
			_ = remote.Close()
		}
		return nil, err
	}
	return &evaluation{tracker: tr, watcher: w, remote: remote}, nil
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

// add runs the watcher in g.
func (ev *evaluation) add(g *run.Group) {
	if ev == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error {
		err := ev.watcher.Run(ctx)
		if ev.remote != nil {
			_ = ev.remote.Close()
		}
		return err
	}, func(error) { cancel() })
}

// continuousCacheSamples bounds the samples a continuous reader of a
// backend (an attached serve's cycles, a replay's instants) keeps from one
// read to the next, so that each reads only what is new: 16 M samples,
// 256 MiB of times and values, an hour of a 128-node cluster's series
// twice over (8.3 M a window at 30 s).
const continuousCacheSamples = 16 << 20

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
// checks its SLOs' metrics against the store: those it does not hold are
// named in a warning (a rule that can never fire must not be silent). The
// check runs at once when the store already holds sloCheckAfter of data
// (a restart), else at the first evaluation sloCheckAfter after the start,
// so that a fresh install does not warn about every SLO before its first
// scrapes.
func sloGroups(ctx context.Context, ec config.EvaluationConfig, st *store.Embedded, now time.Time, logger *slog.Logger) ([]rulefmt.RuleGroup, func(context.Context, time.Time) error, error) {
	var spec *slo.Spec
	var task func(context.Context, time.Time) error
	switch {
	case ec.SLOFile != "":
		s, err := slo.ParseFile(ec.SLOFile)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("evaluation.slo_file: %w", err)}
		}
		spec = s
		check := func(ctx context.Context, at time.Time) {
			ws, err := slo.CheckMetrics(ctx, spec, slo.StoreLookup(st, at.Add(-time.Hour), at))
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
