package reqpath_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	onset := runStart().Add(time.Minute)
	f := func(name, want string, edit func(c *reqpath.Config)) {
		t.Run(name, func(t *testing.T) {
			c := reqpath.Config{Start: runStart()}
			edit(&c)
			_, err := reqpath.New(c)
			if want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, reqpath.ErrInvalidConfig)
			require.ErrorContains(t, err, want)
		})
	}
	f("defaults", "", func(*reqpath.Config) {})
	f("no start", "start is required", func(c *reqpath.Config) { c.Start = time.Time{} })
	f("negative duration", "duration -1m0s is outside", func(c *reqpath.Config) { c.Duration = -time.Minute })
	f("interval longer than the run", "interval 2h0m0s is outside", func(c *reqpath.Config) { c.Interval = 2 * time.Hour })
	f("negative rate", "requests per minute -5 is outside", func(c *reqpath.Config) { c.RequestsPerMinute = -5 })
	f("sample ratio over 1", "sample ratio 1.5 is outside (0, 1]", func(c *reqpath.Config) { c.SampleRatio = 1.5 })
	f("repeated tenant", `tenant "a" is empty or repeated`, func(c *reqpath.Config) { c.Tenants = []string{"a", "a"} })
	f("pod without node", `app "ai-app" has a pod without a name or a node`, func(c *reqpath.Config) {
		c.App = reqpath.Deployment{Name: "ai-app", Namespace: "x", Version: "1", Pods: []reqpath.Pod{{Name: "ai-app-0"}}}
	})
	f("service twice", `service name "api-gateway" is used twice`, func(c *reqpath.Config) {
		c.App = reqpath.Deployment{Name: "api-gateway", Namespace: "x", Version: "1", Pods: []reqpath.Pod{{Name: "p", Node: "n"}}}
	})
	f("model server without model", `model server "m" needs a model`, func(c *reqpath.Config) {
		c.ModelServers = []reqpath.ModelServer{{Deployment: reqpath.Deployment{Name: "m", Namespace: "x", Version: "1", Pods: []reqpath.Pod{{Name: "p", Node: "n"}}}}}
	})
	f("unknown fault", "fault 0 (nvlink_degraded): unknown kind", func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: "nvlink_degraded", Onset: onset}}
	})
	f("unknown variant", `unknown variant "loud"`, func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindDependencySlow, Variant: "loud", Onset: onset}}
	})
	f("onset after the run", "onset 2026-11-12T04:00:00Z is outside the run", func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindDependencySlow, Onset: runStart().Add(2 * time.Hour)}}
	})
	f("slow service off the path", `service "postgres" is not on the path`, func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindDependencySlow, Onset: onset, Entity: map[string]string{"service": "postgres"}}}
	})
	f("speed-up", "severity 0.5 (a latency multiplier) is outside [1, 1000]", func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindDependencySlow, Onset: onset, Severity: 0.5}}
	})
	f("unknown tenant", `tenant "tenant-z" is not configured`, func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindTenantFailure, Onset: onset, Entity: map[string]string{"tenant": "tenant-z"}}}
	})
	f("rollout of the vector DB", `service "vector-db" is neither the app nor a model server`, func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindBadRollout, Onset: onset, Entity: map[string]string{"service": "vector-db"}}}
	})
	f("saturated gateway", `service "api-gateway" is not a model server`, func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindInferenceCapacitySaturated, Onset: onset, Entity: map[string]string{"service": "api-gateway"}}}
	})
	f("preempted fraction over 1", "severity 2 (a preempted fraction) is outside (0, 1]", func(c *reqpath.Config) {
		c.Faults = []reqpath.Fault{{Kind: reqpath.KindKVCacheExhausted, Onset: onset, Severity: 2}}
	})
}

func TestWithDefaultsCompletesFaults(t *testing.T) {
	t.Parallel()
	onset := runStart().Add(time.Minute)
	c := reqpath.Config{Start: runStart(), Faults: []reqpath.Fault{
		{Kind: reqpath.KindDependencySlow, Onset: onset},
		{Kind: reqpath.KindTenantFailure, Variant: reqpath.VariantSubtle, Onset: onset},
		{Kind: reqpath.KindBadRollout, Onset: onset, Entity: map[string]string{"workload": "vllm-llama-3-1-70b"}},
		{Kind: reqpath.KindInferenceCapacitySaturated, Onset: onset, Entity: map[string]string{"model": "meta-llama/Llama-3.1-70B-Instruct"}},
		{Kind: reqpath.KindKVCacheExhausted, Onset: onset, Severity: 0.3},
	}}.WithDefaults()
	want := []reqpath.Fault{
		{Kind: reqpath.KindDependencySlow, Onset: onset, Severity: 5,
			Entity: map[string]string{"service": "vector-db", "namespace": "rag"}},
		{Kind: reqpath.KindTenantFailure, Variant: reqpath.VariantSubtle, Onset: onset, Severity: 0.05,
			Entity: map[string]string{"tenant": "tenant-c"}},
		{Kind: reqpath.KindBadRollout, Onset: onset, Severity: 0.25,
			Entity: map[string]string{"workload": "vllm-llama-3-1-70b", "service": "vllm-llama-3-1-70b", "namespace": "inference",
				"model": "meta-llama/Llama-3.1-70B-Instruct", "version": "v0.12.0"}},
		{Kind: reqpath.KindInferenceCapacitySaturated, Onset: onset, Severity: 2.2,
			Entity: map[string]string{"service": "vllm-llama-3-1-70b", "namespace": "inference", "model": "meta-llama/Llama-3.1-70B-Instruct"}},
		{Kind: reqpath.KindKVCacheExhausted, Onset: onset, Severity: 0.3,
			Entity: map[string]string{"service": "vllm-llama-3-1-8b", "namespace": "inference", "model": "meta-llama/Llama-3.1-8B-Instruct"}},
	}
	require.Equal(t, want, c.Faults)
	require.NoError(t, c.Validate())
	for _, k := range reqpath.Kinds() {
		require.Positive(t, reqpath.DefaultSeverity(k, ""), k)
		require.Positive(t, reqpath.DefaultSeverity(k, reqpath.VariantSubtle), k)
	}
}
