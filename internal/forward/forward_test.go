package forward

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/vigil-obs/vigil/internal/ingest/otlp"
)

// protocols are the endpoints of a backend to test against.
var protocols = []struct {
	name string
	url  func(*backend) string
	comp string
}{
	{"http", func(b *backend) string { return b.httpURL }, CompressionGzip},
	{"http-uncompressed", func(b *backend) string { return b.httpURL }, CompressionNone},
	{"grpc", func(b *backend) string { return b.grpcURL }, CompressionGzip},
	{"grpc-uncompressed", func(b *backend) string { return b.grpcURL }, CompressionNone},
}

func TestForwardArrivesIdentical(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			be := startBackend(t, &sink{})
			f := startForwarder(t, Config{Endpoint: p.url(be), Compression: p.comp}, nil)
			var sentT []ptrace.Traces
			var sentL []plog.Logs
			for i := range 12 {
				td, ld := genTraces(i, 10), genLogs(i, 7)
				sentT, sentL = append(sentT, td), append(sentL, ld)
				require.NoError(t, f.ConsumeTraces(t.Context(), td))
				require.NoError(t, f.ConsumeLogs(t.Context(), ld))
			}
			eventually(t, func() bool { s, l := be.sink.counts(); return s == 120 && l == 84 }, "all spans and logs arrive")
			gotT, gotL := be.sink.jsonBatches(t)
			require.Equal(t, tracesJSON(t, sentT...), gotT, "every span arrives identical")
			require.Equal(t, logsJSON(t, sentL...), gotL, "every log record arrives identical")
			require.NoError(t, f.stop())
			require.Equal(t, 120.0, metricValue(t, f.reg, "vigil_forward_sent_spans_total"))
			require.Equal(t, 84.0, metricValue(t, f.reg, "vigil_forward_sent_log_records_total"))
			require.Equal(t, 0.0, metricValue(t, f.reg, "vigil_forward_queue_length"))
		})
	}
}

func TestForwardedDataIsACopy(t *testing.T) {
	be := startBackend(t, &sink{})
	f := startForwarder(t, Config{Endpoint: be.httpURL}, nil)
	td := genTraces(1, 4)
	want := tracesJSON(t, td)
	require.NoError(t, f.ConsumeTraces(t.Context(), td))
	// The caller may change or reuse its data at once.
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetName("changed by the caller")
	td.ResourceSpans().RemoveIf(func(ptrace.ResourceSpans) bool { return true })
	eventually(t, func() bool { s, _ := be.sink.counts(); return s == 4 }, "spans arrive")
	got, _ := be.sink.jsonBatches(t)
	require.Equal(t, want, got)
}

func TestRetryAfter503(t *testing.T) {
	var calls atomic.Int32
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(zr)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got.Add(int64(req.Traces().SpanCount()))
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	f := startForwarder(t, Config{Endpoint: srv.URL}, nil)
	require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 6)))
	eventually(t, func() bool { return got.Load() == 6 }, "the batch arrives after two 503s")
	require.NoError(t, f.stop())
	require.Equal(t, int32(3), calls.Load())
	require.Equal(t, 2.0, metricValue(t, f.reg, "vigil_forward_retries_total", "signal", "traces"))
	require.Equal(t, 6.0, metricValue(t, f.reg, "vigil_forward_sent_spans_total"))
}

func TestRetryOverloadedReceiver(t *testing.T) {
	for _, p := range []int{0, 2} {
		p := protocols[p]
		t.Run(p.name, func(t *testing.T) {
			s := &sink{fail: func(call int) error {
				if call == 1 {
					return otlp.ErrOverloaded
				}
				return nil
			}}
			be := startBackend(t, s)
			f := startForwarder(t, Config{Endpoint: p.url(be)}, nil)
			require.NoError(t, f.ConsumeLogs(t.Context(), genLogs(1, 5)))
			eventually(t, func() bool { _, l := s.counts(); return l == 5 }, "the batch arrives after a 503 / Unavailable")
			require.NoError(t, f.stop())
			require.Equal(t, 1.0, metricValue(t, f.reg, "vigil_forward_retries_total", "signal", "logs"))
			require.Equal(t, 5.0, metricValue(t, f.reg, "vigil_forward_sent_log_records_total"))
		})
	}
}

func TestNoRetryOnPermanentErrors(t *testing.T) {
	t.Run("http-400", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			calls.Add(1)
			http.Error(w, "bad request", http.StatusBadRequest)
		}))
		defer srv.Close()
		f := startForwarder(t, Config{Endpoint: srv.URL}, nil)
		require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 6)))
		eventually(t, func() bool {
			return metricValue(t, f.reg, "vigil_forward_failed_total", "signal", "traces", "reason", "rejected") == 6
		}, "the refused batch is counted")
		require.NoError(t, f.stop())
		require.Equal(t, int32(1), calls.Load(), "no retry")
		require.Equal(t, 0.0, metricValue(t, f.reg, "vigil_forward_retries_total", "signal", "traces"))
	})
	for _, p := range []int{0, 2} {
		p := protocols[p]
		t.Run(p.name+"-consumer-error", func(t *testing.T) {
			s := &sink{fail: func(int) error { return io.ErrUnexpectedEOF }}
			be := startBackend(t, s)
			f := startForwarder(t, Config{Endpoint: p.url(be)}, nil)
			require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 4)))
			eventually(t, func() bool {
				return metricValue(t, f.reg, "vigil_forward_failed_total", "signal", "traces", "reason", "rejected") == 4
			}, "500 / Internal is not retried")
			require.NoError(t, f.stop())
			s.mu.Lock()
			defer s.mu.Unlock()
			require.Equal(t, 1, s.calls)
		})
	}
}

func TestPartialSuccess(t *testing.T) {
	for _, p := range []int{0, 2} {
		p := protocols[p]
		t.Run(p.name, func(t *testing.T) {
			s := &sink{fail: func(int) error { return otlp.PartialError{Rejected: 2, Msg: "2 spans are too old"} }}
			be := startBackend(t, s)
			f := startForwarder(t, Config{Endpoint: p.url(be)}, nil)
			require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 6)))
			eventually(t, func() bool {
				return metricValue(t, f.reg, "vigil_forward_failed_total", "signal", "traces", "reason", "partial") == 2
			}, "the refused part is counted")
			require.NoError(t, f.stop())
			require.Equal(t, 4.0, metricValue(t, f.reg, "vigil_forward_sent_spans_total"))
			require.Equal(t, 0.0, metricValue(t, f.reg, "vigil_forward_retries_total", "signal", "traces"))
		})
	}
}

// closedAddr returns a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestBackendDown(t *testing.T) {
	for _, scheme := range []string{"http", "grpc"} {
		t.Run(scheme, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			f, err := New(Config{Endpoint: scheme + "://" + closedAddr(t), QueueSize: 3}, nil, reg)
			require.NoError(t, err)
			f.initialBackoff, f.maxBackoff, f.maxElapsed = 5*time.Millisecond, 10*time.Millisecond, 200*time.Millisecond
			// Before Run nothing is sent: ten batches fill the queue of
			// three, the seven oldest are dropped.
			for i := range 10 {
				require.NoError(t, f.ConsumeLogs(t.Context(), genLogs(i, 5)))
			}
			require.Equal(t, 3.0, metricValue(t, reg, "vigil_forward_queue_length"))
			require.Equal(t, 35.0, metricValue(t, reg, "vigil_forward_dropped_total", "signal", "logs"))

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			eventually(t, func() bool {
				return metricValue(t, reg, "vigil_forward_failed_total", "signal", "logs", "reason", "retries_exhausted") == 15
			}, "the queued batches fail after their retries")
			require.Positive(t, metricValue(t, reg, "vigil_forward_retries_total", "signal", "logs"))
			require.Equal(t, 0.0, metricValue(t, reg, "vigil_forward_sent_log_records_total"))
			cancel()
			require.NoError(t, <-done)
		})
	}
}

func TestShutdownIsBounded(t *testing.T) {
	// A backend that never answers: Run's exports hang until the
	// shutdown wait ends them, and what is left is counted.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	f := startForwarder(t, Config{Endpoint: srv.URL, Timeout: 0}, func(f *Forwarder) {
		f.shutdownWait = 100 * time.Millisecond
	})
	for i := range 6 {
		require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(i, 2)))
	}
	eventually(t, func() bool { return metricValue(t, f.reg, "vigil_forward_queue_length") == 2 }, "four batches in flight")
	require.NoError(t, f.stop())
	require.Equal(t, 12.0, metricValue(t, f.reg, "vigil_forward_failed_total", "signal", "traces", "reason", "shutdown"),
		"in flight and queued batches are counted at shutdown")
	// After Run, batches are dropped, not queued.
	require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(9, 2)))
	require.Equal(t, 2.0, metricValue(t, f.reg, "vigil_forward_dropped_total", "signal", "traces"))
	require.Error(t, f.Run(t.Context()), "a Forwarder runs once")
}

func TestSignals(t *testing.T) {
	be := startBackend(t, &sink{})
	f := startForwarder(t, Config{Endpoint: be.httpURL, Signals: []string{SignalLogs}}, nil)
	require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 4)))
	require.NoError(t, f.ConsumeLogs(t.Context(), genLogs(1, 3)))
	require.NoError(t, f.ConsumeLogs(t.Context(), plog.NewLogs()))
	eventually(t, func() bool { _, l := be.sink.counts(); return l == 3 }, "logs arrive")
	require.NoError(t, f.stop())
	s, _ := be.sink.counts()
	require.Zero(t, s, "traces are not forwarded")
}

func TestCredentialsAndHeaders(t *testing.T) {
	type seen struct{ auth, org, token, ua string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Header.Get("Authorization"), r.Header.Get("X-Scope-OrgID"), r.Header.Get("X-Api-Token"), r.Header.Get("User-Agent")})
		n := len(got)
		mu.Unlock()
		if n == 1 {
			http.Error(w, "try again", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	var logs bytes.Buffer
	var logMu sync.Mutex
	endpoint := strings.Replace(srv.URL, "http://", "http://alice:s3cr3t-pw@", 1)
	f := startForwarder(t, Config{
		Endpoint: endpoint,
		Headers:  []string{"X-Scope-OrgID: tenant-1", "X-Api-Token:  tok-9f8e7d6c "},
	}, func(f *Forwarder) {
		f.logger = slog.New(slog.NewTextHandler(&lockedWriter{mu: &logMu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	require.NoError(t, f.ConsumeLogs(t.Context(), genLogs(1, 2)))
	eventually(t, func() bool { return metricValue(t, f.reg, "vigil_forward_sent_log_records_total") == 2 }, "sent after a 502")
	require.NoError(t, f.stop())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	for _, s := range got {
		require.Equal(t, "Basic YWxpY2U6czNjcjN0LXB3", s.auth, "user and password become basic auth")
		require.Equal(t, "tenant-1", s.org)
		require.Equal(t, "tok-9f8e7d6c", s.token)
		require.True(t, strings.HasPrefix(s.ua, "vigil/"), s.ua)
	}
	logMu.Lock()
	defer logMu.Unlock()
	out := logs.String()
	require.Contains(t, out, "forwarding failed, retrying", "the retry is logged")
	require.Contains(t, out, strings.TrimPrefix(srv.URL, "http://"), "the endpoint is logged")
	for _, secret := range []string{"s3cr3t-pw", "alice", "tok-9f8e7d6c", "tenant-1", "YWxpY2U6"} {
		require.NotContains(t, out, secret)
	}
	require.NotContains(t, out, "Xid", "no payload in the logs")
}

func TestDownBackendLogsNoSecrets(t *testing.T) {
	for _, scheme := range []string{"http", "grpc"} {
		t.Run(scheme, func(t *testing.T) {
			var logs bytes.Buffer
			var logMu sync.Mutex
			f := startForwarder(t, Config{
				Endpoint: scheme + "://bob:pa55-w0rd@" + closedAddr(t),
				Headers:  []string{"Authorization: Bearer tok-abcdef123456"},
			}, func(f *Forwarder) {
				f.logger = slog.New(slog.NewJSONHandler(&lockedWriter{mu: &logMu, w: &logs}, nil))
				f.maxElapsed = 50 * time.Millisecond
			})
			require.NoError(t, f.ConsumeTraces(t.Context(), genTraces(1, 2)))
			eventually(t, func() bool {
				return metricValue(t, f.reg, "vigil_forward_failed_total", "signal", "traces", "reason", "retries_exhausted") == 2
			}, "the batch fails")
			require.NoError(t, f.stop())
			logMu.Lock()
			defer logMu.Unlock()
			out := logs.String()
			require.Contains(t, out, "forwarding failed, batch dropped")
			for _, secret := range []string{"pa55-w0rd", "bob", "tok-abcdef123456"} {
				require.NotContains(t, out, secret)
			}
		})
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
