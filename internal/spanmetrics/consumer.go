package spanmetrics

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Consumer derives span metrics and the service graph from the spans it is
// given and writes them into a metric store. It is a TracesConsumer of the
// OTLP receiver; all methods are safe for concurrent use.
type Consumer struct {
	cfg    Config
	app    storage.AppendableV2
	now    func() time.Time
	logger *slog.Logger
	m      *selfMetrics

	// mu guards what follows.
	mu       sync.Mutex
	spans    map[string]*spanSeries
	edges    map[edgeID]*edgeSeries
	pending  map[edgeKey]*pendingEdge
	expiries []expiry
	// longExpiries are the pending entries' second waits (treeWait), in
	// order: each is an entry's first expiry plus treeWait.
	longExpiries []expiry
	// seen indexes the recent spans for the span tree (graph.go); seenExp
	// is its expiry queue, oldest first.
	seen    map[edgeKey]seenSpan
	seenExp []expiry
	// selfPend are the spans waiting for their children before their
	// self time is taken, and children waiting for their parent
	// (selftime.go); selfExp and selfLongExp are their expiry queues, the
	// spans' (EdgeWait) and the children's (EdgeWait and treeWait).
	selfPend    map[edgeKey]*selfEntry
	selfExp     []expiry
	selfLongExp []expiry
	kidBuf      []selfChild
	keyBuf      []byte
	// lastFlush is the clock's time at the last flush.
	lastFlush time.Time
	// dirty says a total changed since the last flush.
	dirty bool

	// flushMu serialises flushes, so each series' samples go in in order.
	flushMu sync.Mutex
	// lastFlushMs is the timestamp of the last flush's samples.
	lastFlushMs int64
}

// New returns a Consumer that writes into app. cfg must be valid (see
// Config.Validate); now is the clock (nil: time.Now); logger and reg may be
// nil.
func New(cfg Config, app storage.AppendableV2, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if app == nil {
		return nil, fmt.Errorf("spanmetrics: no metric store to write into")
	}
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newSelfMetrics(reg)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg: cfg, app: app, now: now, logger: logger.With("component", "spanmetrics"), m: m,
		spans:    map[string]*spanSeries{},
		edges:    map[edgeID]*edgeSeries{},
		pending:  map[edgeKey]*pendingEdge{},
		seen:     map[edgeKey]seenSpan{},
		selfPend: map[edgeKey]*selfEntry{},
	}
	c.lastFlush = now()
	return c, nil
}

// ConsumeTraces adds the spans of td to the running totals and, when
// FlushInterval has passed on the clock since the last flush (or is 0),
// writes them. td is not modified. It fails only when the write fails;
// the spans are counted all the same and the next flush writes them.
func (c *Consumer) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	now := c.now()
	failed := failedSiblings(td)
	c.mu.Lock()
	n := 0
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		service := serviceOf(res)
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				s := c.observeSpan(sp, service, res, isRetry(sp, service, failed), now)
				c.observeSelf(sp, service, s, now)
				c.observeGraphSpan(sp, service, res, now)
				n++
			}
		}
	}
	c.expireEdges(now)
	due := now.Sub(c.lastFlush) >= time.Duration(c.cfg.FlushInterval)
	if due {
		c.lastFlush = now // this call flushes; concurrent ones need not
	}
	c.mu.Unlock()
	c.m.spans.Add(float64(n))
	if !due {
		return nil
	}
	return c.Flush(ctx)
}

// observeSpan adds one span to its span-metric series and returns it.
func (c *Consumer) observeSpan(sp ptrace.Span, service string, res pcommon.Map, retry bool, now time.Time) *spanSeries {
	attrs := sp.Attributes()
	si := spanInfo{
		service: service, name: sp.Name(), kind: sp.Kind(), status: sp.Status().Code(),
		model:    attrStr(attrs, res, attrModel),
		provider: attrStr(attrs, res, attrProvider),
		errType:  attrStr(attrs, res, attrErrType),
		tenant:   attrStr(attrs, res, c.cfg.TenantAttribute),
		seconds:  spanSeconds(sp),
		endMs:    sp.EndTimestamp().AsTime().UnixMilli(),
		retry:    retry,
		traceID:  sp.TraceID(),
		spanID:   sp.SpanID(),
	}
	si.timeout = isTimeout(si.errType, attrs)
	c.keyBuf = appendKey(c.keyBuf[:0], &si)
	s, ok := c.spans[string(c.keyBuf)]
	if !ok {
		s = c.newSpanSeries(&si, now)
	}
	s.calls++
	c.dirty = true
	if si.timeout {
		s.timeouts++
	}
	if si.retry {
		s.retries++
	}
	s.dur.observe(c.cfg.Buckets, si.seconds, si.traceID, si.spanID, si.endMs)
	if !si.traceID.IsEmpty() {
		s.callsEx.offer(si.traceID, si.spanID, si.endMs, 1)
	}
	return s
}

// newSpanSeries creates the series of si, or returns the overflow series
// when MaxSeries are held.
func (c *Consumer) newSpanSeries(si *spanInfo, now time.Time) *spanSeries {
	key := string(c.keyBuf)
	lbls := seriesLabels(si)
	if len(c.spans) >= c.cfg.MaxSeries {
		c.m.spanOverflow.Inc()
		key = overflowKey
		if s, ok := c.spans[key]; ok {
			return s
		}
		lbls = overflowLabels
	}
	s := &spanSeries{lbls: lbls, dur: newHist(c.cfg.Buckets), startMs: now.UnixMilli()}
	c.spans[key] = s
	return s
}

// Run flushes every FlushInterval of wall time until ctx ends, then once
// more. With a FlushInterval of 0 it only flushes at the end.
func (c *Consumer) Run(ctx context.Context) error {
	var tick <-chan time.Time
	if d := time.Duration(c.cfg.FlushInterval); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return c.Flush(context.WithoutCancel(ctx))
		case <-tick:
			if err := c.Flush(ctx); err != nil {
				c.logger.Warn("write span metrics", "err", err)
			}
		}
	}
}

// Settle ends the wait of every pending half, and of every span waiting
// for its children, as if EdgeWait and treeWait had passed on the clock,
// then flushes: for the end of a file of spans, after which no other half
// can come.
func (c *Consumer) Settle(ctx context.Context) error {
	c.mu.Lock()
	c.expireEdges(c.now().Add(time.Duration(c.cfg.EdgeWait) + treeWait))
	dirty := c.dirty
	c.mu.Unlock()
	if !dirty {
		return nil
	}
	return c.Flush(ctx)
}

// SeriesCount reports how many span-metric series, service-graph edges and
// pending halves of requests are held.
func (c *Consumer) SeriesCount() (spans, edges, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.spans), len(c.edges), len(c.pending)
}
