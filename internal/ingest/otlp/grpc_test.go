package otlp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const traceService = "opentelemetry.proto.collector.trace.v1.TraceService"

// retryDelay returns the delay of the RetryInfo detail of st, or -1.
func retryDelay(st *status.Status) float64 {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration().Seconds()
		}
	}
	return -1
}

// TestGRPCBadInput sends what a broken or hostile client might over gRPC,
// each time expecting the code and a reason, and then checks that the
// receiver still takes a good request on the same connection.
func TestGRPCBadInput(t *testing.T) {
	f := func(name string, body []byte, opts []grpc.CallOption, wantCode codes.Code, wantMsg string) {
		t.Run(name, func(t *testing.T) {
			s := &sink{}
			tr := startReceiver(t, s, Options{MaxDecompressedBytes: 64 << 20})
			conn := dial(t, tr.grpcAddr)
			out := &rawMessage{}
			err := conn.Invoke(t.Context(), "/"+traceService+"/Export", &rawMessage{b: body}, out, append(opts, grpc.ForceCodecV2(rawCodec{}))...)
			st, _ := status.FromError(err)
			require.Equal(t, wantCode, st.Code(), st.Message())
			require.Contains(t, st.Message(), wantMsg)
			require.Equal(t, -1.0, retryDelay(st), "bad input is not retried")
			require.Empty(t, s.spans())

			_, err = ptraceotlp.NewGRPCClient(conn).Export(t.Context(), ptraceotlp.NewExportRequestFromTraces(newTraces(2, 0)))
			require.NoError(t, err)
			require.Len(t, s.spans(), 2)
		})
	}
	gz := []grpc.CallOption{grpc.UseCompressor("gzip")}
	f("malformed protobuf", []byte("\x0a\xff\xff\xff\xff\x0f"), nil, codes.InvalidArgument, "decode OTLP protobuf")
	f("trace id of the wrong length", []byte("\x0a\x08\x12\x06\x12\x04\x0a\x02\xaa\xbb"), nil, codes.InvalidArgument, "decode OTLP protobuf")
	f("all trace ids empty", tracesProto(t, 2, 2), nil, codes.InvalidArgument, "all 2 spans have an empty trace id or span id")
	f("deeply nested", deepTracesProto(17), nil, codes.InvalidArgument, "arrays and maps nested more than 16 deep")
	f("two million levels, gzip", twoMillionLevels(), gz, codes.InvalidArgument, "arrays and maps nested more than 16 deep")
	f("too large", make([]byte, 65<<20), nil, codes.ResourceExhausted, "larger than max")
}

// TestGRPCPartialSuccess: spans without ids and a consumer's PartialError
// are counted in the response's partial_success.
func TestGRPCPartialSuccess(t *testing.T) {
	s := &sink{fail: func(int) error { return &PartialError{Rejected: 1, Msg: "1 span too old"} }}
	tr := startReceiver(t, s, Options{})
	resp, err := ptraceotlp.NewGRPCClient(dial(t, tr.grpcAddr)).Export(t.Context(), ptraceotlp.NewExportRequestFromTraces(newTraces(4, 2)))
	require.NoError(t, err)
	require.Equal(t, int64(3), resp.PartialSuccess().RejectedSpans())
	require.Equal(t, "1 span too old; 2 spans with an empty trace id or span id", resp.PartialSuccess().ErrorMessage())
	require.Equal(t, 1.0, counterValue(t, tr.reg, "vigil_otlp_received_spans_total", "transport", "grpc"))
}

// TestGRPCConsumerErrors: ErrOverloaded is Unavailable with RetryInfo,
// any other error Internal without.
func TestGRPCConsumerErrors(t *testing.T) {
	f := func(err error, wantCode codes.Code, wantDelay float64) {
		t.Run(err.Error(), func(t *testing.T) {
			tr := startReceiver(t, &sink{fail: func(int) error { return err }}, Options{})
			_, got := plogotlp.NewGRPCClient(dial(t, tr.grpcAddr)).Export(t.Context(), plogotlp.NewExportRequestFromLogs(newLogs(1)))
			st, _ := status.FromError(got)
			require.Equal(t, wantCode, st.Code())
			require.Contains(t, st.Message(), err.Error())
			require.Equal(t, wantDelay, retryDelay(st))
		})
	}
	f(fmt.Errorf("store logs: %w", ErrOverloaded), codes.Unavailable, 1)
	f(errors.New("disk full"), codes.Internal, -1)
}

// TestSignalOff: a signal without a consumer is Unimplemented over gRPC
// and 404 over HTTP.
func TestSignalOff(t *testing.T) {
	s := &sink{}
	tr := startReceiver(t, nil, Options{Traces: s})
	_, err := plogotlp.NewGRPCClient(dial(t, tr.grpcAddr)).Export(t.Context(), plogotlp.NewExportRequestFromLogs(newLogs(1)))
	require.Equal(t, codes.Unimplemented, status.Code(err))
	code, _, _ := post(t, tr.httpURL+"/v1/logs", contentTypeProto, "", logsProto(t, 1))
	require.Equal(t, 404, code)
	code, _, _ = post(t, tr.httpURL+"/v1/metrics", contentTypeProto, "", metricsProto(t, 1))
	require.Equal(t, 404, code)
}

// TestTooManyRequests: with MaxInFlight requests in the consumer, the next
// one, over either transport, is told to come back later (429 with
// Retry-After, ResourceExhausted with RetryInfo), and once the consumer
// is free again requests go in.
func TestTooManyRequests(t *testing.T) {
	b := blockingTraces{entered: make(chan struct{}), release: make(chan struct{})}
	tr := startReceiver(t, nil, Options{Traces: b, Logs: &sink{}, MaxInFlight: 1})
	done := make(chan error, 1)
	go func() {
		_, err := ptraceotlp.NewGRPCClient(dial(t, tr.grpcAddr)).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(newTraces(1, 0)))
		done <- err
	}()
	<-b.entered

	code, h, resp := post(t, tr.httpURL+"/v1/logs", contentTypeProto, "", logsProto(t, 1))
	require.Equal(t, 429, code)
	require.Equal(t, "1", h.Get("Retry-After"))
	require.Contains(t, statusMessage(t, contentTypeProto, resp), "too many requests: 1 already in flight")
	_, err := plogotlp.NewGRPCClient(dial(t, tr.grpcAddr)).Export(t.Context(), plogotlp.NewExportRequestFromLogs(newLogs(1)))
	st, _ := status.FromError(err)
	require.Equal(t, codes.ResourceExhausted, st.Code())
	require.Equal(t, 1.0, retryDelay(st))

	close(b.release)
	require.NoError(t, <-done)
	code, _, _ = post(t, tr.httpURL+"/v1/logs", contentTypeProto, "", logsProto(t, 1))
	require.Equal(t, 200, code)
	require.Equal(t, 1.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "grpc", "signal", "logs", "reason", reasonTooManyRequests))
	require.Equal(t, 1.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "http", "signal", "logs", "reason", reasonTooManyRequests))
}

// blockingTraces holds the first request in the consumer until release.
type blockingTraces struct{ entered, release chan struct{} }

func (b blockingTraces) ConsumeTraces(context.Context, ptrace.Traces) error {
	close(b.entered)
	<-b.release
	return nil
}
