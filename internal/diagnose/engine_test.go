package diagnose_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
)

// simDuration is how long every simulated run of these tests lasts: long
// enough for a baseline before the onset (drawn between 40% and 65% of
// the run) and a few minutes after it.
const simDuration = 30 * time.Minute

// simRun is one simulated run in an embedded store.
type simRun struct {
	sim   *sim.Simulator
	st    *store.Embedded
	end   time.Time
	truth []sim.Fault
}

// simulate runs scenario name with seed into a fresh embedded store that
// lives until the test ends.
func simulate(t testing.TB, name string, seed uint64) *simRun {
	t.Helper()
	return simulateConfig(t, name, sim.Config{Seed: seed, Duration: simDuration})
}

func simulateConfig(t testing.TB, name string, cfg sim.Config) *simRun {
	t.Helper()
	sc, err := sim.ParseScenario(name)
	require.NoError(t, err)
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	clock := sim.NewClock(s.Config().Start)
	scfg := store.DefaultEmbeddedConfig(t.TempDir())
	scfg.MaxExemplars = 0
	st, err := store.OpenEmbedded(scfg, clock.Now, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, s.Run(t.Context(), st, sim.RunOptions{Clock: clock}))
	return &simRun{sim: s, st: st, end: clock.Now(), truth: s.Truth()}
}

// diagnoseAt diagnoses src at at with the default engine.
func diagnoseAt(t testing.TB, src diagnose.Source, at time.Time) *diagnose.Report {
	t.Helper()
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	rep, err := eng.Diagnose(t.Context(), src, at)
	require.NoError(t, err)
	return rep
}

// top is the report's rank-1 cause, or its rank-1 finding when it has no
// cause.
func top(rep *diagnose.Report) (diagnose.Cause, bool) {
	switch {
	case len(rep.Causes) > 0:
		return rep.Causes[0], true
	case len(rep.Findings) > 0:
		return rep.Findings[0], true
	}
	return diagnose.Cause{}, false
}

// brief is a report in a few lines, for failure messages.
func brief(rep *diagnose.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "healthy=%t\n", rep.Healthy)
	for _, s := range rep.Symptoms {
		fmt.Fprintf(&b, "  symptom %s %v since %s\n", s.Kind, s.Entity, s.Since.Format(time.TimeOnly))
	}
	for _, c := range rep.Causes {
		fmt.Fprintf(&b, "  cause %d %s %v %.2f\n", c.Rank, c.Kind, c.Entity, c.Confidence)
	}
	for _, c := range rep.Findings {
		fmt.Fprintf(&b, "  finding %d %s %v %.2f\n", c.Rank, c.Kind, c.Entity, c.Confidence)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "  warning %s\n", w)
	}
	return b.String()
}

// faultKinds are the fault kinds the engine covers.
var faultKinds = []string{
	"nvlink_degraded", "gpu_xid_error", "gpu_lost", "gpu_thermal_throttle", "gpu_power_throttle",
	"gpu_memory_errors", "pcie_degraded", "node_down", "node_cpu_saturated", "node_memory_pressure",
	"node_network_degraded", "input_pipeline_slow", "pod_oom_killed", "pod_crash_loop", "pod_evicted",
	"straggler", "exporter_down", "inference_capacity_saturated", "kv_cache_exhausted", "gpu_idle", "bad_rollout", "model_drift",
}

// Every label spelling the simulator knows, in two sets: the newest
// exporters' and the oldest (IP:port instances, --use-old-namespace,
// NVLink typed counter, kube-state-metrics scraped without honor_labels,
// DCGM's NOT_SUPPORTED blank, vLLM 0.9).
var (
	newLabels = sim.Labels{DCGMHost: sim.HostnameLower, DCGMPod: sim.PodLabelsNew, NVLinkType: sim.NVLinkGauge,
		NodeInstance: sim.InstanceName, XIDCount: sim.Off, NVLinkErrors: sim.Off, KSM: sim.KSMHonored,
		DCGMBlank: sim.BlankAbsent, VLLM: sim.VLLMNew}
	oldLabels = sim.Labels{DCGMHost: sim.HostnameUpper, DCGMPod: sim.PodLabelsOld, NVLinkType: sim.NVLinkCounter,
		NodeInstance: sim.InstanceIP, XIDCount: sim.On, NVLinkErrors: sim.On, KSM: sim.KSMExported,
		DCGMBlank: sim.BlankSentinel, VLLM: sim.VLLMOld}
)

// TestDiagnoseFaults simulates each fault kind for 30 minutes and
// diagnoses at the end: the rank-1 cause (or finding, when there is no
// cause) names the injected fault with confidence ≥ 0.5, the report keeps
// the contract, and no decoy is called at 0.5 or above. Seed 1 speaks the
// newest label spellings, seed 2 the oldest. Each run costs under a second
// on two cores.
func TestDiagnoseFaults(t *testing.T) {
	for _, tc := range []struct {
		seed   uint64
		labels sim.Labels
	}{{1, newLabels}, {2, oldLabels}} {
		for _, kind := range faultKinds {
			t.Run(fmt.Sprintf("%s/seed=%d", kind, tc.seed), func(t *testing.T) {
				run := simulateConfig(t, kind, sim.Config{Seed: tc.seed, Duration: simDuration, Labels: tc.labels})
				require.Len(t, run.truth, 1)
				truth := run.truth[0]
				rep := diagnoseAt(t, run.st, run.end)
				c, ok := top(rep)
				require.True(t, ok, "no cause and no finding for %s %v\n%s", truth.Kind, truth.Entity, brief(rep))
				require.Equal(t, truth.Kind, c.Kind, "truth %v\n%s", truth.Entity, brief(rep))
				require.True(t, eval.EntityMatch(truth.Entity, c.Entity), "rank 1 names %v, the truth is %v\n%s", c.Entity, truth.Entity, brief(rep))
				require.GreaterOrEqual(t, c.Confidence, 0.5, brief(rep))
				require.False(t, rep.Healthy, brief(rep))
				requireContract(t, run, rep)
				requireNoDecoyCalled(t, run, rep)
				if truth.Kind == diagnose.KindExporterDown {
					require.True(t, slices.ContainsFunc(rep.Coverage.Blind, func(b diagnose.BlindSpot) bool { return eval.EntityMatch(truth.Entity, b.Entity) }),
						"Vigil is blind to %v: %+v", truth.Entity, rep.Coverage.Blind)
				}
			})
		}
	}
}

// TestDiagnoseHealthy: healthy runs of seeds 1 to 3 are healthy, with no
// symptom and nothing at 0.5 or above, although every run holds the
// decoys (a warm GPU, an old XID, an old OOMKilled, one correctable row
// remap, a PCIe replay blip, a traffic spike).
func TestDiagnoseHealthy(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			run := simulate(t, sim.Healthy, seed)
			require.Empty(t, run.truth)
			kinds := map[string]bool{}
			for _, d := range run.sim.Decoys() {
				kinds[d.Kind] = true
			}
			require.Len(t, kinds, 6, "every decoy kind is in the run")
			rep := diagnoseAt(t, run.st, run.end)
			require.True(t, rep.Healthy, brief(rep))
			require.Empty(t, rep.Symptoms, brief(rep))
			for _, c := range append(slices.Clone(rep.Causes), rep.Findings...) {
				require.Less(t, c.Confidence, 0.5, brief(rep))
			}
			requireContract(t, run, rep)
			requireNoDecoyCalled(t, run, rep)
		})
	}
}

// requireNoDecoyCalled: no cause or finding at 0.5 or above names a
// decoy's entity, unless it also names an injected fault.
func requireNoDecoyCalled(t *testing.T, run *simRun, rep *diagnose.Report) {
	t.Helper()
	for _, c := range append(slices.Clone(rep.Causes), rep.Findings...) {
		if c.Confidence < 0.5 || slices.ContainsFunc(run.truth, func(f sim.Fault) bool { return eval.EntityMatch(f.Entity, c.Entity) }) {
			continue
		}
		for _, d := range run.sim.Decoys() {
			require.False(t, eval.EntityMatch(d.Entity, c.Entity), "decoy %s (%s) called as %s %v %.2f", d.Kind, d.Summary, c.Kind, c.Entity, c.Confidence)
		}
	}
}

// canonicalKeys are DESIGN.md's entity keys.
var canonicalKeys = []string{"node", "gpu", "gpu_instance", "uuid", "pod", "namespace", "container", "workload", "service", "model", "tenant"}

// requireContract checks a report against DESIGN.md's contract of
// `vigil diagnose`: ranks from 1, confidences in [0, 1], canonical entity
// keys, node names rather than addresses, namespaces on pods, workloads
// and models, the healthy rule, the evaluation time, and the JSON field
// names.
func requireContract(t *testing.T, run *simRun, rep *diagnose.Report) {
	t.Helper()
	require.True(t, rep.At.Equal(run.end), "at %s, want %s", rep.At, run.end)
	nodes := map[string]bool{}
	for i := 1; i <= run.sim.Config().Nodes; i++ {
		nodes[fmt.Sprintf("gpu-node-%02d", i)] = true
	}
	checkEntity := func(what string, e diagnose.Entity) {
		require.NotEmpty(t, e, what)
		for k, v := range e {
			require.Contains(t, canonicalKeys, k, "%s: entity key %q of %v", what, k, e)
			require.NotEmpty(t, v, "%s: %v", what, e)
		}
		if n, ok := e["node"]; ok {
			require.True(t, nodes[n], "%s: node %q is not a Kubernetes node name", what, n)
		}
		for _, k := range []string{"pod", "workload", "model"} {
			if _, ok := e[k]; ok {
				require.Contains(t, e, "namespace", "%s: a %s entity carries its namespace: %v", what, k, e)
			}
		}
	}
	require.False(t, rep.Blind(), "the simulator speaks vocabularies Vigil knows")
	cfg := run.sim.Config()
	// Every GPU and node is seen but those of a node that went down.
	gpus, hosts := rep.Coverage.Layers.GPU.Entities, rep.Coverage.Layers.Node.Entities
	require.True(t, gpus == cfg.Nodes*cfg.GPUsPerNode || gpus == (cfg.Nodes-1)*cfg.GPUsPerNode, "%d GPUs seen", gpus)
	require.True(t, hosts == cfg.Nodes || hosts == cfg.Nodes-1, "%d nodes seen by node-exporter", hosts)
	for _, b := range rep.Coverage.Blind {
		checkEntity("blind spot", b.Entity)
		require.NotEmpty(t, b.Reason)
	}
	symptom := false
	for _, s := range rep.Symptoms {
		symptom = true
		checkEntity("symptom "+s.Kind, s.Entity)
		require.Contains(t, symptomKinds, s.Kind)
		require.False(t, s.Since.After(rep.At), "symptom since %s after at", s.Since)
		require.NotEmpty(t, s.Summary)
	}
	strong := false
	for _, list := range [][]diagnose.Cause{rep.Causes, rep.Findings} {
		for i, c := range list {
			what := fmt.Sprintf("%s %d", c.Kind, c.Rank)
			require.Equal(t, i+1, c.Rank, what)
			require.Contains(t, causeKinds, c.Kind, what)
			require.GreaterOrEqual(t, c.Confidence, 0.0, what)
			require.LessOrEqual(t, c.Confidence, 1.0, what)
			if i > 0 {
				require.LessOrEqual(t, c.Confidence, list[i-1].Confidence+0.05, "%s: best first (priors only break near-ties)", what)
			}
			strong = strong || c.Confidence >= 0.5
			checkEntity(what, c.Entity)
			require.NotEmpty(t, c.Summary, what)
			require.NotEmpty(t, c.Evidence, what)
			for _, ev := range c.Evidence {
				require.NotEmpty(t, ev.Signal, what)
				require.NotEmpty(t, ev.Summary, what)
			}
			if list := rep.Causes; len(list) > 0 && c.Rank == list[0].Rank && c.Kind == list[0].Kind {
				require.NotNil(t, c.Since, "%s: the rank-1 cause has its onset", what)
			}
			if c.Since != nil {
				require.False(t, c.Since.After(rep.At), "%s since %s after at", what, c.Since)
			}
			for _, x := range c.Explains {
				require.Less(t, x, len(rep.Symptoms), what)
			}
		}
	}
	require.Equal(t, !symptom && !strong, rep.Healthy, "healthy is true exactly when there is no symptom and nothing ≥ 0.5")
	requireJSONFields(t, rep)
}

// Symptom and cause kinds of DESIGN.md.
var (
	symptomKinds = []string{"training_stall", "training_slowdown", "job_failed", "inference_latency_high", "ttft_high",
		"queue_growing", "error_rate_high", "throughput_drop", "slo_burn"}
	causeKinds = []string{"nvlink_degraded", "gpu_xid_error", "gpu_lost", "gpu_thermal_throttle", "gpu_power_throttle",
		"gpu_memory_errors", "pcie_degraded", "node_down", "node_cpu_saturated", "node_memory_pressure",
		"node_network_degraded", "input_pipeline_slow", "pod_oom_killed", "pod_crash_loop", "pod_evicted", "straggler",
		"inference_capacity_saturated", "kv_cache_exhausted", "dependency_slow", "tenant_failure", "bad_rollout",
		"model_drift", "exporter_down", "gpu_idle", "metric_anomaly"}
)

// requireJSONFields checks the JSON names of DESIGN.md: decoded into
// map[string]any, the object has them all, with the right JSON types.
func requireJSONFields(t *testing.T, rep *diagnose.Report) {
	t.Helper()
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"at", "healthy", "symptoms", "causes", "findings", "warnings"} {
		require.Contains(t, m, k)
	}
	at, err := time.Parse(time.RFC3339, m["at"].(string))
	require.NoError(t, err, "at is RFC 3339")
	require.True(t, at.Equal(rep.At))
	require.IsType(t, true, m["healthy"])
	requireCoverageJSON(t, m)
	require.IsType(t, []any{}, m["warnings"], "warnings is an array, never null")
	require.IsType(t, []any{}, m["symptoms"], "symptoms is an array, never null")
	for _, s := range m["symptoms"].([]any) {
		obj := s.(map[string]any)
		for _, k := range []string{"kind", "entity", "since", "summary"} {
			require.Contains(t, obj, k, "symptom field")
		}
		require.IsType(t, map[string]any{}, obj["entity"])
	}
	for _, list := range []string{"causes", "findings"} {
		require.IsType(t, []any{}, m[list], "%s is an array, never null", list)
		for _, c := range m[list].([]any) {
			obj := c.(map[string]any)
			for _, k := range []string{"rank", "kind", "entity", "confidence", "summary", "evidence"} {
				require.Contains(t, obj, k, "%s field", list)
			}
			require.IsType(t, float64(0), obj["rank"])
			require.IsType(t, float64(0), obj["confidence"])
			require.IsType(t, map[string]any{}, obj["entity"])
			for _, e := range obj["evidence"].([]any) {
				ev := e.(map[string]any)
				require.Contains(t, ev, "signal")
				require.Contains(t, ev, "summary")
			}
		}
	}
}
