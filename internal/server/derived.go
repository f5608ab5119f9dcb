package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/forward"
	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/tenant/limits"
	"github.com/vigil-obs/vigil/internal/traces"
)

// derived is what one tenant's spans and logs derive: span metrics, the
// service graph and log signals.
type derived struct {
	spans *spanmetrics.Consumer
	sig   *logsignals.Consumer
}

// derivedPool keeps, under tenancy, each tenant's own derivation, so that
// a tenant's span metrics, service graph and log-derived counters are
// computed from its spans and logs alone (no edge joins two tenants'
// spans, no template mixes their logs) and are stamped with its tenant. A
// tenant's derivation starts with its first spans or logs; Shutdown flushes
// every one. Its self-metrics carry the tenant as a constant label.
type derivedPool struct {
	cfg    config.Config
	st     *store.Embedded
	now    func() time.Time
	logger *slog.Logger
	reg    prometheus.Registerer

	mu      sync.Mutex
	by      map[string]*derived
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
	errs    []error
}

var _ component.Component = (*derivedPool)(nil)

// maxDerivedTenants bounds the tenants whose spans and logs derive series.
const maxDerivedTenants = 1000

// tooManyTenants refuses the spans of a tenant past maxDerivedTenants:
// RESOURCE_EXHAUSTED (429 over OTLP/HTTP).
type tooManyTenants struct{ id string }

func (e tooManyTenants) Error() string {
	return fmt.Sprintf("tenant %q: %d tenants send spans or logs already, the most one Vigil derives span metrics for", e.id, maxDerivedTenants)
}

func (e tooManyTenants) GRPCStatus() *status.Status {
	return status.New(codes.ResourceExhausted, e.Error())
}

func newDerivedPool(cfg config.Config, st *store.Embedded, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) *derivedPool {
	return &derivedPool{cfg: cfg, st: st, now: now, logger: logger, reg: reg, by: map[string]*derived{}}
}

// Start implements component.Component.
func (p *derivedPool) Start(context.Context, component.Host) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return nil
}

// Shutdown stops every tenant's derivation; each flushes what it holds.
func (p *derivedPool) Shutdown(context.Context) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}

// get returns tenant id's derivation, starting it on first use.
func (p *derivedPool) get(id string) (*derived, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.by[id]; ok {
		return d, nil
	}
	if p.stopped || p.ctx == nil {
		return nil, errors.New("the span and log derivation is not running")
	}
	if len(p.by) >= maxDerivedTenants {
		// Each tenant's derivation holds its series in memory: a flood of
		// new tenant IDs must not grow it without bound.
		return nil, tooManyTenants{id}
	}
	app := tenant.Writes{A: p.st, Of: func(context.Context) (string, bool) { return id, true }}
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"tenant": id}, p.reg)
	logger := p.logger.With("tenant", id)
	spans, err := spanmetrics.New(p.cfg.SpanMetrics, app, p.now, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("span metrics of tenant %s: %w", id, err)
	}
	sig, err := logsignals.New(p.cfg.LogSignals, app, p.now, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("log signals of tenant %s: %w", id, err)
	}
	d := &derived{spans: spans, sig: sig}
	p.by[id] = d
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := spans.Run(p.ctx); err != nil {
			p.mu.Lock()
			p.errs = append(p.errs, fmt.Errorf("span metrics of tenant %s: %w", id, err))
			p.mu.Unlock()
		}
	}()
	return d, nil
}

// of is the derivation of the tenant of ctx.
func (p *derivedPool) of(ctx context.Context) (*derived, error) {
	id, ok := tenant.WriteID(ctx)
	if !ok {
		return nil, tenant.ErrNoTenant
	}
	return p.get(id)
}

// tenantOf is the tenant of a write's context ("" when none: the pool
// refuses it).
func tenantOf(ctx context.Context) string {
	id, _ := tenant.WriteID(ctx)
	return id
}

// tenantTraces is bothTraces under tenancy: the store stamps each span
// with the tenant of ctx, and the tenant's own derivation sees them.
type tenantTraces struct {
	st     *traces.Store
	pool   *derivedPool
	fwd    *forward.Forwarder
	limits *limits.Enforcer
}

func (b tenantTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := b.limits.AllowSpans(tenantOf(ctx), td.SpanCount()); err != nil {
		return err
	}
	d, err := b.pool.of(ctx)
	if err != nil {
		return err
	}
	return bothTraces{b.st, d.spans, d.sig, b.fwd}.ConsumeTraces(ctx, td)
}

// tenantLogs is bothLogs under tenancy.
type tenantLogs struct {
	st     *traces.Store
	pool   *derivedPool
	fwd    *forward.Forwarder
	limits *limits.Enforcer
}

func (b tenantLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if err := b.limits.AllowSpans(tenantOf(ctx), ld.LogRecordCount()); err != nil {
		return err
	}
	d, err := b.pool.of(ctx)
	if err != nil {
		return err
	}
	return bothLogs{b.st, d.sig, b.fwd}.ConsumeLogs(ctx, ld)
}
