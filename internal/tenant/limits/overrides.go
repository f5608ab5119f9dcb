package limits

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// DefaultReloadPeriod is how often Run reads the runtime file when New is
// given no period (Mimir's -runtime-config.reload-period).
const DefaultReloadPeriod = 10 * time.Second

// Overrides holds the limits of every tenant: the defaults, with the
// runtime file's overrides on top. For is safe for concurrent use and
// takes no lock; Run swaps in a new set when the file changes.
type Overrides struct {
	defaults Limits
	path     string
	period   time.Duration
	logger   *slog.Logger
	m        overridesMetrics

	cur atomic.Pointer[snapshot]

	// mu serialises loads; last is the content of the last file read,
	// good or bad (read tells whether there is one), so that an unchanged
	// file is not parsed again.
	mu   sync.Mutex
	last []byte
	read bool
}

// snapshot is one loaded set of limits; it is never changed once stored.
type snapshot struct {
	defaults Limits
	tenants  map[string]Limits
}

type overridesMetrics struct {
	failures    prometheus.Counter
	lastSuccess prometheus.Gauge
	successful  prometheus.Gauge
}

// New returns the limits of defaults with the overrides of the runtime file
// at path on top, read now: a file that cannot be read or parsed is an
// error. With path "" there are no overrides and Run only waits. reload is
// the period at which Run reads the file again (DefaultReloadPeriod when
// 0). Its metrics are registered on reg (none when nil).
func New(defaults Limits, path string, reload time.Duration, logger *slog.Logger, reg prometheus.Registerer) (*Overrides, error) {
	if err := defaults.Validate(); err != nil {
		return nil, fmt.Errorf("default limits: %w", err)
	}
	// The file is read before the metrics are registered, so that a
	// caller may call New again after fixing it.
	var b []byte
	tenants := map[string]Limits{}
	if path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read runtime limits file: %w", err)
		}
		if tenants, err = Parse(path, b, defaults); err != nil {
			return nil, err
		}
	}
	if reload <= 0 {
		reload = DefaultReloadPeriod
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := promauto.With(reg)
	o := &Overrides{
		defaults: defaults,
		path:     path,
		period:   reload,
		logger:   logger.With("component", "limits"),
		last:     b,
		read:     path != "",
		m: overridesMetrics{
			failures: f.NewCounter(prometheus.CounterOpts{
				Name: "vigil_tenant_limits_reload_failures_total",
				Help: "Reads of the runtime limits file that failed; the last good limits stay in force.",
			}),
			lastSuccess: f.NewGauge(prometheus.GaugeOpts{
				Name: "vigil_tenant_limits_last_reload_success_timestamp_seconds",
				Help: "When the runtime limits file was last loaded successfully.",
			}),
			successful: f.NewGauge(prometheus.GaugeOpts{
				Name: "vigil_tenant_limits_last_reload_successful",
				Help: "1 when the last read of the runtime limits file succeeded, 0 when the limits in force are older than the file.",
			}),
		},
	}
	o.cur.Store(&snapshot{defaults: defaults, tenants: tenants})
	o.m.successful.Set(1)
	o.m.lastSuccess.SetToCurrentTime()
	if path != "" {
		o.logger.Info("runtime limits loaded", "file", path, "tenants", len(tenants))
	}
	return o, nil
}

// For returns the limits of tenant: its overrides, or the defaults.
func (o *Overrides) For(tenant string) Limits {
	s := o.cur.Load()
	if l, ok := s.tenants[tenant]; ok {
		return l
	}
	return s.defaults
}

// Run reads the runtime file every reload period until ctx ends, and loads
// it when its content has changed. A file that cannot be read or parsed
// keeps the last good limits; it is logged once and counted in
// vigil_tenant_limits_reload_failures_total. It returns nil when ctx ends.
func (o *Overrides) Run(ctx context.Context) error {
	if o.path == "" {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(o.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_ = o.load(false)
		}
	}
}

// Reload reads and loads the runtime file now, whether or not it changed
// (for a reload on request, like Prometheus's /-/reload). On error the
// limits in force stay.
func (o *Overrides) Reload() error {
	return o.load(true)
}

// load reads the file and, when force is set or its content changed,
// parses and stores it.
func (o *Overrides) load(force bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, err := os.ReadFile(o.path)
	if err != nil {
		err = fmt.Errorf("read runtime limits file: %w", err)
		// A file that is still missing is reported once, like a bad one.
		if force || o.read {
			o.fail(err)
		}
		o.last, o.read = nil, false
		return err
	}
	if !force && o.read && bytes.Equal(b, o.last) {
		return nil
	}
	o.last, o.read = b, true
	tenants, err := Parse(o.path, b, o.defaults)
	if err != nil {
		o.fail(err)
		return err
	}
	o.cur.Store(&snapshot{defaults: o.defaults, tenants: tenants})
	o.m.successful.Set(1)
	o.m.lastSuccess.SetToCurrentTime()
	o.logger.Info("runtime limits loaded", "file", o.path, "tenants", len(tenants))
	return nil
}

func (o *Overrides) fail(err error) {
	// The line first: whoever sees the failure counted finds it logged.
	o.logger.Error("runtime limits not loaded, the last good ones stay", "file", o.path, "err", err)
	o.m.failures.Inc()
	o.m.successful.Set(0)
}
