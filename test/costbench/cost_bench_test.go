package costbench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// Environment variables that size the benchmark.
const (
	nodesEnv = "VIGIL_COSTBENCH_NODES"
	daysEnv  = "VIGIL_COSTBENCH_DAYS"
)

const gpusPerNode = 8

// start is the data's first instant.
var start = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const prices = `currency: USD
gpu_hourly: {"NVIDIA H100 80GB HBM3": 4.0, default: 2.0}
node_overrides: [{match: {node.kubernetes.io/instance-type: spot}, gpu_hourly: 1.5}]
`

// BenchmarkCost runs `vigil cost --prometheus` over the two ranges.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./test/costbench
//	VIGIL_COSTBENCH_NODES=1000 go test -run '^$' -bench . -benchtime 1x -timeout 120m ./test/costbench
func BenchmarkCost(b *testing.B) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		b.Skip("prometheus is not installed (make deb-deps installs it)")
	}
	nodes := envInt(b, nodesEnv, 100)
	days := envInt(b, daysEnv, 30)
	// By namespace (the default) reads the GPU series alone; by workload
	// builds the topology too (every dcgm-exporter series of the last
	// hour, and kube-state-metrics).
	for _, c := range []struct {
		span, step time.Duration
		by         string
	}{
		{time.Duration(days) * 24 * time.Hour, 5 * time.Minute, "namespace"},
		{24 * time.Hour, 30 * time.Second, "namespace"},
		{24 * time.Hour, 30 * time.Second, "workload"},
	} {
		b.Run(fmt.Sprintf("nodes=%d/range=%s/step=%s/by=%s", nodes, fmtSpan(c.span), c.step, c.by), func(b *testing.B) {
			benchCost(b, nodes, c.span, c.step, c.by)
		})
	}
}

func benchCost(b *testing.B, nodes int, span, step time.Duration, by string) {
	vigil := peertest.Vigil(b)
	dir := filepath.Join(b.TempDir(), "prometheus")
	began := time.Now()
	samples, err := writeBlock(b.Context(), dir, nodes, span, step)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d samples (%d GPUs over %s at %s) in %s", samples, nodes*gpusPerNode, span, step, time.Since(began).Round(time.Millisecond))
	prom := peertest.StartPrometheus(b, dir, "")
	defer func() { _ = prom.Stop() }()
	pricesFile := filepath.Join(b.TempDir(), "prices.yaml")
	if err := os.WriteFile(pricesFile, []byte(prices), 0o644); err != nil {
		b.Fatal(err)
	}
	from, to := start, start.Add(span)
	var walls []time.Duration
	var peak int64
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), vigil, "cost", "--json", "--prometheus", prom.URL, "--prices", pricesFile,
			"--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--by", by)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		hwm := watchHWM(cmd.Process.Pid)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("vigil cost: %v: %s", err, stderr.String())
		}
		walls = append(walls, time.Since(t0))
		peak = max(peak, hwm())
		var rep struct {
			GPUHours struct{ Available float64 } `json:"gpu_hours"`
		}
		if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
			b.Fatalf("vigil cost --json: %v", err)
		}
		want := float64(nodes*gpusPerNode) * span.Hours()
		if d := rep.GPUHours.Available - want; d > 1e-6*want || d < -1e-6*want {
			b.Fatalf("available GPU-hours %.3f, want %.3f", rep.GPUHours.Available, want)
		}
	}
	wall := walls[len(walls)/2]
	b.ReportMetric(wall.Seconds(), "s/cost")
	b.ReportMetric(float64(peak)/(1<<20), "MiB-peak-RSS")
	b.ReportMetric(float64(samples)/wall.Seconds(), "samples/s")
	b.ReportMetric(float64(nodes*gpusPerNode)*span.Hours()/wall.Seconds(), "GPU-hours/s")
}

// writeBlock writes the cluster's series over (start, start+span] at
// step into one block under dir, and returns the samples written.
func writeBlock(ctx context.Context, dir string, nodes int, span, step time.Duration) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	// A head range of four spans keeps every sample of the span appendable
	// after the first commit (the head takes samples up to half its range
	// before its newest).
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, 4*span.Milliseconds())
	if err != nil {
		return 0, err
	}
	defer w.Close()
	steps := int(span / step)
	n := 0
	app := w.Appender(ctx)
	series := func(ls labels.Labels, value func(k int) float64) error {
		var ref storage.SeriesRef
		for k := 1; k <= steps; k++ {
			var err error
			ref, err = app.Append(ref, ls, start.Add(time.Duration(k)*step).UnixMilli(), value(k))
			if err != nil {
				return err
			}
			n++
		}
		if n > 2_000_000 {
			if err := app.Commit(); err != nil {
				return err
			}
			app = w.Appender(ctx)
		}
		return nil
	}
	for i := range nodes {
		node := fmt.Sprintf("gpu-node-%04d", i)
		kind := "on-demand"
		if i%4 == 0 {
			kind = "spot"
		}
		ns := fmt.Sprintf("team-%d", i%10)
		pod := fmt.Sprintf("job-%04d", i)
		if err := series(labels.FromStrings("__name__", "kube_node_labels", "node", node, "label_node_kubernetes_io_instance_type", kind), func(int) float64 { return 1 }); err != nil {
			return n, err
		}
		if err := series(labels.FromStrings("__name__", "kube_pod_info", "namespace", ns, "pod", pod, "node", node, "created_by_kind", "<none>", "created_by_name", "<none>"), func(int) float64 { return 1 }); err != nil {
			return n, err
		}
		for g := range gpusPerNode {
			kv := []string{"__name__", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu", strconv.Itoa(g), "UUID", fmt.Sprintf("GPU-%04d-%d", i, g),
				"Hostname", node, "modelName", "NVIDIA H100 80GB HBM3"}
			if g < 6 {
				kv = append(kv, "namespace", ns, "pod", pod, "container", "main")
			}
			busy := float64((i*gpusPerNode+g)%10) / 10
			if err := series(labels.FromStrings(kv...), func(k int) float64 { return busy * float64(1+k%3) / 3 }); err != nil {
				return n, err
			}
		}
		if i%10 == 0 {
			for _, m := range []string{"vllm:prompt_tokens_total", "vllm:generation_tokens_total"} {
				if err := series(labels.FromStrings("__name__", m, "model_name", "llama-70b", "namespace", ns, "pod", pod), func(k int) float64 { return float64(k) * 1000 }); err != nil {
					return n, err
				}
			}
		}
	}
	if err := app.Commit(); err != nil {
		return n, err
	}
	if _, err := w.Flush(ctx); err != nil {
		return n, fmt.Errorf("flush block: %w", err)
	}
	return n, nil
}

// watchHWM polls the process's VmHWM (its peak resident set) until it
// exits, and returns a function giving the last value read, in bytes.
// The child's rusage ru_maxrss would not do: a child forked with
// CLONE_VM and then exec'd reports the parent's peak when it is higher,
// and this benchmark's process holds the block it wrote.
func watchHWM(pid int) func() int64 {
	var last atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := fmt.Sprintf("/proc/%d/status", pid)
		for {
			b, err := os.ReadFile(path)
			if err != nil {
				return
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					if kb > 0 {
						last.Store(kb * 1024)
					}
				}
			}
			if strings.Contains(string(b), "State:\tZ") {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() int64 { <-done; return last.Load() }
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

func fmtSpan(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
