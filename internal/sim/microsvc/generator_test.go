package microsvc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

func openMetrics(t testing.TB, cfg Config, f FaultSpec) []byte {
	t.Helper()
	g, err := New(cfg, f)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, g.WriteOpenMetrics(t.Context(), &buf))
	return buf.Bytes()
}

// TestDeterministic: the same Config gives the same bytes; another seed
// other bytes.
func TestDeterministic(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: 3},
		{Seed: 3, App: AppOnlineBoutique},
		{Seed: 3, Style: StyleRCAEval},
		{Seed: 3, Step: 5 * time.Second, Duration: 20 * time.Minute, FaultScale: 0.5, NoiseScale: 1.5},
	} {
		a := openMetrics(t, cfg, FaultSpec{Kind: FaultLatency})
		b := openMetrics(t, cfg, FaultSpec{Kind: FaultLatency})
		require.Equal(t, a, b)
		cfg.Seed++
		c := openMetrics(t, cfg, FaultSpec{Kind: FaultLatency})
		require.NotEqual(t, a, c)
		require.True(t, bytes.HasSuffix(a, []byte("\n# EOF\n")))
	}
}

// TestFaultTouchesOnlyTheFuture: a faulty run and the healthy run of its
// seed are the same sample for sample before the onset, and differ after.
func TestFaultTouchesOnlyTheFuture(t *testing.T) {
	cfg := Config{Seed: 4}
	h := generate(t, cfg, FaultSpec{})
	for _, kind := range []string{FaultCPU, FaultMemory, FaultLatency, FaultAvailability} {
		f := generate(t, cfg, FaultSpec{Kind: kind, Service: "catalogue"})
		onset := f.gen.Truth()[0].Onset.UnixMilli()
		require.Len(t, f.c.series, len(h.c.series))
		differ := 0
		for k, fs := range f.c.series {
			hs := h.c.series[k]
			require.NotNil(t, hs, k)
			require.Equal(t, hs.t, fs.t)
			for i, ts := range fs.t {
				if ts < onset {
					require.Equal(t, hs.v[i], fs.v[i], "%s at %d", k, ts)
				} else if hs.v[i] != fs.v[i] {
					differ++
				}
			}
		}
		require.NotZero(t, differ, kind)
		require.Equal(t, h.gen.Decoys(), f.gen.Decoys(), "decoys do not depend on the fault")
	}
}

// TestPromtool: promtool backfills the output, both styles.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (Debian: apt-get install prometheus)")
	}
	for _, style := range []string{StylePrometheus, StyleRCAEval} {
		dir := t.TempDir()
		file := filepath.Join(dir, "metrics.om")
		require.NoError(t, os.WriteFile(file, openMetrics(t, Config{Seed: 2, Style: style}, FaultSpec{Kind: FaultCPU}), 0o644))
		out, err := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data")).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "BLOCK ULID")
	}
}

// TestRunIntoStore: Run appends one commit per scrape into a real store,
// in which PromQL sees every service's CPU rate; OnScrape sees every round
// and its error stops the run.
func TestRunIntoStore(t *testing.T) {
	g, err := New(Config{Seed: 5, Duration: 20 * time.Minute}, FaultSpec{Kind: FaultCPU, Service: "carts"})
	require.NoError(t, err)
	cfg := g.Config()
	end := cfg.Start.Add(cfg.Duration)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	var rounds []time.Time
	require.NoError(t, g.Run(t.Context(), st, RunOptions{OnScrape: func(_ context.Context, at time.Time) error {
		rounds = append(rounds, at)
		return nil
	}}))
	require.Len(t, rounds, int(cfg.Duration/cfg.Step)+1)
	require.Equal(t, cfg.Start, rounds[0])
	require.Equal(t, end, rounds[len(rounds)-1])

	v, _, err := store.Query(t.Context(), st, "rate(container_cpu_usage_seconds_total[1m])", end)
	require.NoError(t, err)
	byService := map[string]float64{}
	for _, s := range v.(promql.Vector) {
		byService[s.Metric.Get("service")] = s.F
	}
	require.Len(t, byService, len(g.Services()))
	for _, svc := range g.Services() {
		require.Positive(t, byService[svc], svc)
	}
	require.InDelta(t, 0.5, byService["carts"], 0.01, "the hog pins carts at its CPU limit")

	stop := errors.New("stop")
	n := 0
	err = g.Run(t.Context(), newCollector(), RunOptions{OnScrape: func(context.Context, time.Time) error { n++; return stop }})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
}

// TestRunMatchesFile: Run appends as many samples, in as many series and
// rounds, as WriteOpenMetrics writes.
func TestRunMatchesFile(t *testing.T) {
	cfg := Config{Seed: 6, App: AppOnlineBoutique, Duration: 10 * time.Minute}
	r := generate(t, cfg, FaultSpec{Kind: FaultMemory})
	om := string(openMetrics(t, cfg, FaultSpec{Kind: FaultMemory}))
	lines, samples := strings.Split(strings.TrimSuffix(om, "\n"), "\n"), 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			samples++
		}
	}
	rounds := int(10*time.Minute/DefaultStep) + 1
	require.Equal(t, rounds, r.c.rounds)
	require.Equal(t, len(r.c.series)*rounds, samples)
	require.Contains(t, om, "# TYPE container_cpu_usage_seconds counter\n")
	require.Contains(t, om, "# TYPE http_server_request_duration_seconds histogram\n")
	require.Contains(t, om, `le="+Inf"`)
	require.Contains(t, om, `le="1.0"`)
}

// TestTruth: the truth names the faulty service as a metric_anomaly, its
// onset falls on a scrape between 40% and 65% of the run unless pinned,
// and its severity is in (0, 1], a few hundredths when subtle.
func TestTruth(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		g, err := New(Config{Seed: seed}, FaultSpec{Kind: FaultMemory})
		require.NoError(t, err)
		cfg := g.Config()
		tr := g.Truth()
		require.Len(t, tr, 1)
		require.Equal(t, KindMetricAnomaly, tr[0].Kind)
		require.Equal(t, FaultMemory, tr[0].Variant)
		require.Contains(t, g.Services()[1:], tr[0].Entity["service"], "never the entry unless pinned")
		after := tr[0].Onset.Sub(cfg.Start)
		require.Zero(t, after%cfg.Step)
		require.GreaterOrEqual(t, after, time.Duration(0.4*float64(cfg.Duration)).Truncate(cfg.Step))
		require.LessOrEqual(t, after, time.Duration(0.65*float64(cfg.Duration)))
		require.Greater(t, tr[0].Severity, 0.0)
		require.LessOrEqual(t, tr[0].Severity, 1.0)
		tr[0].Entity["service"] = "changed"
		require.NotEqual(t, "changed", g.Truth()[0].Entity["service"], "Truth returns a copy")
	}
	g, err := New(Config{Seed: 1}, FaultSpec{Kind: FaultCPU, Subtle: true, Service: "front-end", After: 20*time.Minute + 7*time.Second})
	require.NoError(t, err)
	tr := g.Truth()[0]
	require.Equal(t, DefaultStart.Add(20*time.Minute), tr.Onset)
	require.Equal(t, map[string]string{"service": "front-end"}, tr.Entity)
	require.True(t, tr.Subtle)
	require.Less(t, tr.Severity, 0.05)
	require.True(t, strings.HasPrefix(tr.Summary, "subtle CPU hog in front-end"), tr.Summary)

	g, err = New(Config{Seed: 1}, FaultSpec{})
	require.NoError(t, err)
	require.Empty(t, g.Truth())
	require.Len(t, g.Decoys(), 3)
}

// TestServices: the applications' services and call graphs.
func TestServices(t *testing.T) {
	g, err := New(Config{}, FaultSpec{})
	require.NoError(t, err)
	require.Equal(t, []string{"front-end", "orders", "orders-db", "carts", "carts-db", "catalogue", "catalogue-db",
		"user", "user-db", "payment", "shipping", "queue-master", "rabbitmq"}, g.Services())
	require.ElementsMatch(t, []string{"orders", "carts", "catalogue", "user"}, g.Edges()["front-end"])
	require.ElementsMatch(t, []string{"carts", "user", "payment", "shipping", "orders-db"}, g.Edges()["orders"])
	require.Equal(t, []string{"queue-master"}, g.Edges()["rabbitmq"])
	require.Equal(t, "sock-shop", g.Config().Namespace)

	g, err = New(Config{App: AppOnlineBoutique}, FaultSpec{})
	require.NoError(t, err)
	require.Len(t, g.Services(), 11)
	require.Equal(t, "frontend", g.Services()[0])
	require.NotContains(t, g.Services(), "loadgenerator")
	require.Equal(t, "online-boutique", g.Config().Namespace)
}
