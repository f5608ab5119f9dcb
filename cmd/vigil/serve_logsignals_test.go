package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// TestServeLoggedXIDDiagnosed: a node's kernel log, shipped over OTLP/gRPC
// by the OpenTelemetry SDK as a log collector would, says a GPU fell off
// the bus; `vigil serve` counts it (vigil_log_xid_total) and `vigil
// diagnose --server` names gpu_lost on that node with the kernel log as
// its evidence — with no dcgm-exporter data at all.
func TestServeLoggedXIDDiagnosed(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	defer func() { cancel(); require.NoError(t, <-s.done) }()
	grpcAddr := regexpFind(t, `transport=OTLP/gRPC address=(\S+)`, s.stderr.String())

	exp, err := otlploggrpc.New(t.Context(), otlploggrpc.WithEndpoint(grpcAddr), otlploggrpc.WithInsecure())
	require.NoError(t, err)
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)),
		sdklog.WithResource(resource.NewSchemaless(attribute.String("k8s.node.name", "gpu-node-03"), attribute.String("service.name", "kernel"))))
	at := time.Now().Add(-2 * time.Minute)
	for i, line := range []string{
		"gpu-node-03 kernel: NVRM: GPU at PCI:0000:44:00: GPU-1b5e2a8c-0d7f-4f3e-9d1a-6c2b7e8f9a01",
		"gpu-node-03 kernel: NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
	} {
		var rec otellog.Record
		rec.SetTimestamp(at.Add(time.Duration(i) * time.Second))
		rec.SetBody(attribute.StringValue(line))
		lp.Logger("journald").Emit(t.Context(), rec)
	}
	require.NoError(t, lp.Shutdown(t.Context()))

	s.waitFor(t, func() bool {
		return len(queryVector(t, s, `vigil_log_xid_total{node="gpu-node-03", xid="79", pci="0000:44:00"}`)) == 1
	}, "the XID counter")
	r := runVigil(t, "", "diagnose", "--server", s.url, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Healthy  bool `json:"healthy"`
		Findings []struct {
			Kind     string            `json:"kind"`
			Entity   map[string]string `json:"entity"`
			Summary  string            `json:"summary"`
			Evidence []struct {
				Signal  string `json:"signal"`
				Summary string `json:"summary"`
			} `json:"evidence"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.False(t, rep.Healthy, r.stdout)
	require.Len(t, rep.Findings, 1, r.stdout)
	f := rep.Findings[0]
	require.Equal(t, "gpu_lost", f.Kind)
	require.Equal(t, map[string]string{"node": "gpu-node-03"}, f.Entity)
	require.Contains(t, f.Summary, "PCI 0000:44:00")
	require.Len(t, f.Evidence, 1)
	require.Equal(t, "vigil_log_xid_total", f.Evidence[0].Signal)
	require.Contains(t, f.Evidence[0].Summary, "kernel log: XID 79")
}

// TestServeLogsOnlyStall: only logs reach `vigil serve` — a node's kernel
// log and the output of a training job's pods, shipped by the OpenTelemetry
// SDK over OTLP/HTTP. The pods' NCCL watchdog timeouts are the job's stall
// and the GPU the kernel saw fall off the bus is its probable cause.
func TestServeLogsOnlyStall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := startServe(t, ctx, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	defer func() { cancel(); require.NoError(t, <-s.done) }()
	httpAddr := otlpHTTPRE.FindStringSubmatch(s.stderr.String())[1]

	emit := func(at time.Time, line string, attrs ...attribute.KeyValue) {
		exp, err := otlploghttp.New(t.Context(), otlploghttp.WithEndpoint(httpAddr), otlploghttp.WithInsecure())
		require.NoError(t, err)
		lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)),
			sdklog.WithResource(resource.NewSchemaless(attrs...)))
		var rec otellog.Record
		rec.SetTimestamp(at)
		rec.SetBody(attribute.StringValue(line))
		lp.Logger("test").Emit(t.Context(), rec)
		require.NoError(t, lp.Shutdown(t.Context()))
	}
	lost := time.Now().Add(-12 * time.Minute)
	emit(lost, "NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		attribute.String("k8s.node.name", "gpu-node-03"), attribute.String("service.name", "kernel"))
	for i, node := range []string{"gpu-node-02", "gpu-node-04"} {
		emit(lost.Add(10*time.Minute), fmt.Sprintf("[Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.", 8*i),
			attribute.String("k8s.node.name", node), attribute.String("k8s.namespace.name", "ml"),
			attribute.String("k8s.pod.name", fmt.Sprintf("llm-pretrain-worker-%d", i)), attribute.String("service.name", "trainer"))
	}
	emit(lost.Add(10*time.Minute), "[Rank 16] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.",
		attribute.String("k8s.node.name", "gpu-node-03"), attribute.String("k8s.namespace.name", "ml"),
		attribute.String("k8s.pod.name", "llm-pretrain-worker-2"), attribute.String("service.name", "trainer"))

	s.waitFor(t, func() bool {
		return len(queryVector(t, s, `vigil_log_events_total{event="nccl_timeout"}`)) == 3
	}, "the NCCL timeout counters")
	r := runVigil(t, "", "diagnose", "--server", s.url, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Symptoms []struct {
			Kind    string            `json:"kind"`
			Entity  map[string]string `json:"entity"`
			Summary string            `json:"summary"`
		} `json:"symptoms"`
		Causes []struct {
			Kind     string            `json:"kind"`
			Entity   map[string]string `json:"entity"`
			Explains []int             `json:"explains"`
		} `json:"causes"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Len(t, rep.Symptoms, 1, r.stdout)
	require.Equal(t, "training_stall", rep.Symptoms[0].Kind)
	require.Equal(t, map[string]string{"namespace": "ml", "workload": "llm-pretrain-worker"}, rep.Symptoms[0].Entity)
	require.Contains(t, rep.Symptoms[0].Summary, "first error before them: XID 79 in gpu-node-03")
	require.NotEmpty(t, rep.Causes, r.stdout)
	require.Equal(t, "gpu_lost", rep.Causes[0].Kind)
	require.Equal(t, map[string]string{"node": "gpu-node-03"}, rep.Causes[0].Entity)
	require.Equal(t, []int{0}, rep.Causes[0].Explains)
}
