package logsignals

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Run with:
//
//	go test ./internal/logsignals -run '^$' -bench . -benchtime 2s

// benchLogs is a batch of n records of a GPU cluster's usual mix: mostly
// ordinary application, NCCL INFO and access lines, a few JSON lines, and
// one event in 50.
func benchLogs(n int) plog.Logs {
	ordinary := []string{
		"INFO 11-12 02:47:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1843.2 tokens/s, Avg generation throughput: 912.7 tokens/s, Running: 31 reqs, Waiting: 0 reqs, GPU KV cache usage: 61.4%",
		`INFO:     10.42.3.15:41584 - "POST /v1/chat/completions HTTP/1.1" 200 OK`,
		"gpu-node-06:18274:18391 [3] NCCL INFO Channel 02/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA",
		"[2026-11-12 02:47:01,118] [INFO] [trainer.py:412] step 48212 | loss 1.873 | lr 2.4e-4 | grad_norm 0.91 | tokens/s 412311 | CUDA mem 71.2 GiB",
		`{"level":"info","ts":1762915753.41,"logger":"http.log.access","msg":"handled request","status":200,"duration":0.041}`,
		"Nov 12 02:47:01 gpu-node-06 kernel: [2918300.001] mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE",
		"10.42.0.7 - - [12/Nov/2026:02:49:13 +0000] \"GET /health HTTP/1.1\" 200 2 \"-\" \"kube-probe/1.33\"",
	}
	events := []string{lineXID74, lineTimeout, lineOOM, line500, lineXID79}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	attrs := rl.Resource().Attributes()
	attrs.PutStr("k8s.node.name", "gpu-node-06")
	attrs.PutStr("k8s.namespace.name", "ml-train")
	attrs.PutStr("k8s.pod.name", "llm-pretrain-worker-6")
	attrs.PutStr("service.name", "llm-pretrain")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		body := ordinary[i%len(ordinary)]
		if i%50 == 49 {
			body = events[(i/50)%len(events)]
		}
		lrs.AppendEmpty().Body().SetStr(body)
	}
	return ld
}

// spanLogs is a batch of n records as a Spring service writes them: each
// names its statement (Class#line) and its span, four records a span, the
// steps of one of a dozen code paths.
func spanLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "ts-travel-service")
	rl.Resource().Attributes().PutStr("k8s.pod.name", "ts-travel-service-64469b5b48-25zj6")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		span, step := i/4, i%4
		lr := lrs.AppendEmpty()
		lr.Body().SetStr(fmt.Sprintf("16:42:22.%03d INFO  t.s.TravelServiceImpl#%d TraceID: %032x SpanID: %016x [getRouteByRouteId][step %d][Route is: Route(id=%d, stations=[shanghai, suzhou], distances=[0, %d])]",
			i%1000, 100+(span%12)*10+step, span, span, step, span, 50+span%7))
		lr.SetTimestamp(pcommon.Timestamp(1674981742000000000 + int64(i)*1e6))
		var tid pcommon.TraceID
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(tid[8:], uint64(span))
		binary.BigEndian.PutUint64(sid[:], uint64(span)+1)
		lr.SetTraceID(tid)
		lr.SetSpanID(sid)
	}
	return ld
}

// BenchmarkConsumeLogs reads the usual mix with the template miner on
// (the default) and off, a mix where one record in ten is a warning or an
// error of a dozen templates, each mined, and records that name their
// statement and span (spanLogs) with the successions counted and not.
func BenchmarkConsumeLogs(b *testing.B) {
	const batch = 1000
	warnings := benchLogs(batch)
	lrs := warnings.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := range lrs.Len() {
		if i%10 == 3 {
			lrs.At(i).Body().SetStr(fmt.Sprintf("2026-11-12 02:47:%02d,118 %s [worker-%d] c.v.Shard%d - request %d for shard-%d failed after %d ms",
				i%60, []string{"WARN", "ERROR"}[i%2], i%8, i%12, i, i%12, 100+i))
		}
	}
	off := DefaultConfig()
	off.Templates.Enabled = false
	warn := DefaultConfig()
	warn.Templates.MinSeverity = "warn"
	noSucc := DefaultConfig()
	noSucc.Templates.Successions = false
	for _, tc := range []struct {
		name string
		cfg  Config
		ld   plog.Logs
	}{
		{"mix", DefaultConfig(), benchLogs(batch)},
		{"mix_templates_off", off, benchLogs(batch)},
		{"mix_warn_templates", warn, benchLogs(batch)},
		{"warnings_10pct", DefaultConfig(), warnings},
		{"spans", DefaultConfig(), spanLogs(batch)},
		{"spans_successions_off", noSucc, spanLogs(batch)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := New(tc.cfg, discardApp{}, nil, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := c.ConsumeLogs(ctx, tc.ld); err != nil {
					b.Fatal(err)
				}
				n += batch
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkMatchText(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"ordinary", "[2026-11-12 02:47:01,118] [INFO] [trainer.py:412] step 48212 | loss 1.873 | lr 2.4e-4 | grad_norm 0.91 | tokens/s 412311"},
		{"access_200", `INFO:     10.42.3.15:41584 - "POST /v1/chat/completions HTTP/1.1" 200 OK`},
		{"nccl_timeout", lineTimeout},
		{"xid", lineXID74},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = MatchText(tc.line)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// discardApp is an AppendableV2 that drops everything.
type discardApp struct{}

func (discardApp) AppenderV2(context.Context) storage.AppenderV2 { return discardAppender{} }

type discardAppender struct{}

func (discardAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	return 0, nil
}
func (discardAppender) Commit() error   { return nil }
func (discardAppender) Rollback() error { return nil }
