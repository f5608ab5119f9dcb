package otlp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// benchBatches returns n export requests of size spans each, shaped like
// the spans of an inference gateway: 8 attributes and an event per span.
func benchBatches(n, size int) []ptraceotlp.ExportRequest {
	out := make([]ptraceotlp.ExportRequest, n)
	for b := range out {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		res := rs.Resource().Attributes()
		res.PutStr("service.name", "vllm")
		res.PutStr("k8s.namespace.name", "inference")
		res.PutStr("k8s.pod.name", fmt.Sprintf("vllm-%d", b))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := range size {
			sp := spans.AppendEmpty()
			tid := traceID
			tid[0], tid[1], tid[2] = byte(b), byte(i), byte(i>>8)
			sp.SetTraceID(tid)
			sid := spanID
			sid[0], sid[1] = byte(i), byte(i>>8)
			sp.SetSpanID(sid)
			sp.SetName("chat completion")
			sp.SetKind(ptrace.SpanKindServer)
			start := time.Unix(1_700_000_000, int64(i)*1000)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(1200 * time.Millisecond)))
			a := sp.Attributes()
			a.PutStr("gen_ai.request.model", "llama-3-70b")
			a.PutStr("gen_ai.provider.name", "vllm")
			a.PutInt("gen_ai.usage.input_tokens", int64(100+i%900))
			a.PutInt("gen_ai.usage.output_tokens", int64(50+i%400))
			a.PutStr("http.route", "/v1/chat/completions")
			a.PutInt("http.response.status_code", 200)
			a.PutStr("tenant", fmt.Sprintf("tenant-%d", i%20))
			a.PutDouble("gen_ai.server.time_to_first_token", 0.08)
			ev := sp.Events().AppendEmpty()
			ev.SetName("first token")
			ev.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(80 * time.Millisecond)))
		}
		out[b] = ptraceotlp.NewExportRequestFromTraces(td)
	}
	return out
}

// noopTracesServer is pdata's stock gRPC server interface answering every
// request: what the OpenTelemetry Collector registers, without the
// receiver's checks and limits.
type noopTracesServer struct {
	ptraceotlp.UnimplementedGRPCServer
}

func (*noopTracesServer) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	_ = req.Traces().SpanCount()
	return ptraceotlp.NewExportResponse(), nil
}

// BenchmarkReceiverGRPC sends prepared batches of 1,000 spans through a
// real gRPC client (pdata's) from 4 senders, and reports spans/s, for:
// the receiver with a consumer that does nothing ("receiver"); pdata's
// stock gRPC registration, as the OpenTelemetry Collector serves OTLP,
// with nothing consuming ("pdata-server": the receiver's checks, limits
// and metrics cost the difference); the receiver's nesting check alone
// ("nesting-scan-only"); and decoding the same bytes alone, without gRPC
// ("decode-only": the floor of any receiver on pdata).
//
//	go test ./internal/ingest/otlp -run '^$' -bench ReceiverGRPC -benchtime 20x
func BenchmarkReceiverGRPC(b *testing.B) {
	const (
		batches = 32
		size    = 1000
		senders = 4
	)
	reqs := benchBatches(batches, size)
	bodies := make([][]byte, len(reqs))
	for i, r := range reqs {
		var err error
		bodies[i], err = r.MarshalProto()
		require.NoError(b, err)
	}
	b.Logf("request size %d bytes (%d spans)", len(bodies[0]), size)
	send := func(b *testing.B, client ptraceotlp.GRPCClient) {
		parallel(b, batches, senders, func(i int) {
			_, err := client.Export(context.Background(), reqs[i])
			if err != nil {
				b.Error(err)
			}
		})
	}
	b.Run("receiver", func(b *testing.B) {
		tr := startReceiver(b, nil, Options{Traces: &discard{}})
		send(b, ptraceotlp.NewGRPCClient(dial(b, tr.grpcAddr)))
	})
	b.Run("pdata-server", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		s := grpc.NewServer(grpc.MaxRecvMsgSize(DefaultMaxDecompressedBytes))
		ptraceotlp.RegisterGRPCServer(s, &noopTracesServer{})
		go func() { _ = s.Serve(l) }()
		defer s.Stop()
		send(b, ptraceotlp.NewGRPCClient(dial(b, l.Addr().String())))
	})
	b.Run("nesting-scan-only", func(b *testing.B) {
		parallel(b, batches, senders, func(i int) {
			if err := protoDepth(bodies[i], kindTracesRequest, DefaultMaxAttributeDepth); err != nil {
				b.Error(err)
			}
		})
	})
	b.Run("decode-only", func(b *testing.B) {
		parallel(b, batches, senders, func(i int) {
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalProto(bodies[i]); err != nil {
				b.Error(err)
			}
		})
	})
}

// parallel runs do on batches indexes from senders goroutines per
// iteration, and reports the spans of the benchmark per second and the
// process's CPU time per span (client and server together), which other
// load on the machine disturbs less.
func parallel(b *testing.B, batches, senders int, do func(i int)) {
	b.ReportAllocs()
	cpu0 := processCPU(b)
	start := time.Now()
	for b.Loop() {
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for i := s; i < batches; i += senders {
					do(i)
				}
			})
		}
		wg.Wait()
	}
	spans := float64(b.N * batches * 1000)
	b.ReportMetric(spans/time.Since(start).Seconds(), "spans/s")
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/spans, "cpu-ns/span")
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
