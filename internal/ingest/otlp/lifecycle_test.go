package otlp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return l
}

// TestOptionsValidate: negative limits and limits the decoders cannot
// take are refused with the option's name.
func TestOptionsValidate(t *testing.T) {
	f := func(o Options, want string) {
		t.Helper()
		_, err := New(o)
		require.ErrorContains(t, err, want)
	}
	f(Options{MaxRequestBytes: -1}, "max request bytes must not be negative")
	f(Options{MaxDecompressedBytes: 2 << 30}, "max decompressed bytes must be at most")
	f(Options{MaxInFlight: -1}, "max in flight must not be negative")
	f(Options{MaxAttributeDepth: 1000}, "max attribute depth must be at most 256")
	r, err := New(Options{})
	require.NoError(t, err, "no listener: only Handler is served")
	require.NoError(t, r.Shutdown(t.Context()))
}

// TestShutdownWithoutStart closes the listeners, and is idempotent.
func TestShutdownWithoutStart(t *testing.T) {
	gl, hl := listen(t), listen(t)
	r, err := New(Options{GRPC: gl, HTTP: hl, Traces: &sink{}})
	require.NoError(t, err)
	require.NoError(t, r.Shutdown(t.Context()))
	require.NoError(t, r.Shutdown(t.Context()))
	_, err = hl.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = gl.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorContains(t, r.Start(t.Context()), "already shut down")
}

// TestRun serves until its context is done, then frees the ports.
func TestRun(t *testing.T) {
	gl, hl := listen(t), listen(t)
	s := &sink{}
	r, err := New(Options{GRPC: gl, HTTP: hl, Traces: s})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	code, _, _ := post(t, "http://"+hl.Addr().String()+"/v1/traces", contentTypeProto, "", tracesProto(t, 1, 0))
	require.Equal(t, 200, code)
	require.ErrorContains(t, r.Start(t.Context()), "already started")
	cancel()
	require.NoError(t, <-done)
	l, err := net.Listen("tcp", hl.Addr().String())
	require.NoError(t, err, "the HTTP port is free again")
	require.NoError(t, l.Close())
	l, err = net.Listen("tcp", gl.Addr().String())
	require.NoError(t, err, "the gRPC port is free again")
	require.NoError(t, l.Close())
}

// TestRunShutdown: Run returns when Shutdown is called, as when the
// receiver is both run and shut down by an oklog/run group.
func TestRunShutdown(t *testing.T) {
	r, err := New(Options{HTTP: listen(t), Traces: &sink{}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Run(t.Context()) }()
	require.NoError(t, r.Shutdown(t.Context()))
	err = <-done
	if err != nil { // Shutdown came before Run's Start
		require.ErrorContains(t, err, "already shut down")
	}
}

// TestRunServeError: Run returns when a server fails, with the transport
// and address in the error.
func TestRunServeError(t *testing.T) {
	hl := listen(t)
	r, err := New(Options{HTTP: hl, Traces: &sink{}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Run(t.Context()) }()
	// A listener closed under the server, before or after Serve begins,
	// makes Serve fail.
	require.NoError(t, hl.Close())
	require.ErrorContains(t, <-done, "serve OTLP/http on "+hl.Addr().String())
}

// TestShutdownWaitsForRequests: a request in the consumer when Shutdown
// begins is answered.
func TestShutdownWaitsForRequests(t *testing.T) {
	b := blockingTraces{entered: make(chan struct{}), release: make(chan struct{})}
	gl := listen(t)
	r, err := New(Options{GRPC: gl, Traces: b})
	require.NoError(t, err)
	require.NoError(t, r.Start(t.Context()))
	conn := dial(t, gl.Addr().String())
	done := make(chan error, 1)
	go func() {
		_, err := ptraceotlp.NewGRPCClient(conn).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(newTraces(1, 0)))
		done <- err
	}()
	<-b.entered
	stopped := make(chan error, 1)
	go func() { stopped <- r.Shutdown(context.Background()) }()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", gl.Addr().String())
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, 10*time.Second, time.Millisecond, "Shutdown closes the listener first")
	close(b.release)
	require.NoError(t, <-done)
	require.NoError(t, <-stopped)
}

// TestSDKRetries: the SDK's exporters, told to come back later, come back
// and deliver.
func TestSDKRetries(t *testing.T) {
	exporters := map[string]func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error){
		"grpc": func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(tr.grpcAddr), otlptracegrpc.WithInsecure(),
				otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: 30 * time.Second}))
		},
		"http": func(ctx context.Context, tr *testReceiver) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(hostPort(tr.httpURL)), otlptracehttp.WithInsecure(),
				otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: 30 * time.Second}))
		},
	}
	for name, newExporter := range exporters {
		t.Run(name, func(t *testing.T) {
			s := &sink{fail: func(call int) error {
				if call == 1 {
					return ErrOverloaded
				}
				return nil
			}}
			tr := startReceiver(t, s, Options{})
			exp, err := newExporter(t.Context(), tr)
			require.NoError(t, err)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			_, span := tp.Tracer("checkout").Start(t.Context(), "GET /cart")
			span.End()
			require.NoError(t, tp.Shutdown(t.Context()))
			require.Len(t, s.spans(), 1)
			require.Equal(t, 2, s.calls)
			require.Equal(t, 1.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", name, "signal", "traces", "reason", reasonOverloaded))
		})
	}
}
