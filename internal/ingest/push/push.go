package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/tenant"
)

// Defaults of Options.
const (
	DefaultInterval     = 15 * time.Second
	DefaultMaxBodyBytes = 16 << 20
	DefaultMaxSeries    = 100_000
)

// Options configure the endpoint.
type Options struct {
	// Appendable receives every push at push time and the groups' last
	// values every Interval.
	Appendable storage.AppendableV2
	// Interval is how often Run appends the groups' last values again
	// (default 15s, a usual scrape interval of a Pushgateway).
	Interval time.Duration
	// MaxBodyBytes limits a request body after gzip decoding (default
	// 16 MiB); a larger one gets 413.
	MaxBodyBytes int64
	// MaxSeries limits the series held over all groups (default 100,000);
	// a push that would go over it gets 400 and changes nothing.
	MaxSeries int
	// Budget bounds the bytes the requests in flight hold, shared with
	// the other ingest paths; nil: no bound.
	Budget *admission.Budget
	// Gate shares the ingest slots between clients, with remote write
	// and OTLP; nil: no gate.
	Gate *admission.FairGate
	// Tenant, if set, is the tenant of a request's context: a group
	// belongs to it (its key holds tenant.Label, which every series of
	// the group carries), so a tenant replaces or deletes its own groups
	// only. A request with no tenant is refused. nil: no tenancy.
	Tenant func(context.Context) (string, bool)
	// NewGroup, if set, is asked before a push creates a group of a
	// tenant that holds groups already; an error refuses the push (a
	// tenant's limit: its status code, e.g. 429).
	NewGroup func(tenant string, groups int) error
	// Now is the clock (default time.Now).
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Handler is the push endpoint. Mount it at PathPrefix and call Run.
type Handler struct {
	opts Options
	m    *metrics

	// mu serialises pushes, deletes and refreshes, so that the samples of
	// a series are appended in time order.
	mu     sync.Mutex
	groups map[string]*group
	// owner maps each held series (its labels' bytes) to its group's id.
	owner map[string]string
	// lastTS is the timestamp (ms) of the last append.
	lastTS int64
}

var _ http.Handler = (*Handler)(nil)

// group is one grouping key's metrics.
type group struct {
	key      groupingKey
	families map[string]*family
	// pushed and failed are the times of the last successful and failed
	// push; zero if none.
	pushed, failed time.Time
}

// New returns the endpoint.
func New(opts Options) (*Handler, error) {
	if opts.Appendable == nil {
		return nil, errors.New("push: no appendable")
	}
	if opts.Interval < 0 || opts.MaxBodyBytes < 0 || opts.MaxSeries < 0 {
		return nil, errors.New("push: interval and limits must not be negative")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxSeries == 0 {
		opts.MaxSeries = DefaultMaxSeries
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{
		opts:   opts,
		m:      newMetrics(opts.Registerer),
		groups: map[string]*group{},
		owner:  map[string]string{},
	}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	code, msg := h.serve(r)
	h.m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
	if code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", "PUT, POST, DELETE")
	}
	if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(admission.RetryAfter/time.Second)))
	}
	if code >= 400 {
		h.opts.Logger.Debug("push rejected", "code", code, "msg", msg)
		http.Error(w, msg, code)
		return
	}
	w.WriteHeader(code)
}

// refusedCode is the answer to a refusal of the in-flight budget.
func refusedCode(r *admission.Refusal) (int, string) { return r.Status, r.Msg }

// serve handles a request and returns the status code and, for an error,
// a one-line reason.
func (h *Handler) serve(r *http.Request) (int, string) {
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodDelete:
	default:
		return http.StatusMethodNotAllowed, "method " + r.Method + " not allowed: push with PUT or POST, delete with DELETE"
	}
	key, err := parsePath(r.URL.EscapedPath())
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	if h.opts.Tenant != nil {
		id, ok := h.opts.Tenant(r.Context())
		if !ok {
			return http.StatusUnauthorized, tenant.ErrNoTenant.Error()
		}
		key = key.withTenant(id)
	}
	if r.Method == http.MethodDelete {
		if err := h.delete(r.Context(), key); err != nil {
			return http.StatusInternalServerError, err.Error()
		}
		return http.StatusAccepted, ""
	}
	client := admission.ClientOf(r)
	if err := h.opts.Gate.Within(r.Context(), client, admission.IngestWait); err != nil {
		if refused, ok := err.(*admission.Refusal); ok {
			return refusedCode(refused)
		}
		return http.StatusServiceUnavailable, "the client went away"
	}
	defer h.opts.Gate.Release(client)
	// The body is charged to the budget as sent, then decoded.
	ticket, refused := h.opts.Budget.Acquire(client, "push", max(r.ContentLength, 0))
	if refused != nil {
		return refusedCode(refused)
	}
	defer ticket.Release()
	body, err := readBody(r, h.opts.MaxBodyBytes)
	if errors.Is(err, errTooLarge) {
		return http.StatusRequestEntityTooLarge, err.Error()
	}
	if err != nil {
		return http.StatusBadRequest, err.Error()
	}
	if refused := ticket.Grow(int64(len(body)) * admission.ExpansionText); refused != nil {
		return refusedCode(refused)
	}
	mfs, err := decodeFamilies(body, r.Header)
	if err != nil {
		return http.StatusBadRequest, oneLine(err.Error())
	}
	fams := make(map[string]*family, len(mfs))
	var invalid error
	for name, mf := range mfs {
		if name == pushTimeName || name == pushFailureTimeName {
			continue // the endpoint's own, as on the Pushgateway
		}
		f, err := flatten(mf, key)
		if err != nil {
			invalid = err
			break
		}
		fams[name] = f
	}
	if err := h.push(r.Context(), key, fams, r.Method == http.MethodPut, invalid); err != nil {
		var limited interface {
			error
			StatusCode() int
		}
		if errors.As(err, &limited) {
			return limited.StatusCode(), oneLine(err.Error())
		}
		var bad badPushError
		if errors.As(err, &bad) {
			return http.StatusBadRequest, "pushed metrics are invalid or inconsistent with existing metrics: " + oneLine(err.Error())
		}
		return http.StatusInternalServerError, err.Error()
	}
	return http.StatusOK, ""
}

// badPushError is a push refused for its content (400).
type badPushError struct{ err error }

func (e badPushError) Error() string { return e.err.Error() }
func (e badPushError) Unwrap() error { return e.err }

// push applies a push to its group. invalid is a fault flatten found; it
// fails the push as the consistency checks do.
func (h *Handler) push(ctx context.Context, key groupingKey, fams map[string]*family, replace bool, invalid error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := key.id()
	old := h.groups[id]
	now := h.opts.Now()
	fail := func(err error) error {
		g := old
		if g == nil {
			g = &group{key: key, families: map[string]*family{}}
			h.groups[id] = g
			h.m.groups.Set(float64(len(h.groups)))
		}
		g.failed = now
		// The group shows the failure at once, as a scrape would.
		if aerr := h.appendGroups(ctx, h.ts(now), []*group{g}, nil); aerr != nil {
			h.opts.Logger.Warn("store push_failure_time_seconds", "err", aerr)
		}
		return badPushError{err}
	}
	if invalid != nil {
		return fail(invalid)
	}
	if old == nil && h.opts.NewGroup != nil {
		owner := key.tenant()
		n := 0
		for _, g := range h.groups {
			if g.key.tenant() == owner {
				n++
			}
		}
		if err := h.opts.NewGroup(owner, n); err != nil {
			return err
		}
	}
	next := &group{key: key, families: make(map[string]*family, len(fams))}
	if old != nil {
		next.failed = old.failed
		if !replace {
			for n, f := range old.families {
				next.families[n] = f
			}
		}
	}
	for n, f := range fams {
		next.families[n] = f
	}
	next.pushed = now
	if err := h.check(id, fams); err != nil {
		return fail(err)
	}
	if n := h.heldSeries(old, next); n > h.opts.MaxSeries {
		return badPushError{fmt.Errorf("the push would hold %d series, over the limit of %d", n, h.opts.MaxSeries)}
	}
	if err := h.appendGroups(ctx, h.ts(now), []*group{next}, staleSeries(old, next)); err != nil {
		return fmt.Errorf("store pushed metrics: %w", err)
	}
	h.setOwner(id, old, next)
	h.groups[id] = next
	h.m.groups.Set(float64(len(h.groups)))
	return nil
}

// check is the Pushgateway's consistency check: a family's type agrees
// with that of the same name in other groups, and no series is pushed
// twice or held by another group. It runs under mu.
func (h *Handler) check(id string, fams map[string]*family) error {
	seen := map[string]struct{}{}
	var buf []byte
	for _, f := range fams {
		for gid, g := range h.groups {
			if other, ok := g.families[f.name]; ok && gid != id && other.typ != f.typ {
				return fmt.Errorf("metric %s pushed as %s, but another group holds it as %s", f.name, typeName(f.typ), typeName(other.typ))
			}
		}
		for _, s := range f.series {
			buf = s.lset.Bytes(buf[:0])
			if _, dup := seen[string(buf)]; dup {
				return fmt.Errorf("series %s was pushed twice", s.lset)
			}
			seen[string(buf)] = struct{}{}
			if o, ok := h.owner[string(buf)]; ok && o != id {
				return fmt.Errorf("series %s is held by another group", s.lset)
			}
		}
	}
	return nil
}

func typeName(t model.MetricType) string {
	if t == model.MetricTypeUnknown {
		return "untyped"
	}
	return string(t)
}

// heldSeries is the number of series held after old is replaced by next.
func (h *Handler) heldSeries(old, next *group) int {
	return len(h.owner) - countSeries(old) + countSeries(next)
}

func countSeries(g *group) int {
	if g == nil {
		return 0
	}
	n := 0
	for _, f := range g.families {
		n += len(f.series)
	}
	return n
}

// setOwner moves the ownership of the series from old to next.
func (h *Handler) setOwner(id string, old, next *group) {
	var buf []byte
	for _, g := range []*group{old, next} {
		if g == nil {
			continue
		}
		for _, f := range g.families {
			for _, s := range f.series {
				buf = s.lset.Bytes(buf[:0])
				if g == old {
					delete(h.owner, string(buf))
				} else {
					h.owner[string(buf)] = id
				}
			}
		}
	}
}

// staleSeries returns the series of old that next no longer has.
func staleSeries(old, next *group) []labels.Labels {
	if old == nil {
		return nil
	}
	keep := map[string]struct{}{}
	var buf []byte
	if next != nil {
		for _, f := range next.families {
			for _, s := range f.series {
				keep[string(s.lset.Bytes(buf[:0]))] = struct{}{}
			}
		}
	}
	var stale []labels.Labels
	for _, f := range old.families {
		for _, s := range f.series {
			if _, ok := keep[string(s.lset.Bytes(buf[:0]))]; !ok {
				stale = append(stale, s.lset)
			}
		}
	}
	return stale
}

// delete removes a group; its series get staleness markers.
func (h *Handler) delete(ctx context.Context, key groupingKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := key.id()
	old, ok := h.groups[id]
	if !ok {
		return nil
	}
	stale := staleSeries(old, nil)
	stale = append(stale, ownSeries(old, pushTimeName), ownSeries(old, pushFailureTimeName))
	if err := h.appendGroups(ctx, h.ts(h.opts.Now()), nil, stale); err != nil {
		return fmt.Errorf("store staleness markers: %w", err)
	}
	h.setOwner(id, old, nil)
	delete(h.groups, id)
	h.m.groups.Set(float64(len(h.groups)))
	return nil
}

// ts returns the timestamp (ms) of the next append: now, or just after the
// last append if the clock has not moved on. It runs under mu.
func (h *Handler) ts(now time.Time) int64 {
	t := now.UnixMilli()
	if t <= h.lastTS {
		t = h.lastTS + 1
	}
	return t
}

// ownSeries returns the labels of push_time_seconds or
// push_failure_time_seconds of g.
func ownSeries(g *group, name string) labels.Labels {
	b := labels.NewBuilder(labels.EmptyLabels())
	for _, p := range g.key {
		b.Set(p.name, p.value)
	}
	b.Set(model.MetricNameLabel, name)
	return b.Labels()
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// appendGroups appends, at ts, every sample of groups with their
// push_time_seconds and push_failure_time_seconds, and a staleness marker
// for each series of stale, in one transaction. It runs under mu.
func (h *Handler) appendGroups(ctx context.Context, ts int64, groups []*group, stale []labels.Labels) error {
	app := h.opts.Appendable.AppenderV2(ctx)
	n := 0
	var firstErr error
	add := func(lset labels.Labels, v float64, opts storage.AppendV2Options) {
		if _, err := app.Append(0, lset, 0, ts, v, nil, nil, opts); err != nil {
			h.m.failedSamples.Inc()
			if firstErr == nil {
				firstErr = fmt.Errorf("append %s: %w", lset, err)
			}
			return
		}
		n++
	}
	for _, g := range groups {
		for _, f := range g.families {
			opts := storage.AppendV2Options{MetricFamilyName: f.name, Metadata: metadata.Metadata{Type: f.typ, Help: f.help}}
			for _, s := range f.series {
				add(s.lset, s.v, opts)
			}
		}
		add(ownSeries(g, pushTimeName), unixSeconds(g.pushed), storage.AppendV2Options{MetricFamilyName: pushTimeName,
			Metadata: metadata.Metadata{Type: model.MetricTypeGauge, Help: "Last Unix time when changing this group succeeded."}})
		add(ownSeries(g, pushFailureTimeName), unixSeconds(g.failed), storage.AppendV2Options{MetricFamilyName: pushFailureTimeName,
			Metadata: metadata.Metadata{Type: model.MetricTypeGauge, Help: "Last Unix time when changing this group failed."}})
	}
	for _, lset := range stale {
		add(lset, math.Float64frombits(value.StaleNaN), storage.AppendV2Options{})
	}
	if firstErr != nil && n == 0 {
		_ = app.Rollback()
		return firstErr
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	h.lastTS = ts
	h.m.samples.Add(float64(n))
	return nil
}

// Refresh appends the last values of every group at the clock's time, as
// a scrape of a Pushgateway would. Run calls it every Interval.
func (h *Handler) Refresh(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.groups) == 0 {
		return nil
	}
	groups := make([]*group, 0, len(h.groups))
	for _, g := range h.groups {
		groups = append(groups, g)
	}
	return h.appendGroups(ctx, h.ts(h.opts.Now()), groups, nil)
}

// Run calls Refresh every Interval until ctx is done; it returns nil then.
// A failed refresh is logged and counted, and the next one is tried.
func (h *Handler) Run(ctx context.Context) error {
	t := time.NewTicker(h.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := h.Refresh(ctx); err != nil && ctx.Err() == nil {
				h.opts.Logger.Warn("append the pushed groups again", "err", err)
			}
		}
	}
}

// oneLine joins the lines of a message.
func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

type metrics struct {
	requests      *prometheus.CounterVec
	groups        prometheus.Gauge
	samples       prometheus.Counter
	failedSamples prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_push_requests_total",
			Help: "Requests to the Pushgateway-compatible push endpoint by HTTP status code.",
		}, []string{"code"}),
		groups: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_push_groups",
			Help: "Pushed groups (grouping keys) held by the push endpoint.",
		}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_push_samples_total",
			Help: "Samples appended by the push endpoint, at pushes and at refreshes.",
		}),
		failedSamples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_push_failed_samples_total",
			Help: "Samples of the push endpoint that the store refused.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.groups, m.samples, m.failedSamples)
	}
	return m
}
