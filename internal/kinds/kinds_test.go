package kinds_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/kinds"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
)

// TestDefinitions: every kind has a unique name, a layer, a title and an
// action; priors are probabilities.
func TestDefinitions(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range kinds.All() {
		require.False(t, seen[k.Name], "kind %s registered twice", k.Name)
		seen[k.Name] = true
		require.NotEmpty(t, k.Layer, k.Name)
		require.NotEmpty(t, k.Title, k.Name)
		require.NotEmpty(t, k.Action, k.Name)
		require.True(t, k.Prior >= 0 && k.Prior < 1, "%s prior %v", k.Name, k.Prior)
		got, ok := kinds.Lookup(k.Name)
		require.True(t, ok)
		require.Equal(t, k.Name, got.Name)
	}
	for _, s := range kinds.Symptoms() {
		require.NotEmpty(t, s.Words, s.Name)
	}
	_, ok := kinds.Lookup("gpu_xid_eror")
	require.False(t, ok)
}

// TestReadsAreCatalogSignals: a signal a kind declares that the catalog
// does not know (a typo) fails here, instead of silently reading nothing.
func TestReadsAreCatalogSignals(t *testing.T) {
	cat := catalog.Default()
	for _, r := range kinds.Reads() {
		_, ok := cat.Signal(r.Signal)
		require.True(t, ok, "signal %q is declared by a kind but not in the catalog", r.Signal)
	}
	require.True(t, kinds.Declares("gpu.temp"))
	require.False(t, kinds.Declares("gpu.tmep"))
}

// TestCatalogXIDCauses: the XID table names registered kinds only.
func TestCatalogXIDCauses(t *testing.T) {
	for _, x := range catalog.Default().XIDs() {
		if x.Cause == "" {
			continue
		}
		_, ok := kinds.Lookup(x.Cause)
		require.True(t, ok, "XID %d evidences %q, which is not a registered kind", x.Code, x.Cause)
	}
}

// TestSimulatorFaults: every fault the simulators inject is a registered
// kind.
func TestSimulatorFaults(t *testing.T) {
	for _, name := range sim.ScenarioNames() {
		sc, err := sim.ParseScenario(name)
		require.NoError(t, err, name)
		for _, f := range sc.Faults {
			_, ok := kinds.Lookup(f.Kind)
			require.True(t, ok, "scenario %s injects %q, which is not a registered kind", name, f.Kind)
		}
	}
	for _, name := range microsvc.Scenarios() {
		_, ok := kinds.Lookup(strings.SplitN(name, "/", 2)[0])
		require.True(t, ok, "microservice scenario %s is not of a registered kind", name)
	}
}

// TestDesignKinds: DESIGN.md's cause, finding and symptom kinds are
// exactly the registry's.
func TestDesignKinds(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "DESIGN.md")
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skip("../shared/DESIGN.md is not beside this checkout")
	}
	require.NoError(t, err)
	doc := string(b)
	table := section(t, doc, "Cause and finding kinds:", "## ")
	var design []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.Contains(line, "---") || strings.HasPrefix(line, "| layer") {
			continue
		}
		cells := strings.Split(line, "|")
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cells[2], -1) {
			design = append(design, m[1])
		}
	}
	slices.Sort(design)
	names := kinds.Names()
	slices.Sort(names)
	require.Equal(t, design, names, "DESIGN.md's kinds and internal/kinds disagree")

	syms := section(t, doc, "Symptom kinds:", "\n\n")
	var designSyms []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(syms, -1) {
		designSyms = append(designSyms, m[1])
	}
	var regSyms []string
	for _, s := range kinds.Symptoms() {
		regSyms = append(regSyms, s.Name)
	}
	require.Equal(t, designSyms, regSyms, "DESIGN.md's symptom kinds and internal/kinds disagree")
}

func section(t *testing.T, doc, start, end string) string {
	t.Helper()
	i := strings.Index(doc, start)
	require.GreaterOrEqual(t, i, 0, "DESIGN.md has no %q", start)
	rest := doc[i+len(start):]
	if j := strings.Index(rest, end); j >= 0 {
		return rest[:j]
	}
	return rest
}

// TestOfLayer: the GPU hardware kinds, as the evaluation's bars take them.
func TestOfLayer(t *testing.T) {
	require.Equal(t, []string{"nvlink_degraded", "gpu_xid_error", "gpu_lost", "gpu_thermal_throttle",
		"gpu_power_throttle", "gpu_memory_errors", "pcie_degraded"}, kinds.OfLayer(kinds.LayerGPU))
}
