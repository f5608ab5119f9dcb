package forward

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// workers is how many batches are exported at once.
const workers = 4

// Retry and shutdown timings; tests shorten them.
const (
	defaultInitialBackoff = time.Second
	defaultMaxBackoff     = 30 * time.Second
	defaultMaxElapsed     = 5 * time.Minute
	// maxRetryHint caps a server's Retry-After or RetryInfo.
	maxRetryHint = 5 * time.Minute
	// defaultShutdownWait bounds how long Run sends what is queued after
	// its context ends.
	defaultShutdownWait = 5 * time.Second
)

// Failure reasons of vigil_forward_failed_total.
const (
	reasonRejected  = "rejected"          // the backend refused the data for good
	reasonExhausted = "retries_exhausted" // retryable failures past the retry time
	reasonPartial   = "partial"           // items a partial success refused
	reasonShutdown  = "shutdown"          // still queued or in flight when Run ended
	reasonMarshal   = "marshal"           // the data could not be encoded
)

// Forwarder sends copies of the traces and logs it is given to an OTLP
// backend. ConsumeTraces and ConsumeLogs are safe for concurrent use and
// never block on the backend; Run does the sending.
type Forwarder struct {
	cfg    Config
	ep     *endpoint
	logger *slog.Logger
	m      *metrics
	q      *queue
	limit  *logLimiter

	traces, logs bool
	headers      [][2]string
	// tls is the client TLS configuration of tls_config (nil: the
	// system's CAs).
	tls *tls.Config
	now func() time.Time

	// Timings, shortened by tests.
	initialBackoff, maxBackoff, maxElapsed, shutdownWait time.Duration

	running atomic.Bool
}

// New returns a Forwarder for cfg, which must be valid and have an
// endpoint. logger and reg may be nil. Nothing is sent until Run.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Forwarder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("forwarding: %w", err)
	}
	if !cfg.Enabled() {
		return nil, errors.New("forwarding: no endpoint")
	}
	cfg = cfg.withDefaults()
	ep, err := parseEndpoint(cfg.Endpoint, cfg.Protocol)
	if err != nil {
		return nil, fmt.Errorf("forwarding: endpoint %s: %w", redactURL(cfg.Endpoint), err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Forwarder{
		cfg: cfg, ep: ep, logger: logger.With("component", "forward"),
		q: newQueue(cfg.QueueSize), limit: newLogLimiter(30 * time.Second), now: time.Now,
		initialBackoff: defaultInitialBackoff, maxBackoff: defaultMaxBackoff,
		maxElapsed: defaultMaxElapsed, shutdownWait: defaultShutdownWait,
	}
	for _, h := range cfg.Headers {
		name, value, _ := parseHeader(h)
		f.headers = append(f.headers, [2]string{name, value})
	}
	for _, s := range cfg.Signals {
		f.traces = f.traces || s == SignalTraces
		f.logs = f.logs || s == SignalLogs
	}
	if cfg.TLS.set() {
		// The CA is read now, so that a missing file stops the start.
		if f.tls, err = commoncfg.NewTLSConfig(&cfg.TLS.TLSConfig); err != nil {
			return nil, fmt.Errorf("tls_config: %w", err)
		}
	}
	if f.m, err = newMetrics(reg, f.q); err != nil {
		return nil, err
	}
	return f, nil
}

// ConsumeTraces queues a copy of td, when traces are forwarded. It never
// blocks and never fails: when the queue is full the oldest batch is
// dropped (and counted), and after Run has ended td is dropped.
func (f *Forwarder) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	if !f.traces {
		return nil
	}
	n := td.SpanCount()
	if n == 0 {
		return nil
	}
	cp := ptrace.NewTraces()
	td.CopyTo(cp)
	f.enqueue(&batch{signal: SignalTraces, traces: cp, n: n})
	return nil
}

// ConsumeLogs queues a copy of ld, when logs are forwarded, as
// ConsumeTraces does.
func (f *Forwarder) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	if !f.logs {
		return nil
	}
	n := ld.LogRecordCount()
	if n == 0 {
		return nil
	}
	cp := plog.NewLogs()
	ld.CopyTo(cp)
	f.enqueue(&batch{signal: SignalLogs, logs: cp, n: n})
	return nil
}

func (f *Forwarder) enqueue(b *batch) {
	f.q.push(b, func(old *batch) {
		f.m.dropped.WithLabelValues(old.signal).Add(float64(old.n))
		f.warn("queue-full", "forwarding queue full: oldest batch dropped", "signal", old.signal, "items", old.n)
	})
}

// Run sends the queued batches until ctx ends, then for at most 5 s more
// what is still queued, and returns; what is left then is counted as
// failed (reason "shutdown"). A Forwarder runs once.
func (f *Forwarder) Run(ctx context.Context) error {
	if !f.running.CompareAndSwap(false, true) {
		return errors.New("forwarding: Run called twice")
	}
	exp, err := f.newExporter()
	if err != nil {
		f.q.close()
		f.discard()
		return fmt.Errorf("forwarding to %s: %w", redactURL(f.cfg.Endpoint), err)
	}
	f.logger.Info("forwarding traces and logs", "endpoint", redactURL(f.cfg.Endpoint), "protocol", f.ep.protocol,
		"signals", strings.Join(f.cfg.Signals, ","))
	// Exports outlive ctx by the shutdown wait; sendCtx ends them then.
	sendCtx, cancelSend := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSend()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				b, ok := f.q.pop(sendCtx)
				if !ok {
					return
				}
				f.send(sendCtx, exp, b)
			}
		})
	}
	<-ctx.Done()
	start := f.now()
	f.q.close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	timer := time.NewTimer(f.shutdownWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		cancelSend()
		<-done
	}
	left := f.discard()
	err = exp.close()
	f.logger.Info("forwarder stopped", "took", f.now().Sub(start).String(), "batches_left", left)
	if err != nil {
		return fmt.Errorf("close forwarding connection: %w", err)
	}
	return nil
}

// discard counts what is still queued as failed and returns the number
// of batches.
func (f *Forwarder) discard() int {
	n := 0
	for b := range f.q.rest() {
		f.m.failed.WithLabelValues(b.signal, reasonShutdown).Add(float64(b.n))
		n++
	}
	return n
}

// newExporter returns the exporter of the endpoint's protocol.
func (f *Forwarder) newExporter() (exporter, error) {
	tc, auth := f.tls, f.cfg.Authorization.header
	if f.ep.protocol == ProtocolGRPC {
		return newGRPCExporter(f.ep, f.headers, f.cfg.Compression == CompressionGzip, tc, auth)
	}
	return newHTTPExporter(f.ep, f.headers, f.cfg.Compression == CompressionGzip, time.Duration(f.cfg.Timeout), tc, auth), nil
}

// warn logs at most once per interval per key, saying how many messages
// were held back since.
func (f *Forwarder) warn(key, msg string, args ...any) {
	ok, held := f.limit.allow(key, f.now())
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "similar_messages_held_back", held)
	}
	f.logger.Warn(msg, args...)
}

// logLimiter lets one message per key through per interval.
type logLimiter struct {
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
	held     map[string]int
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval, last: map[string]time.Time{}, held: map[string]int{}}
}

// allow reports whether a message of key may be logged now, and how many
// were held back since the last one.
func (l *logLimiter) allow(key string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[key]; ok && now.Sub(last) < l.interval {
		l.held[key]++
		return false, 0
	}
	held := l.held[key]
	l.last[key], l.held[key] = now, 0
	return true, held
}
