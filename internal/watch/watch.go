package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
)

// Source is what the watcher reads and where recording rules write.
type Source interface {
	storage.Queryable
	storage.AppendableV2
	Engine() promql.QueryEngine
}

// Sender hands alerts to Alertmanager (the notifier queues, batches and
// retries; Send does not block on the network).
type Sender interface {
	Send(alerts ...*notifier.Alert)
}

// Options configure a Watcher.
type Options struct {
	// Source is the store.
	Source Source
	// Engine diagnoses.
	Engine *diagnose.Engine
	// Groups are the rule groups to evaluate (the SLO rules); may be empty.
	Groups []rulefmt.RuleGroup
	// Tracker keeps the incidents.
	Tracker *incident.Tracker
	// Sender receives the alerts; nil sends nothing.
	Sender Sender
	// Interval is the evaluation interval (default 30s).
	Interval time.Duration
	// ResendInterval is how often firing alerts are re-sent (default 1m).
	ResendInterval time.Duration
	// ExternalURL is the base of links in alerts (default
	// http://localhost:9700).
	ExternalURL string
	// Now is the data clock: what Run evaluates at. Wall is the wall
	// clock of startsAt and endsAt. Both default to time.Now.
	Now, Wall func() time.Time
	// FindingConfidence is the confidence from which a finding with no
	// symptom (a GPU degrading, Vigil blind to a node) opens a ticket
	// (default 0.5: what DESIGN.md calls not healthy; nothing on a healthy
	// cluster reaches it).
	FindingConfidence float64
	// Tasks run at the start of every cycle, before the rules, at the
	// cycle's time (e.g. scheduled drift evaluations whose results the
	// rules read); a failing task is logged, and the cycle goes on.
	Tasks []func(ctx context.Context, at time.Time) error
	// Probe, if set, is asked before every cycle whether the source can
	// be read (an attached Vigil's backend). When it fails, the cycle is
	// skipped: no rule, no diagnosis, nothing resolved; the firing
	// incidents are held open, and a page says that Vigil is blind.
	Probe func(ctx context.Context) error
	// Annotate, if set, is called with every cycle's diagnosis before
	// its findings become tickets, to add to their summaries (the cost
	// of an idle GPU).
	Annotate func(ctx context.Context, at time.Time, rep *diagnose.Report)
	// OnChange, if set, is called with every incident opened,
	// re-diagnosed or resolved, in the cycle that did it.
	OnChange   func(incident.Change)
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Watcher evaluates rules and symptoms continuously.
type Watcher struct {
	opts    Options
	groups  []*rules.Group
	metrics *metrics

	mu       sync.Mutex // one cycle at a time
	restored bool
	sawData  bool
	// offset is the wall clock minus the data clock at this cycle: rule
	// alerts are moved onto the wall clock by it.
	offset  time.Duration
	lastRep *diagnose.Report
	lastAt  time.Time
}

// New builds a watcher; its rules are parsed and checked here.
func New(opts Options) (*Watcher, error) {
	if opts.Source == nil || opts.Engine == nil || opts.Tracker == nil {
		return nil, errors.New("watch: a source, an engine and a tracker are needed")
	}
	if opts.Interval <= 0 {
		opts.Interval = 30 * time.Second
	}
	if opts.ResendInterval <= 0 {
		opts.ResendInterval = time.Minute
	}
	if opts.ExternalURL == "" {
		opts.ExternalURL = "http://localhost:9700"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Wall == nil {
		opts.Wall = time.Now
	}
	if opts.FindingConfidence <= 0 {
		opts.FindingConfidence = 0.5
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{opts: opts, metrics: newMetrics(opts.Registerer)}
	if opts.Probe != nil && opts.Registerer != nil {
		opts.Registerer.MustRegister(w.metrics.sourceUp)
	}
	groups, err := w.loadGroups()
	if err != nil {
		return nil, err
	}
	w.groups = groups
	return w, nil
}

// loadGroups builds the rule groups with Prometheus's own loader, from
// memory.
func (w *Watcher) loadGroups() ([]*rules.Group, error) {
	if len(w.opts.Groups) == 0 {
		return nil, nil
	}
	ext, err := url.Parse(w.opts.ExternalURL)
	if err != nil {
		return nil, fmt.Errorf("watch: external URL: %w", err)
	}
	const file = "vigil-rules"
	mopts := &rules.ManagerOptions{
		ExternalURL:     ext,
		QueryFunc:       rules.EngineQueryFunc(w.opts.Source.Engine(), w.opts.Source),
		NotifyFunc:      w.notifyRules,
		Context:         context.Background(),
		AppendableV2:    w.opts.Source,
		Queryable:       w.opts.Source,
		Logger:          w.opts.Logger.With("component", "rules"),
		Registerer:      w.opts.Registerer,
		OutageTolerance: time.Hour,
		ForGracePeriod:  10 * time.Minute,
		ResendDelay:     w.opts.ResendInterval,
		GroupLoader:     memLoader{file: file, groups: w.opts.Groups},
	}
	m := rules.NewManager(mopts)
	loaded, errs := m.LoadGroups(w.opts.Interval, labels.EmptyLabels(), w.opts.ExternalURL, nil, false, file)
	if len(errs) > 0 {
		return nil, fmt.Errorf("watch: load rules: %w", errors.Join(errs...))
	}
	out := make([]*rules.Group, 0, len(loaded))
	for _, g := range loaded {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *rules.Group) int {
		return cmpString(a.Name(), b.Name())
	})
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// memLoader hands rule groups held in memory to the rule manager.
type memLoader struct {
	file   string
	groups []rulefmt.RuleGroup
}

func (l memLoader) Load(identifier string, _ bool, _ model.ValidationScheme) (*rulefmt.RuleGroups, []error) {
	if identifier != l.file {
		return nil, []error{fmt.Errorf("no rule file %q", identifier)}
	}
	return &rulefmt.RuleGroups{Groups: l.groups}, nil
}

func (memLoader) Parse(query string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(query)
}

// Run evaluates every Interval (wall clock) at the data clock's time until
// ctx ends. A failed cycle is logged and counted; the next one runs.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		if err := w.Cycle(ctx, w.opts.Now()); err != nil && ctx.Err() == nil {
			w.opts.Logger.Warn("evaluation failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RuleGroups returns the rule groups (the API's /api/v1/rules).
func (w *Watcher) RuleGroups() []*rules.Group { return w.groups }

// AlertingRules returns the alerting rules (the API's /api/v1/alerts).
func (w *Watcher) AlertingRules() []*rules.AlertingRule {
	var out []*rules.AlertingRule
	for _, g := range w.groups {
		out = append(out, g.AlertingRules()...)
	}
	return out
}

// Last returns the latest diagnosis and its evaluation time (nil before
// the first cycle).
func (w *Watcher) Last() (*diagnose.Report, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastRep, w.lastAt
}
