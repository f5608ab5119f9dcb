package sim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/peertest"
)

// TestConfigValidate checks the defaults and the first problem of bad
// configs.
func TestConfigValidate(t *testing.T) {
	def := DefaultConfig().Resolve()
	require.NoError(t, def.Validate())
	require.Equal(t, 10, def.Nodes)
	require.Equal(t, 8, def.TrainingNodes)
	require.Equal(t, DefaultStart, def.Start)
	require.Equal(t, def, def.Resolve(), "Resolve is idempotent")

	f := func(name string, mod func(*Config), want string) {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			mod(&c)
			err := c.Resolve().Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, want)
		})
	}
	f("gpu model", func(c *Config) { c.GPUModel = "V100" }, `unknown GPU model "V100" (known: A100, H100, H200)`)
	f("duration", func(c *Config) { c.Duration = -time.Second }, "duration -1s is outside")
	f("training nodes", func(c *Config) { c.TrainingNodes = 11 }, "training nodes 11 is outside [1, nodes=10]")
	f("no room", func(c *Config) { c.Replicas = 9 }, "9 replicas of 2 GPUs and a notebook do not fit")
	f("dcgm interval", func(c *Config) { c.DCGMInterval = 20 * time.Second }, "must be a multiple of the scrape interval")
	f("tenants", func(c *Config) { c.Tenants = []string{"a", "a"} }, `tenant "a" is empty or repeated`)
	f("label", func(c *Config) { c.Labels.DCGMHost = "host" }, `DCGM host label "host"`)
	f("checkpoint", func(c *Config) { c.CheckpointFor = c.CheckpointEvery }, "the stall must be shorter than the period")
}

// TestParseScenario reads names and rejects unknown kinds and variants.
func TestParseScenario(t *testing.T) {
	for _, name := range ScenarioNames() {
		sc, err := ParseScenario(name)
		require.NoError(t, err, name)
		require.Equal(t, name, sc.Name)
	}
	sc, err := ParseScenario("nvlink_degraded/subtle+gpu_idle")
	require.NoError(t, err)
	require.Equal(t, []FaultSpec{{Kind: "nvlink_degraded", Variant: Subtle}, {Kind: "gpu_idle"}}, sc.Faults)
	for name, want := range map[string]string{
		"bogus":                  `no fault kind "bogus"`,
		"nvlink_degraded/bright": `nvlink_degraded has no variant "bright" (it has node, no_xid, subtle)`,
		"healthy+gpu_idle":       `no fault kind "healthy"`,
	} {
		_, err := ParseScenario(name)
		require.ErrorIs(t, err, ErrUnknownScenario, name)
		require.ErrorContains(t, err, want)
	}
	names := ScenarioNames()
	require.Equal(t, Healthy, names[0])
	for k, def := range kindTable() {
		require.Contains(t, names, k)
		require.Contains(t, names, k+"/"+Subtle, "every kind has a subtle variant")
		require.Equal(t, "", def.variants[0])
	}
}

// TestDeterministic: the same seed gives byte-identical output, another
// seed another one.
func TestDeterministic(t *testing.T) {
	gen := func(seed uint64, name string) []byte {
		sc, err := ParseScenario(name)
		require.NoError(t, err)
		s, err := New(Config{Seed: seed, Duration: 5 * time.Minute}, sc)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, s.WriteOpenMetrics(t.Context(), &b))
		return b.Bytes()
	}
	a := gen(7, "nvlink_degraded+kv_cache_exhausted")
	require.Equal(t, a, gen(7, "nvlink_degraded+kv_cache_exhausted"))
	require.NotEqual(t, a, gen(8, "nvlink_degraded+kv_cache_exhausted"))
	require.True(t, bytes.HasSuffix(a, []byte("\n# EOF\n")))
}

// TestPromtoolAccepts backfills a run with Debian's promtool (Prometheus
// 2.42): the OpenMetrics output is what its backfill reads.
func TestPromtoolAccepts(t *testing.T) {
	promtool := peertest.LookPath(t, "promtool")
	r := simulate(t, "nvlink_degraded", 3, 10*time.Minute)
	dir := t.TempDir()
	in := filepath.Join(dir, "metrics.om")
	require.NoError(t, os.WriteFile(in, r.om, 0o644))
	out, err := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "openmetrics", in, filepath.Join(dir, "data")).CombinedOutput()
	require.NoError(t, err, string(out))
	// Sum the NUM SAMPLES column of the blocks promtool wrote.
	written := 0
	for _, line := range strings.Split(string(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 5 {
			n, err := strconv.Atoi(f[4])
			require.NoError(t, err, line)
			written += n
		}
	}
	samples := strings.Count(string(r.om), "\n") - 2*strings.Count(string(r.om), "# TYPE ") - 1
	require.Equal(t, samples, written, "promtool took every sample:\n%s", out)
}

// TestCatalogKnowsEveryMetric: every metric the simulator writes is in the
// signal catalog, with the type the catalog says its exporter declares.
func TestCatalogKnowsEveryMetric(t *testing.T) {
	cat := catalog.Default()
	for _, l := range []Labels{
		{NVLinkType: NVLinkGauge, XIDCount: Off, NVLinkErrors: Off, VLLM: VLLMNew},
		{NVLinkType: NVLinkCounter, XIDCount: On, NVLinkErrors: On, VLLM: VLLMOld, KSM: KSMExported, DCGMBlank: BlankSentinel},
	} {
		nv := l.NVLinkType
		// An XID inside the window, so that the XID counter has a series.
		s, err := New(Config{Seed: 1, Duration: time.Minute, Labels: l}, Scenario{Name: "gpu_xid_error",
			Faults: []FaultSpec{{Kind: "gpu_xid_error", After: 15 * time.Second}}})
		require.NoError(t, err)
		w, err := newWorld(s.cfg, s.sc)
		require.NoError(t, err)
		for w.step() {
		}
		for _, f := range w.reg.fams {
			if f.name == "up" || f.name == "model_accuracy" {
				continue // Prometheus's own, and DESIGN.md's model quality
			}
			name := f.name
			if f.typ == typeCounter && !strings.HasPrefix(name, "DCGM_") {
				name += "_total"
			}
			m, ok := cat.Lookup(name)
			require.True(t, ok, "%s is not in the catalog", name)
			want := string(m.Source.TrueType(*m.Signal))
			if m.Source.Declared != "" {
				want = string(m.Source.Declared)
			}
			switch {
			case want == "info" || want == "stateset":
				want = typeGauge
			case f.name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" && nv == NVLinkGauge:
				want = typeGauge // the 2026 exporters' fix
			}
			require.Equal(t, want, f.typ, "%s's # TYPE", f.name)
		}
	}
}

// TestPairs: two faults at once land on different entities, each with its
// own truth, in the order the name gives.
func TestPairs(t *testing.T) {
	for _, name := range ScenarioNames() {
		sc, err := ParseScenario(name)
		require.NoError(t, err)
		if len(sc.Faults) != 2 {
			continue
		}
		s, err := New(Config{Seed: 5}, sc)
		require.NoError(t, err, name)
		tr := s.Truth()
		require.Len(t, tr, 2)
		require.Equal(t, sc.Faults[0].Kind, tr[0].Kind)
		require.Equal(t, sc.Faults[1].Kind, tr[1].Kind)
		require.NotEqual(t, tr[0].Entity, tr[1].Entity, name)
		if tr[0].Entity["node"] != "" && tr[1].Entity["node"] != "" {
			require.NotEqual(t, tr[0].Entity["node"], tr[1].Entity["node"], "%s: each fault on its own node", name)
		}
	}
	// A pinned fault stays where it is pinned.
	s, err := New(Config{Seed: 5}, DemoScenario())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"node": "gpu-node-06", "gpu": "3"}, s.Truth()[0].Entity)
	_, err = New(Config{Seed: 5, Nodes: 5, TrainingNodes: 3}, DemoScenario())
	require.ErrorContains(t, err, `node "gpu-node-06" is not one this fault can hit`)
}
