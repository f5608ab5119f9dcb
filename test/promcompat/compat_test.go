package promcompat

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

//go:embed testdata/queries.promql
var batteryText string

// evalTimes are the instant evaluation times, as offsets from clusterStart;
// evalAt adds 250 ms so that none lies on the sample grid.
var evalTimes = []time.Duration{
	7 * time.Minute,   // early: windows reach back before the first sample
	65 * time.Minute,  // the fixtures' scrapes are visible
	101 * time.Minute, // just after vllm-1 restarted (counter and bucket resets)
	136 * time.Minute, // gpu-node-02 has been silent for more than the lookback delta
	140 * time.Minute, // gpu-node-02 is back with reset counters
	206 * time.Minute, // NVLink degraded on gpu-node-03, GPU 7 of gpu-node-04 lost
	242 * time.Minute, // after the last sample, inside the lookback delta
	270 * time.Minute, // long after the last sample
}

func evalAt(d time.Duration) int64 { return clusterStart + d.Milliseconds() + 250 }

// rangeSpecs are the range queries' windows: starts end in .250 and steps
// are whole seconds, so no evaluation step lies on the sample grid.
var rangeSpecs = []struct {
	name       string
	start, end time.Duration
	step       time.Duration
}{
	{"whole dump", 5 * time.Minute, 4*time.Hour + 20*time.Minute, 2 * time.Minute},
	{"incidents", 95 * time.Minute, 145 * time.Minute, 20 * time.Second},
}

// batteryQuery is one line of testdata/queries.promql.
type batteryQuery struct {
	line int
	// mode is "instant" (every evaluation time), "range" (that and every
	// range of rangeSpecs) or "ordered" (instant, comparing the order of the
	// series too).
	mode string
	expr string
}

func parseBattery(text string) ([]batteryQuery, error) {
	var qs []batteryQuery
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		mode, expr, ok := strings.Cut(line, " ")
		expr = strings.TrimSpace(expr)
		if !ok || expr == "" {
			return nil, fmt.Errorf("queries.promql:%d: want MODE EXPR, got %q", i+1, line)
		}
		switch mode {
		case "instant", "range", "ordered":
		default:
			return nil, fmt.Errorf("queries.promql:%d: mode %q is not instant, range or ordered", i+1, mode)
		}
		qs = append(qs, batteryQuery{line: i + 1, mode: mode, expr: expr})
	}
	return qs, nil
}

// compatEnv is Prometheus 2.42 and Vigil serving the same data.
type compatEnv struct {
	prom, vigil       apiClient
	promURL, vigilURL string
	// buckets names the bucket series of the dump's classic histograms
	// (whose le labels Prometheus 3 normalises on ingestion).
	buckets map[string]bool
}

// vigilConfig keeps everything loaded and keeps Vigil's own metrics and
// the series its rules record out of its store, so that both servers hold
// exactly the dump.
const vigilConfig = `storage:
  retention: 100y
self_monitoring:
  enabled: false
evaluation:
  enabled: false
`

// startEnv writes the dump, loads it into Prometheus (promtool backfill)
// and Vigil (vigil import) and starts both servers.
func startEnv(t testing.TB) *compatEnv {
	t.Helper()
	dir := t.TempDir()
	dump := filepath.Join(dir, "dump.om")
	begin := time.Now()
	f := newOMFile()
	generateCluster(f)
	files, err := fixtureFiles()
	require.NoError(t, err)
	for i, path := range files {
		require.NoError(t, addFixture(f, path, fixtureTarget(i)))
	}
	out, err := os.Create(dump)
	require.NoError(t, err)
	require.NoError(t, errors.Join(f.write(out), out.Close()))
	t.Logf("dump: %d families, %d samples (%s)", len(f.families), f.samples(), time.Since(begin).Round(time.Millisecond))

	promDir := filepath.Join(dir, "prometheus")
	step := time.Now()
	peertest.Run(t, peertest.LookPath(t, "promtool"), "tsdb", "create-blocks-from", "openmetrics", "--quiet", dump, promDir)
	t.Logf("promtool backfill: %s", time.Since(step).Round(time.Millisecond))
	vigilBin := peertest.Vigil(t)
	step = time.Now()
	vigilDir := filepath.Join(dir, "vigil")
	peertest.Run(t, vigilBin, "import", "--data-dir", vigilDir, dump)
	t.Logf("vigil import: %s", time.Since(step).Round(time.Millisecond))
	cfg := filepath.Join(dir, "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(vigilConfig), 0o644))

	step = time.Now()
	prom := peertest.StartPrometheus(t, promDir, "")
	vigil := peertest.StartVigil(t, "--config", cfg, "--data-dir", vigilDir)
	t.Logf("servers ready: %s; set-up took %s", time.Since(step).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	buckets := map[string]bool{}
	for _, fam := range f.families {
		if fam.typ == "histogram" {
			buckets[fam.name+"_bucket"] = true
		}
	}
	return &compatEnv{
		prom:    apiClient{name: "prometheus", base: prom.URL},
		vigil:   apiClient{name: "vigil", base: vigil.URL},
		promURL: prom.URL, vigilURL: vigil.URL,
		buckets: buckets,
	}
}

// TestPromQLCompat runs the battery: the same data in Prometheus 2.42 and
// Vigil, the same queries through both HTTP APIs, the same answers.
func TestPromQLCompat(t *testing.T) {
	queries, err := parseBattery(batteryText)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(queries), 40, "the battery has too few queries")
	env := startEnv(t)

	t.Run("data", func(t *testing.T) { testSameData(t, env) })

	t.Run("instant", func(t *testing.T) {
		for _, q := range queries {
			t.Run(fmt.Sprintf("line%03d", q.line), func(t *testing.T) {
				seen := false
				for _, d := range evalTimes {
					at := evalAt(d)
					want, err := env.prom.query(t.Context(), q.expr, at)
					require.NoError(t, err, "prometheus: %s at T0+%s", q.expr, d)
					got, err := env.vigil.query(t.Context(), q.expr, at)
					require.NoError(t, err, "vigil: %s at T0+%s", q.expr, d)
					diff := diffResults(want, got, "prometheus", "vigil", q.mode == "ordered")
					require.Empty(t, diff, "%s at T0+%s (%s)", q.expr, d, formatSeconds(at))
					seen = seen || !want.empty()
				}
				require.True(t, seen, "%s returns nothing at any evaluation time: it tests nothing", q.expr)
			})
		}
	})

	t.Run("range", func(t *testing.T) {
		for _, q := range queries {
			if q.mode != "range" {
				continue
			}
			t.Run(fmt.Sprintf("line%03d", q.line), func(t *testing.T) {
				for _, r := range rangeSpecs {
					start, end := evalAt(r.start), evalAt(r.end)
					want, err := env.prom.queryRange(t.Context(), q.expr, start, end, r.step)
					require.NoError(t, err, "prometheus: %s over %s", q.expr, r.name)
					got, err := env.vigil.queryRange(t.Context(), q.expr, start, end, r.step)
					require.NoError(t, err, "vigil: %s over %s", q.expr, r.name)
					require.False(t, want.empty(), "%s returns nothing over %s: it tests nothing", q.expr, r.name)
					diff := diffResults(want, got, "prometheus", "vigil", false)
					require.Empty(t, diff, "%s over %s (step %s)", q.expr, r.name, r.step)
				}
			})
		}
	})

	t.Run("differences", func(t *testing.T) { testDifferences(t, env) })
	t.Run("promtool", func(t *testing.T) { testPromtool(t, env) })
}
