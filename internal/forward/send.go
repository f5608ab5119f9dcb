package forward

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// exporter sends one batch over one protocol.
type exporter interface {
	// export sends b once. A partial success returns the number of items
	// the backend refused and its message; a failure returns an
	// *exportError.
	export(ctx context.Context, b *batch) (rejected int64, msg string, err error)
	// close releases the connections.
	close() error
}

// exportError is a failed export.
type exportError struct {
	// retryable says whether the same request may succeed later.
	retryable bool
	// after is the server's retry hint (Retry-After, RetryInfo); 0: none.
	after time.Duration
	// status is what the server said, for logs: "HTTP 503", "gRPC
	// Unavailable", "connection error".
	status string
	// marshal is set when the data could not be encoded.
	marshal bool
	err     error
}

func (e *exportError) Error() string {
	if e.err == nil {
		return e.status
	}
	return e.status + ": " + e.err.Error()
}

func (e *exportError) Unwrap() error { return e.err }

// send exports b, retrying retryable failures with an exponential
// backoff (or the server's hint) for up to maxElapsed, and counts the
// outcome.
func (f *Forwarder) send(ctx context.Context, exp exporter, b *batch) {
	start := f.now()
	backoff := f.initialBackoff
	for {
		actx, cancel := context.WithTimeout(ctx, time.Duration(f.cfg.Timeout))
		rejected, msg, err := exp.export(actx, b)
		cancel()
		if err == nil {
			f.delivered(b, rejected, msg)
			return
		}
		ee := &exportError{status: "error", err: err}
		errors.As(err, &ee)
		switch {
		case ctx.Err() != nil:
			f.failed(b, reasonShutdown, ee)
			return
		case ee.marshal:
			f.failed(b, reasonMarshal, ee)
			return
		case !ee.retryable:
			f.failed(b, reasonRejected, ee)
			return
		}
		wait := jitter(backoff)
		if ee.after > 0 {
			wait = min(ee.after, maxRetryHint)
		}
		if f.now().Sub(start)+wait > f.maxElapsed {
			f.failed(b, reasonExhausted, ee)
			return
		}
		f.m.retries.WithLabelValues(b.signal).Inc()
		f.warn("retry-"+b.signal, "forwarding failed, retrying", "signal", b.signal, "status", ee.status,
			"err", errString(ee.err), "retry_in", wait.String())
		if !sleep(ctx, wait) {
			f.failed(b, reasonShutdown, ee)
			return
		}
		backoff = min(backoff*2, f.maxBackoff)
	}
}

// delivered counts a batch the backend took, all or part of it.
func (f *Forwarder) delivered(b *batch, rejected int64, msg string) {
	rejected = min(max(rejected, 0), int64(b.n))
	sent := float64(int64(b.n) - rejected)
	if b.signal == SignalTraces {
		f.m.sentSpans.Add(sent)
	} else {
		f.m.sentLogs.Add(sent)
	}
	if rejected > 0 || msg != "" {
		f.m.failed.WithLabelValues(b.signal, reasonPartial).Add(float64(rejected))
		f.warn("partial-"+b.signal, "OTLP backend refused part of a batch", "signal", b.signal,
			"rejected", rejected, "of", b.n, "msg", truncate(msg, 200))
	}
}

// failed counts a batch that was not delivered.
func (f *Forwarder) failed(b *batch, reason string, ee *exportError) {
	f.m.failed.WithLabelValues(b.signal, reason).Add(float64(b.n))
	f.warn("failed-"+reason+"-"+b.signal, "forwarding failed, batch dropped", "signal", b.signal, "items", b.n,
		"reason", reason, "status", ee.status, "err", errString(ee.err))
}

// jitter returns d ± 20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return truncate(err.Error(), 300)
}

// truncate cuts s to n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
