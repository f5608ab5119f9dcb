package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promcfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/notifier"
)

// Notifier sends alerts to Alertmanagers (through Prometheus's notifier:
// its queues, batches and API v2 client) and to webhooks, from one Send.
type Notifier struct {
	cfg      Config
	logger   *slog.Logger
	now      func() time.Time
	manager  *notifier.Manager
	targets  map[string][]*targetgroup.Group
	amNames  []string
	webhooks []*webhook
	client   *http.Client // the webhooks'
	started  atomic.Bool

	mu    sync.Mutex
	state runState
	// pending holds what was sent to the Alertmanagers before Run gave the
	// notifier its targets.
	pending []*Alert
}

type runState int

const (
	stateNew runState = iota
	stateRunning
	stateStopped
)

// Option sets what code, not the user, decides about a Notifier.
type Option func(*Notifier)

// WithClock sets the wall clock (default time.Now) that tells a firing
// alert from a resolved one in webhook payloads.
func WithClock(now func() time.Time) Option {
	return func(n *Notifier) { n.now = now }
}

// New validates cfg and builds the notifier; nothing is sent until Run.
// Its metrics (vigil_notifications_*) are registered with reg.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("alerting config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{cfg: cfg, logger: logger, now: time.Now, targets: map[string][]*targetgroup.Group{}}
	for _, o := range opts {
		o(n)
	}
	private := prometheus.NewRegistry()
	n.manager = notifier.NewManager(&notifier.Options{
		QueueCapacity:   cfg.QueueCapacity,
		DrainOnShutdown: true,
		Registerer:      private,
	}, model.UTF8Validation, logger)
	var amCfgs config.AlertmanagerConfigs
	for i, s := range cfg.Alertmanagers {
		u, _ := url.Parse(s)               // valid: checked by Validate
		key := fmt.Sprintf("config-%d", i) // the key AlertmanagerConfigs.ToMap gives it
		amCfgs = append(amCfgs, alertmanagerConfig(u, cfg.Timeout, cfg.HTTPConfig.HTTPClientConfig))
		n.targets[key] = []*targetgroup.Group{{
			Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}},
			Source:  key,
		}}
		n.amNames = append(n.amNames, redact(u))
	}
	if err := n.manager.ApplyConfig(&config.Config{AlertingConfig: config.AlertingConfig{AlertmanagerConfigs: amCfgs}}); err != nil {
		return nil, fmt.Errorf("configure Alertmanager client: %w", err)
	}
	var err error
	if n.client, err = promcfg.NewClientFromConfig(cfg.HTTPConfig.HTTPClientConfig, "alerting"); err != nil {
		return nil, fmt.Errorf("configure webhook client: %w", err)
	}
	names := map[string]int{}
	for _, s := range cfg.Webhooks {
		u, _ := url.Parse(s) // valid: checked by Validate
		name := redact(u)
		if names[name]++; names[name] > 1 {
			name = fmt.Sprintf("%s#%d", name, names[name]) // URLs that differ only in credentials
		}
		n.webhooks = append(n.webhooks, newWebhook(u, name, n.client, cfg, logger))
	}
	m := newMetrics(private, cfg.QueueCapacity)
	m.webhooks = n.webhooks
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("register notification metrics: %w", err)
		}
	}
	return n, nil
}

// alertmanagerConfig is Prometheus's alerting configuration of one
// Alertmanager root URL: its scheme and path prefix, the user and password
// as basic auth, the timeout, API v2.
func alertmanagerConfig(u *url.URL, timeout model.Duration, hc promcfg.HTTPClientConfig) *config.AlertmanagerConfig {
	c := config.DefaultAlertmanagerConfig
	c.HTTPClientConfig = hc
	c.Scheme = u.Scheme
	c.PathPrefix = u.Path
	c.Timeout = timeout
	c.APIVersion = config.AlertmanagerAPIVersionV2
	if u.User != nil {
		pw, _ := u.User.Password()
		c.HTTPClientConfig.BasicAuth = &promcfg.BasicAuth{Username: u.User.Username(), Password: promcfg.Secret(pw)}
	}
	return &c
}

// withExternal returns alerts with the external labels added where an
// alert lacks the name (the alerts given are not changed): what every
// receiver gets, Alertmanager and webhooks alike.
func (n *Notifier) withExternal(alerts []*Alert) []*Alert {
	if len(n.cfg.ExternalLabels) == 0 {
		return alerts
	}
	out := make([]*Alert, len(alerts))
	for i, a := range alerts {
		b := labels.NewBuilder(a.Labels)
		for k, v := range n.cfg.ExternalLabels {
			if a.Labels.Get(k) == "" {
				b.Set(k, v)
			}
		}
		c := *a
		c.Labels = b.Labels()
		out[i] = &c
	}
	return out
}

// Alert returns NewAlert(s, now, ResendInterval).
func (n *Notifier) Alert(s Spec, now time.Time) *Alert {
	return NewAlert(s, now, time.Duration(n.cfg.ResendInterval))
}

// IncidentURL returns the configuration's link to an incident.
func (n *Notifier) IncidentURL(id string) string { return n.cfg.IncidentURL(id) }

// Send queues alerts for every Alertmanager and webhook and returns
// without waiting for them. Each receiver's queue holds QueueCapacity
// alerts and drops the oldest beyond that; a failed request is not
// retried by the Alertmanager path (the next re-send is the retry, as in
// Prometheus) and is retried a few times by the webhook path. Alerts sent
// before Run are held until it starts; after Run returns, Send does
// nothing.
func (n *Notifier) Send(alerts ...*Alert) {
	if len(alerts) == 0 {
		return
	}
	alerts = n.withExternal(alerts)
	var payloads [][]byte
	if len(n.webhooks) > 0 {
		var err error
		if payloads, err = marshalWebhook(alerts, n.now(), n.cfg.ExternalURL); err != nil {
			n.logger.Error("send alerts to webhooks", "count", len(alerts), "err", err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch n.state {
	case stateStopped:
		return
	case stateNew:
		n.pending = append(n.pending, alerts...)
		if d := len(n.pending) - n.cfg.QueueCapacity; d > 0 {
			n.logger.Warn("alerts sent before the notifier started, dropping the oldest", "count", d)
			n.pending = append(n.pending[:0], n.pending[d:]...)
		}
	case stateRunning:
		n.manager.Send(alerts...)
	}
	if payloads != nil {
		for _, w := range n.webhooks {
			w.enqueue(payloads...)
		}
	}
	n.logger.Debug("alerts queued", "count", len(alerts))
}

// Run sends alerts until ctx is done, then sends what is still queued (one
// attempt each) and returns. It returns an error only when called twice.
func (n *Notifier) Run(ctx context.Context) error {
	if !n.started.CompareAndSwap(false, true) {
		return errors.New("run notifier: Run was already called")
	}
	tsets := make(chan map[string][]*targetgroup.Group)
	managerDone := make(chan struct{})
	go func() {
		defer close(managerDone)
		n.manager.Run(tsets)
	}()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range n.webhooks {
		wg.Go(func() { w.run(stop) })
	}
	webhooks := make([]string, len(n.webhooks))
	for i, w := range n.webhooks {
		webhooks[i] = w.name
	}
	if n.sync(ctx, tsets) {
		n.logger.Info("notifier started", "alertmanagers", n.amNames, "webhooks", webhooks)
	}
	<-ctx.Done()

	begin := time.Now()
	n.mu.Lock()
	if lost := len(n.pending); lost > 0 {
		n.logger.Warn("stopped before the Alertmanagers were set up, dropping alerts", "count", lost)
	}
	n.state, n.pending = stateStopped, nil
	n.mu.Unlock()
	n.manager.Stop()
	<-managerDone
	close(stop)
	wg.Wait()
	n.client.CloseIdleConnections()
	n.logger.Info("notifier stopped", "took", time.Since(begin).Round(time.Millisecond))
	return nil
}

// sync gives the manager its Alertmanagers and then sends what Send held.
// The second, empty update is a barrier: the manager takes it only once
// it has applied the first, so no alert goes to a manager without targets.
func (n *Notifier) sync(ctx context.Context, tsets chan<- map[string][]*targetgroup.Group) bool {
	for _, ts := range []map[string][]*targetgroup.Group{n.targets, {}} {
		select {
		case tsets <- ts:
		case <-ctx.Done():
			return false
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state = stateRunning
	if len(n.pending) > 0 {
		n.manager.Send(n.pending...)
		n.pending = nil
	}
	return true
}
