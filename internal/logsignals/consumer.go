package logsignals

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Metric and label names.
const (
	// MetricEvents counts log records by event and entity.
	MetricEvents = "vigil_log_events_total"
	// MetricXID counts XID lines by node, XID code and PCI address.
	MetricXID = "vigil_log_xid_total"
	// MetricTemplates counts records by entity, level and template.
	MetricTemplates = "vigil_log_templates_total"
	// OverflowLabel marks the overflow series (value "true"), as the
	// OpenTelemetry Collector's connectors do.
	OverflowLabel = "otel_metric_overflow"
)

var (
	metaEvents = metadata.Metadata{Type: model.MetricTypeCounter, Help: "Log records that show an event (NCCL timeout or error, CUDA error or OOM, OOM kill, XID, HTTP 5xx, GPU fallen off the bus), by entity."}
	metaXID    = metadata.Metadata{Type: model.MetricTypeCounter, Help: "NVIDIA XID lines in kernel logs, by node, XID code and PCI address of the GPU."}
	metaTmpl   = metadata.Metadata{Type: model.MetricTypeCounter, Help: "Log records by entity, level and template (Drain)."}
)

// maxZeroGap bounds how far before a new series' first count its leading
// zero is written: within Prometheus's lookback, so that increase() over
// a window of a few minutes sees both.
const maxZeroGap = 5 * time.Minute

// Consumer turns log records into the counters vigil_log_events_total and
// vigil_log_xid_total in a metric store. It is a LogsConsumer of the OTLP
// receiver; all methods are safe for concurrent use.
type Consumer struct {
	cfg    Config
	app    storage.AppendableV2
	now    func() time.Time
	logger *slog.Logger
	m      *selfMetrics

	// mu guards what follows, and serialises writes so that each
	// series' samples go in in order.
	mu     sync.Mutex
	series map[string]*series
	// bounded is the number of event series that count towards
	// MaxSeries (all but the overflow series), boundedT the template
	// series' towards Templates.MaxSeries.
	bounded, boundedT int
	keyBuf            []byte
	// startMs is the clock's time at New; lastMs is the timestamp of the
	// last write (0: none yet).
	startMs, lastMs int64
	// miners mine each service's templates; statements holds the label
	// of each log statement whose records say where they were written,
	// located how many each service has (templates.go).
	miners     map[entity]*miner
	statements map[statementKey]string
	located    map[entity]int
	// spans is each recent span's last mined record (successions.go),
	// names the name of each recent span received, lookup those of spans
	// received elsewhere (spanfirst.go).
	spans  recent[lastRecord]
	names  recent[string]
	lookup SpanNames
}

// series is one counter's running total.
type series struct {
	lbls  labels.Labels
	meta  *metadata.Metadata
	name  string
	v     float64
	dirty bool
	// written is set once a sample of the series is in the store.
	written bool
}

// New returns a Consumer that writes into app. cfg must be valid; now is
// the clock (nil: time.Now); logger and reg may be nil.
func New(cfg Config, app storage.AppendableV2, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("logsignals: %w", err)
	}
	if app == nil {
		return nil, errors.New("logsignals: no metric store to write into")
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
	return &Consumer{
		cfg: cfg, app: app, now: now, logger: logger.With("component", "logsignals"), m: m,
		series: map[string]*series{}, startMs: now().UnixMilli(), miners: map[entity]*miner{}, statements: map[statementKey]string{}, located: map[entity]int{},
	}, nil
}

// entity is where a record comes from, from its resource attributes.
type entity struct{ node, namespace, pod, service string }

func entityOf(res pcommon.Map) entity {
	get := func(k string) string {
		if v, ok := res.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	e := entity{node: get("k8s.node.name"), namespace: get("k8s.namespace.name"), pod: get("k8s.pod.name"), service: get("service.name")}
	if e.node == "" {
		e.node = get("host.name")
	}
	return e
}

// hit is a record that matched, or one to mine (msg set).
type hit struct {
	ent *entity
	m   Match
	sev Severity
	msg string
	// loc is the record's source location from its attributes.
	loc string
	// span is the record's span (inSpan: it names one), t its time.
	span   spanKey
	inSpan bool
	t      int64
}

// ConsumeLogs counts the events of ld's records and appends every series
// it changed, once, at the batch's newest record time (never later than
// the clock, never earlier than the previous write). ld is not modified.
// It never fails the caller: matching cannot fail, and a failed write is
// logged and counted, its totals kept and written with the next batch, so
// that a client's retry does not count the records twice.
func (c *Consumer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	var hits []hit
	var records int
	var newest int64
	minSev := c.cfg.Templates.minSeverity()
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		var ent *entity
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			records += lrs.Len()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				m := MatchRecord(lr)
				var sev Severity
				var msg string
				if c.cfg.Templates.Enabled {
					if sev, msg = severityOf(lr, minSev); sev < minSev || msg == "" {
						sev, msg = SeverityUnknown, ""
					}
				}
				if m.Events.Empty() && msg == "" {
					continue
				}
				if ent == nil {
					e := entityOf(rl.Resource().Attributes())
					ent = &e
				}
				h := hit{ent: ent, m: m, sev: sev, msg: msg, t: recordTime(lr)}
				if msg != "" {
					h.loc = codeLocation(lr.Attributes())
					if c.cfg.Templates.Successions {
						h.span, h.inSpan = spanOf(lr.TraceID(), lr.SpanID())
					}
				}
				hits = append(hits, h)
				newest = max(newest, h.t)
			}
		}
	}
	c.m.records.Add(float64(records))
	if len(hits) == 0 {
		return nil
	}
	c.m.matched.Add(float64(matched(hits)))
	c.mu.Lock()
	defer c.mu.Unlock()
	var spans []mined
	for _, h := range hits {
		c.count(h)
		if h.msg == "" {
			continue
		}
		tmpl, sev := c.countTemplate(h)
		if h.inSpan && tmpl != "" {
			spans = append(spans, mined{ent: h.ent, span: h.span, t: h.t, tmpl: tmpl, sev: sev})
		}
	}
	c.countSuccessions(spans)
	c.m.series.Set(float64(len(c.series)))
	c.write(ctx, newest)
	return nil
}

// recordTime is a record's time in milliseconds: its timestamp, else when
// it was observed, else 0.
func recordTime(lr plog.LogRecord) int64 {
	if ts := lr.Timestamp(); ts != 0 {
		return ts.AsTime().UnixMilli()
	}
	if ts := lr.ObservedTimestamp(); ts != 0 {
		return ts.AsTime().UnixMilli()
	}
	return 0
}

// count adds one hit to its series. The caller holds c.mu.
func (c *Consumer) count(h hit) {
	for e := range numEvents {
		if !h.m.Events.Has(e) {
			continue
		}
		name := e.String()
		c.keyBuf = appendKey(c.keyBuf[:0], "e", name, h.ent.node, h.ent.namespace, h.ent.pod, h.ent.service)
		c.add(c.keyBuf, "E"+name, func() labels.Labels {
			return build(MetricEvents, "event", name, "namespace", h.ent.namespace, "node", h.ent.node,
				"pod", h.ent.pod, "service", h.ent.service)
		}, func() labels.Labels {
			return build(MetricEvents, "event", name, OverflowLabel, "true")
		}, &metaEvents, MetricEvents, &c.bounded, c.cfg.MaxSeries)
	}
	if h.m.Events.Has(EventXID) {
		code := strconv.Itoa(h.m.XID)
		c.keyBuf = appendKey(c.keyBuf[:0], "x", h.ent.node, code, h.m.PCI)
		c.add(c.keyBuf, "X", func() labels.Labels {
			return build(MetricXID, "node", h.ent.node, "pci", h.m.PCI, "xid", code)
		}, func() labels.Labels {
			return build(MetricXID, OverflowLabel, "true")
		}, &metaXID, MetricXID, &c.bounded, c.cfg.MaxSeries)
	}
}

// appendKey appends a series key: the family ("e" or "x"), then each
// value prefixed with its length, so that no two label sets share a key.
// Overflow keys start with "E" or "X" and cannot collide with them.
func appendKey(b []byte, family string, values ...string) []byte {
	b = append(b, family...)
	for _, v := range values {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// add counts one in the series of key, created with lbls, or in the
// overflow series when bounded has reached limit.
func (c *Consumer) add(key []byte, overflowKey string, lbls, overflow func() labels.Labels, meta *metadata.Metadata, name string, bounded *int, limit int) {
	s, ok := c.series[string(key)]
	if !ok {
		if *bounded >= limit {
			c.m.overflow.Inc()
			key, lbls = []byte(overflowKey), overflow
			s, ok = c.series[overflowKey]
		} else {
			*bounded++
		}
		if !ok {
			s = &series{lbls: lbls(), meta: meta, name: name}
			c.series[string(key)] = s
		}
	}
	s.v++
	s.dirty = true
}

// build returns the labels of a series: __name__ and the pairs whose
// value is not empty.
func build(name string, pairs ...string) labels.Labels {
	b := labels.NewScratchBuilder(len(pairs)/2 + 1)
	b.Add(model.MetricNameLabel, name)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			b.Add(pairs[i], pairs[i+1])
		}
	}
	b.Sort()
	return b.Labels()
}

// write appends the changed series at the batch's time and commits. The
// caller holds c.mu.
func (c *Consumer) write(ctx context.Context, newest int64) {
	now := c.now().UnixMilli()
	t := now
	if newest > 0 && newest < now {
		t = newest
	}
	t = max(t, c.lastMs+1)
	zero := c.lastMs
	if zero <= 0 {
		zero = c.startMs
	}
	zero = max(zero, t-maxZeroGap.Milliseconds())
	if zero >= t {
		zero = t - 1
	}
	app := c.app.AppenderV2(ctx)
	var done []*series
	rejected := 0
	for _, s := range c.series {
		if !s.dirty {
			continue
		}
		opts := storage.AOptions{MetricFamilyName: s.name, Metadata: *s.meta}
		if !s.written {
			// A leading zero, so that increase() and rate() see the
			// series' first event.
			if err := appendOne(app, s.lbls, zero, 0, opts, &rejected); err != nil {
				c.failed(err, app.Rollback())
				return
			}
		}
		if err := appendOne(app, s.lbls, t, s.v, opts, &rejected); err != nil {
			c.failed(err, app.Rollback())
			return
		}
		done = append(done, s)
	}
	if err := app.Commit(); err != nil {
		c.failed(fmt.Errorf("commit: %w", err), nil)
		return
	}
	if rejected > 0 {
		c.m.rejected.Add(float64(rejected))
		c.logger.Debug("samples refused by the store", "count", rejected)
	}
	for _, s := range done {
		s.dirty, s.written = false, true
	}
	c.lastMs = t
	c.m.writes.WithLabelValues("ok").Inc()
}

// appendOne appends one sample; a sample the store refuses for good is
// counted in rejected, not returned.
func appendOne(app storage.AppenderV2, lbls labels.Labels, t int64, v float64, opts storage.AOptions, rejected *int) error {
	_, err := app.Append(0, lbls, 0, t, v, nil, nil, opts)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrOutOfBounds),
		errors.Is(err, storage.ErrDuplicateSampleForTimestamp), errors.Is(err, storage.ErrTooOldSample):
		*rejected++
		return nil
	}
	return fmt.Errorf("append %s: %w", lbls, err)
}

// failed records a failed write; the totals stay dirty for the next one.
func (c *Consumer) failed(err, rollbackErr error) {
	c.m.writes.WithLabelValues("error").Inc()
	c.logger.Warn("write log-derived counters", "err", errors.Join(err, rollbackErr))
}
