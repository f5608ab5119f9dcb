package limits

import (
	"context"
	"maps"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Source gives a tenant's limits; *Overrides is one. For is called on
// every check, so it must be cheap and safe for concurrent use.
type Source interface {
	For(tenant string) Limits
}

var _ Source = (*Overrides)(nil)

// Defaults of EnforcerOptions.
const (
	// DefaultIdleTimeout is how long a series stays active after its last
	// sample (Mimir's -ingester.active-series-metrics-idle-timeout).
	DefaultIdleTimeout = 20 * time.Minute
	// DefaultPurgeInterval is how often Run forgets idle series.
	DefaultPurgeInterval = time.Minute
)

// EnforcerOptions are the Enforcer's settings, set by code.
type EnforcerOptions struct {
	// IdleTimeout is how long a series counts as active after it was last
	// seen, and a tenant's state is kept after its last request once it
	// has no active series (DefaultIdleTimeout when 0).
	IdleTimeout time.Duration
	// PurgeInterval is how often Run calls Purge (DefaultPurgeInterval
	// when 0).
	PurgeInterval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Enforcer checks requests against their tenant's limits and keeps the
// state that needs: a token bucket per tenant for samples and for spans,
// the tenant's active series, its running queries. State is made on a
// tenant's first request and dropped by Purge once the tenant has been
// idle for the idle timeout, so memory and the metrics' tenant label follow
// the tenants that are active. All methods are safe for concurrent use.
type Enforcer struct {
	src        Source
	idle       time.Duration
	purgeEvery time.Duration
	now        func() time.Time
	// base is the Unix time series times count from, in seconds.
	base int64
	m    enforcerMetrics

	// mu serialises changes to the tenants map, which is copied on write
	// so that lookups take no lock.
	mu      sync.Mutex
	tenants atomic.Pointer[map[string]*tenantState]
}

// NewEnforcer returns an Enforcer of the limits src gives, its metrics
// registered on reg (none when nil).
func NewEnforcer(src Source, opts EnforcerOptions, reg prometheus.Registerer) *Enforcer {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.PurgeInterval <= 0 {
		opts.PurgeInterval = DefaultPurgeInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Enforcer{
		src:        src,
		idle:       opts.IdleTimeout,
		purgeEvery: opts.PurgeInterval,
		now:        opts.Now,
		base:       opts.Now().Unix(),
		m:          newEnforcerMetrics(reg),
	}
	e.tenants.Store(&map[string]*tenantState{})
	return e
}

// Limits returns tenant's limits in force now.
func (e *Enforcer) Limits(tenant string) Limits { return e.src.For(tenant) }

// AllowSamples takes n samples from tenant's ingestion_rate bucket. A
// request that does not fit is refused whole, and one larger than
// ingestion_burst_size is never accepted (as in Mimir). The refusal is a
// *LimitError with RetryAfter set when waiting would help; its samples are
// counted as discarded.
func (e *Enforcer) AllowSamples(tenant string, n int) error {
	if n <= 0 {
		return nil
	}
	l := e.src.For(tenant)
	if l.IngestionRate == 0 {
		return nil
	}
	now := e.now()
	return e.allowSamples(e.state(tenant, now), l, n, now)
}

func (e *Enforcer) allowSamples(st *tenantState, l Limits, n int, now time.Time) error {
	if n <= 0 || l.IngestionRate == 0 {
		return nil
	}
	b := burst(l.IngestionRate, l.IngestionBurstSize)
	ok, wait := st.samples.allow(now, n, l.IngestionRate, b)
	if ok {
		return nil
	}
	st.m.discardedRate.Add(float64(n))
	st.m.rejectedSamples.Inc()
	return rateError(st.name, IngestionRate, "ingestion rate", "samples", l.IngestionRate, b, n, wait)
}

// AllowSpans takes n spans or log records from tenant's spans_rate
// bucket, as AllowSamples does for samples.
func (e *Enforcer) AllowSpans(tenant string, n int) error {
	if n <= 0 {
		return nil
	}
	l := e.src.For(tenant)
	if l.SpansRate == 0 {
		return nil
	}
	now := e.now()
	st := e.state(tenant, now)
	b := burst(l.SpansRate, l.SpansBurstSize)
	ok, wait := st.spans.allow(now, n, l.SpansRate, b)
	if ok {
		return nil
	}
	st.m.discardedSpans.Add(float64(n))
	st.m.rejectedSpans.Inc()
	return rateError(st.name, SpansRate, "spans rate", "spans and log records", l.SpansRate, b, n, wait)
}

// SamplesExhausted refuses a write of tenant while its ingestion_rate
// bucket holds less than one sample: no write can be accepted then,
// whatever its size, so the caller refuses it before reading its body
// (a tenant far over its rate costs next to nothing). nil when the bucket
// holds a sample, or the tenant has no rate.
func (e *Enforcer) SamplesExhausted(tenant string) error {
	l := e.src.For(tenant)
	if l.IngestionRate == 0 {
		return nil
	}
	now := e.now()
	st := e.state(tenant, now)
	b := burst(l.IngestionRate, l.IngestionBurstSize)
	tokens := st.samples.tokens(now, l.IngestionRate, b)
	if tokens >= 1 {
		return nil
	}
	st.m.rejectedSamples.Inc()
	wait := time.Duration((1 - tokens) / l.IngestionRate * float64(time.Second))
	return &LimitError{Tenant: tenant, Limit: IngestionRate, RetryAfter: wait,
		Msg: "ingestion rate limit (" + strconv.FormatFloat(l.IngestionRate, 'f', -1, 64) + " samples/s, burst " + strconv.Itoa(b) + ") exhausted: the request was refused before it was read"}
}

func rateError(tenant, limit, what, unit string, r float64, b, n int, wait time.Duration) *LimitError {
	msg := what + " limit (" + strconv.FormatFloat(r, 'f', -1, 64) + " " + perSecond(unit) +
		", burst " + strconv.Itoa(b) + ") exceeded while adding " + strconv.Itoa(n) + " " + unit
	if n > b {
		msg += ", more than the burst: a request this large is never accepted, send smaller ones or raise the burst size"
	}
	return &LimitError{Tenant: tenant, Limit: limit, Msg: msg, RetryAfter: wait}
}

func perSecond(unit string) string {
	if unit == "samples" {
		return "samples/s"
	}
	return "per second"
}

// CheckRequestSize refuses a write request of more than tenant's
// max_request_bytes, as received (before decompression).
func (e *Enforcer) CheckRequestSize(tenant string, bytes int64) error {
	l := e.src.For(tenant)
	if l.MaxRequestBytes == 0 || bytes <= l.MaxRequestBytes {
		return nil
	}
	st := e.state(tenant, e.now())
	st.m.rejected(e.m, MaxRequestBytes).Inc()
	return &LimitError{Tenant: tenant, Limit: MaxRequestBytes, Msg: "request size limit (" +
		strconv.FormatInt(l.MaxRequestBytes, 10) + " bytes) exceeded by a request of " + strconv.FormatInt(bytes, 10) + " bytes"}
}

// SeriesSeen records that tenant wrote to the series with the labels'
// hash of metric at ts (the time of the write, not the sample's
// timestamp). A series seen within the idle timeout always passes; a new
// one is refused with a *LimitError when the tenant has max_active_series
// active series, or the metric max_series_per_metric, and counted as one
// discarded sample.
func (e *Enforcer) SeriesSeen(tenant, metric string, hash uint64, ts time.Time) error {
	_, err := e.seen(e.state(tenant, ts), e.src.For(tenant), metric, hash, e.secs(ts))
	return err
}

func (e *Enforcer) seen(st *tenantState, l Limits, metric string, hash uint64, at uint32) (bool, error) {
	created, why := st.series.seen(metric, hash, at, l.MaxActiveSeries, l.MaxSeriesPerMetric)
	switch why {
	case overActive:
		st.m.discardedActive.Inc()
		return false, &LimitError{Tenant: st.name, Limit: MaxActiveSeries, Msg: "active series limit (" +
			strconv.Itoa(l.MaxActiveSeries) + ") reached: a new series of metric " + strconv.Quote(metric) + " was not stored"}
	case overPerMetric:
		st.m.discardedPerMetric.Inc()
		return false, &LimitError{Tenant: st.name, Limit: MaxSeriesPerMetric, Msg: "series per metric limit (" +
			strconv.Itoa(l.MaxSeriesPerMetric) + ") reached for metric " + strconv.Quote(metric) + ": a new series was not stored"}
	}
	if created {
		st.m.active.Inc()
	}
	return created, nil
}

// forget removes a series that seen created, when its append is rolled
// back.
func (e *Enforcer) forget(st *tenantState, hash uint64) {
	if st.series.forget(hash) {
		st.m.active.Dec()
	}
}

// ActiveSeries returns tenant's active series, in all and of metric.
func (e *Enforcer) ActiveSeries(tenant, metric string) (total, ofMetric int) {
	st, ok := (*e.tenants.Load())[tenant]
	if !ok {
		return 0, 0
	}
	return int(st.series.total.Load()), st.series.count(metric)
}

// AllowPushGroup refuses a new push group of tenant when it has
// max_push_groups groups already (existingGroups). Replacing a group the
// tenant has needs no allowance.
func (e *Enforcer) AllowPushGroup(tenant string, existingGroups int) error {
	l := e.src.For(tenant)
	if l.MaxPushGroups == 0 || existingGroups < l.MaxPushGroups {
		return nil
	}
	st := e.state(tenant, e.now())
	st.m.rejected(e.m, MaxPushGroups).Inc()
	return &LimitError{Tenant: tenant, Limit: MaxPushGroups, Msg: "push group limit (" + strconv.Itoa(l.MaxPushGroups) +
		") reached: the tenant has " + strconv.Itoa(existingGroups) + " groups; replace or delete one instead of adding another"}
}

// MaxQuerySamples returns the samples one of tenant's queries may load (0:
// unlimited), for the query engine.
func (e *Enforcer) MaxQuerySamples(tenant string) int {
	return e.src.For(tenant).MaxQuerySamples
}

// QuerySamplesError counts a query of tenant refused because it would load
// more than max_query_samples, and returns the *LimitError to answer it
// with. The caller calls it when the engine stops the query for too many
// samples.
func (e *Enforcer) QuerySamplesError(tenant string) error {
	st := e.state(tenant, e.now())
	st.m.rejected(e.m, MaxQuerySamples).Inc()
	return &LimitError{Tenant: tenant, Limit: MaxQuerySamples, Msg: "query sample limit (" +
		strconv.Itoa(e.src.For(tenant).MaxQuerySamples) + ") exceeded: the query would load more samples into memory; narrow its range or its selectors"}
}

// Run forgets idle series and tenants every purge interval until ctx
// ends; it returns nil then.
func (e *Enforcer) Run(ctx context.Context) error {
	t := time.NewTicker(e.purgeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			e.Purge(e.now())
		}
	}
}

// Purge forgets the series not seen for the idle timeout before now, then
// the tenants with no active series, no running query and no request for
// the idle timeout, and their metrics.
func (e *Enforcer) Purge(now time.Time) {
	cutoff := now.Add(-e.idle)
	cut := e.secs(cutoff)
	for _, st := range *e.tenants.Load() {
		if n := st.series.purge(cut); n > 0 {
			st.m.active.Sub(float64(n))
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := *e.tenants.Load()
	var next map[string]*tenantState
	for name, st := range cur {
		if st.series.total.Load() > 0 || st.q.busy() {
			continue
		}
		// A request that touched the tenant since makes the swap fail; one
		// that comes after sees the mark and makes a new state.
		v := st.lastUsed.Load()
		if v >= cutoff.Unix() || !st.lastUsed.CompareAndSwap(v, purged) {
			continue
		}
		if next == nil {
			next = maps.Clone(cur)
		}
		delete(next, name)
		e.m.forget(name)
	}
	if next != nil {
		e.tenants.Store(&next)
	}
}

// secs returns t as seconds since e.base, clamped to uint32.
func (e *Enforcer) secs(t time.Time) uint32 {
	d := t.Unix() - e.base
	switch {
	case d < 0:
		return 0
	case d > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(d)
}

// purged marks a tenant state that Purge removed.
const purged = math.MinInt64

// tokens returns what the bucket of rate r and size b holds at now.
func (k *bucket) tokens(now time.Time, r float64, b int) float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.follow(now, r, b)
	return k.lim.TokensAt(now)
}

// follow makes the bucket's rate and size r and b (k.mu held).
func (k *bucket) follow(now time.Time, r float64, b int) {
	switch {
	case k.lim == nil:
		k.lim = rate.NewLimiter(rate.Limit(r), b)
		k.r, k.b = r, b
	case k.r != r || k.b != b:
		k.lim.SetLimitAt(now, rate.Limit(r))
		k.lim.SetBurstAt(now, b)
		k.r, k.b = r, b
	}
}

// tenantState is one tenant's buckets, series and query slots.
type tenantState struct {
	name string
	// lastUsed is the Unix second of the last request, or purged.
	lastUsed atomic.Int64

	samples, spans bucket
	series         seriesSet
	q              querySlots
	m              tenantMetrics
}

// state returns tenant's state, made on its first request, and marks it
// used at now.
func (e *Enforcer) state(tenant string, now time.Time) *tenantState {
	sec := now.Unix()
	if st, ok := (*e.tenants.Load())[tenant]; ok && st.touch(sec) {
		return st
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Under mu no state in the map is purged: Purge marks and removes
	// states while holding it.
	cur := *e.tenants.Load()
	if st, ok := cur[tenant]; ok && st.touch(sec) {
		return st
	}
	st := &tenantState{name: tenant, m: e.m.forTenant(tenant)}
	st.lastUsed.Store(sec)
	next := maps.Clone(cur)
	next[tenant] = st
	e.tenants.Store(&next)
	return st
}

// touch records a use at sec; it returns false for a purged state.
func (s *tenantState) touch(sec int64) bool {
	for {
		v := s.lastUsed.Load()
		if v == purged {
			return false
		}
		if v >= sec || s.lastUsed.CompareAndSwap(v, sec) {
			return true
		}
	}
}

// bucket is a token bucket whose rate and burst follow the limits in
// force: they are compared on each use and changed in place (the tokens
// the bucket holds are kept).
type bucket struct {
	mu  sync.Mutex
	lim *rate.Limiter
	r   float64
	b   int
}

// allow takes n tokens at now from a bucket of rate r and size b. When it
// cannot, it returns how long until it could (0 when n is more than b).
func (k *bucket) allow(now time.Time, n int, r float64, b int) (bool, time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.follow(now, r, b)
	if k.lim.AllowN(now, n) {
		return true, 0
	}
	if n > b {
		return false, 0
	}
	need := float64(n) - k.lim.TokensAt(now)
	return false, time.Duration(need / r * float64(time.Second))
}
