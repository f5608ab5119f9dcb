package otlpbench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/traces"
	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

const (
	batches   = 200 // of 100 spans: 20,000 spans per pass
	traceSize = 20
	senders   = 4
	rounds    = 3
)

// redacting redacts then stores, as `vigil serve` does.
type redacting struct {
	red  *redact.Redactor
	next otlp.TracesConsumer
}

func (r redacting) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	r.red.Traces(td)
	return r.next.ConsumeTraces(ctx, td)
}

func openStore(b *testing.B) *traces.Store {
	cfg := traces.DefaultConfig()
	cfg.Dir = b.TempDir()
	st, err := traces.Open(cfg, slog.New(slog.DiscardHandler), nil, time.Now)
	require.NoError(b, err)
	return st
}

// direct writes the batches straight to a fresh store from senders
// goroutines; it returns spans per second.
func direct(b *testing.B, in []ptrace.Traces, red *redact.Redactor) float64 {
	st := openStore(b)
	defer func() { require.NoError(b, st.Close()) }()
	var c otlp.TracesConsumer = st
	if red != nil {
		c = redacting{red, st}
	}
	copies := cloneAll(in)
	return run(b, len(in), func(i int) error { return c.ConsumeTraces(context.Background(), copies[i]) }, spans(in))
}

// viaGRPC sends the batches over OTLP/gRPC to a receiver in front of a
// fresh store (with redaction when red is set); it returns spans per
// second.
func viaGRPC(b *testing.B, in []ptrace.Traces, red *redact.Redactor) float64 {
	st := openStore(b)
	defer func() { require.NoError(b, st.Close()) }()
	var c otlp.TracesConsumer = st
	if red != nil {
		c = redacting{red, st}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	recv, err := otlp.New(otlp.Options{GRPC: ln, Traces: c})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	defer func() { cancel(); require.NoError(b, <-done) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	reqs := make([]ptraceotlp.ExportRequest, len(in))
	for i, td := range cloneAll(in) {
		reqs[i] = ptraceotlp.NewExportRequestFromTraces(td)
	}
	return run(b, len(in), func(i int) error {
		_, err := client.Export(context.Background(), reqs[i])
		return err
	}, spans(in))
}

// run calls do for every batch index from senders goroutines and returns
// n spans per second of wall time.
func run(b *testing.B, batches int, do func(i int) error, n int) float64 {
	var wg sync.WaitGroup
	next := make(chan int)
	start := time.Now()
	for range senders {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range batches {
		next <- i
	}
	close(next)
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

func cloneAll(in []ptrace.Traces) []ptrace.Traces {
	out := make([]ptrace.Traces, len(in))
	for i, td := range in {
		out[i] = ptrace.NewTraces()
		td.CopyTo(out[i])
	}
	return out
}

func spans(in []ptrace.Traces) int {
	n := 0
	for _, td := range in {
		n += td.SpanCount()
	}
	return n
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkReceiverOverhead alternates the store written directly and
// through the receiver (OTLP/gRPC, redaction included as in `vigil
// serve`), and redaction on and off, rounds times each.
//
//	go test ./test/otlpbench -run '^$' -bench ReceiverOverhead -benchtime 1x
func BenchmarkReceiverOverhead(b *testing.B) {
	gen := tracestest.NewGen(1, time.Now().Add(-time.Hour), 10*time.Millisecond)
	in, _ := gen.Batches(batches, 100/traceSize, traceSize)
	red, err := redact.New(redact.Default(), nil)
	require.NoError(b, err)
	for b.Loop() {
		var plain, recv, recvNoRed, plainRed []float64
		for range rounds {
			plain = append(plain, direct(b, in, nil))
			recv = append(recv, viaGRPC(b, in, red))
			plainRed = append(plainRed, direct(b, in, red))
			recvNoRed = append(recvNoRed, viaGRPC(b, in, nil))
		}
		overhead := median(recv) / median(plain)
		redCost := median(plainRed) / median(plain)
		b.ReportMetric(median(plain), "store-spans/s")
		b.ReportMetric(median(recv), "receiver-spans/s")
		b.ReportMetric(overhead, "receiver/store")
		b.ReportMetric(redCost, "redacted/plain")
		b.Logf("%d spans per pass, %d rounds alternating, %d senders\n"+
			"store directly:                 %s spans/s\n"+
			"OTLP/gRPC + redaction + store:  %s spans/s  → receiver/store %.2f\n"+
			"OTLP/gRPC + store (no redact):  %s spans/s\n"+
			"redaction + store:              %s spans/s  → with/without redaction %.2f",
			spans(in), rounds, senders, fmtRates(plain), fmtRates(recv), overhead, fmtRates(recvNoRed), fmtRates(plainRed), redCost)
	}
}

func fmtRates(v []float64) string {
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(v), slices.Min(v), slices.Max(v))
}
