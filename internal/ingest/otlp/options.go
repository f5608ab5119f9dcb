package otlp

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/admission"
)

// TracesConsumer takes the spans of one export request.
//
// ConsumeTraces may keep td and modify it: the receiver does not use it
// after the call. It is called concurrently. An error wrapping ErrOverloaded
// asks the client to retry later; a PartialError says that part of td was
// refused for good; any other error fails the request (not retried).
type TracesConsumer interface {
	ConsumeTraces(ctx context.Context, td ptrace.Traces) error
}

// LogsConsumer takes the log records of one export request, with the same
// contract as TracesConsumer.
type LogsConsumer interface {
	ConsumeLogs(ctx context.Context, ld plog.Logs) error
}

// MetricsConsumer takes the metrics of one export request, with the same
// contract as TracesConsumer.
type MetricsConsumer interface {
	ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error
}

// Defaults of the limits in Options.
const (
	DefaultMaxRequestBytes      = 16 << 20
	DefaultMaxDecompressedBytes = 64 << 20
	DefaultMaxInFlight          = 64
	DefaultMaxAttributeDepth    = 16
)

// Options configure the receiver. Zero limits take their defaults.
type Options struct {
	// GRPC and HTTP are the listeners of OTLP/gRPC and OTLP/HTTP; nil turns
	// that transport off. The receiver owns them: Shutdown closes them.
	GRPC, HTTP net.Listener
	// Traces, Logs and Metrics take what the receiver accepts; a nil
	// consumer turns that signal off (HTTP 404, gRPC Unimplemented).
	Traces  TracesConsumer
	Logs    LogsConsumer
	Metrics MetricsConsumer
	// MaxRequestBytes bounds the body of an HTTP request as sent (413 over
	// it).
	MaxRequestBytes int64
	// MaxDecompressedBytes bounds an HTTP body after gzip decompression
	// (413 over it) and a gRPC message, compressed or not (gRPC's own
	// ResourceExhausted over it).
	MaxDecompressedBytes int64
	// MaxInFlight bounds the requests of both transports being decoded and
	// consumed at once; more get 429 / ResourceExhausted with a retry hint.
	MaxInFlight int
	// MaxAttributeDepth bounds how deeply arrays and maps nest in one
	// another in an attribute value or a log body: a scalar has depth 0, a
	// list of scalars 1. A request with a deeper value is refused (400).
	MaxAttributeDepth int
	// Budget bounds the bytes the requests in flight hold, shared with
	// the other ingest paths; nil: only MaxInFlight bounds them.
	Budget *admission.Budget
	// Gate shares the ingest slots between clients, with remote write
	// and push; a request waits for its client's share at most
	// admission.IngestWait, then gets 429 / ResourceExhausted. nil: no
	// gate.
	Gate *admission.FairGate
	// TLS, if set, serves both transports over TLS (see TLSConfig's
	// ServerConfig); nil serves them in clear text.
	TLS *tls.Config
	// Auth, if set, checks every request's credentials before anything of
	// it is read: missing or wrong ones get 401 / Unauthenticated. The
	// identity it finds is in the consumers' context (Identity).
	Auth *Authenticator
	// OnRequest, if set, is called with every request's headers (HTTP) or
	// metadata (gRPC), after authentication and before the body is read;
	// keys are lower-case on both transports. The context it returns is
	// the one the consumers get; an error refuses the request, with the
	// error's gRPC status code when it carries one (status.FromError),
	// else Unauthenticated (HTTP 401), and its message.
	OnRequest func(ctx context.Context, md map[string][]string) (context.Context, error)
	// Logger takes the receiver's logs; nil discards them.
	Logger *slog.Logger
	// Registerer takes the receiver's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// withDefaults returns o with its zero limits set to the defaults.
func (o Options) withDefaults() Options {
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxDecompressedBytes == 0 {
		o.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxAttributeDepth == 0 {
		o.MaxAttributeDepth = DefaultMaxAttributeDepth
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports the first invalid option, after defaults are applied.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.MaxRequestBytes < 0:
		return fmt.Errorf("max request bytes must not be negative, got %d", o.MaxRequestBytes)
	case o.MaxDecompressedBytes < 0:
		return fmt.Errorf("max decompressed bytes must not be negative, got %d", o.MaxDecompressedBytes)
	case o.MaxDecompressedBytes > maxMessageBytes:
		return fmt.Errorf("max decompressed bytes must be at most %d, got %d", maxMessageBytes, o.MaxDecompressedBytes)
	case o.MaxInFlight < 0:
		return fmt.Errorf("max in flight must not be negative, got %d", o.MaxInFlight)
	case o.MaxAttributeDepth < 0:
		return fmt.Errorf("max attribute depth must not be negative, got %d", o.MaxAttributeDepth)
	case o.MaxAttributeDepth > maxAttributeDepthLimit:
		return fmt.Errorf("max attribute depth must be at most %d, got %d", maxAttributeDepthLimit, o.MaxAttributeDepth)
	}
	return nil
}

const (
	// maxMessageBytes is the largest message the decoders are given
	// (gRPC takes an int).
	maxMessageBytes = 1 << 30
	// maxAttributeDepthLimit keeps the decoders' recursion shallow.
	maxAttributeDepthLimit = 256
)
