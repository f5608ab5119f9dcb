package sim

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestRequestPathMatchesCluster: the request path's model server is the
// simulated vLLM deployment — its pods on their nodes — and its files decode
// with pdata, the same bytes every time.
func TestRequestPathMatchesCluster(t *testing.T) {
	sc, err := ParseScenario("inference_capacity_saturated+kv_cache_exhausted")
	require.NoError(t, err)
	s, err := New(Config{Seed: 9, Duration: 4 * time.Minute}, sc)
	require.NoError(t, err)
	c := newCluster(s.Config())
	pods := map[string]string{}
	for _, r := range c.serve.replicas {
		pods[r.pod.name] = r.pod.node.name
	}
	rc := s.RequestPath()
	require.Equal(t, c.serve.name, rc.ModelServers[0].Name)
	require.Equal(t, DefaultServedModel, rc.ModelServers[0].Model)
	for _, p := range rc.ModelServers[0].Pods {
		require.Equal(t, pods[p.Name], p.Node)
	}
	require.Len(t, rc.Faults, 2)
	for i, f := range s.Truth() {
		require.Equal(t, f.Kind, rc.Faults[i].Kind)
		require.Equal(t, f.Onset, rc.Faults[i].Onset)
	}

	var traces, logs bytes.Buffer
	require.NoError(t, s.WriteRequestPath(&traces, &logs))
	var again bytes.Buffer
	require.NoError(t, s.WriteRequestPath(&again, &bytes.Buffer{}))
	require.Equal(t, traces.Bytes(), again.Bytes())

	seen := map[string]bool{}
	var tu ptrace.JSONUnmarshaler
	sc2 := bufio.NewScanner(&traces)
	sc2.Buffer(nil, 1<<26)
	for sc2.Scan() {
		td, err := tu.UnmarshalTraces(sc2.Bytes())
		require.NoError(t, err)
		for i := range td.ResourceSpans().Len() {
			attrs := td.ResourceSpans().At(i).Resource().Attributes()
			if svc, _ := attrs.Get("service.name"); svc.Str() == c.serve.name {
				pod, _ := attrs.Get("k8s.pod.name")
				node, _ := attrs.Get("k8s.node.name")
				require.Equal(t, pods[pod.Str()], node.Str(), "pod %s", pod.Str())
				seen[pod.Str()] = true
			}
		}
	}
	require.NoError(t, sc2.Err())
	require.Len(t, seen, len(pods), "every replica serves")
	var lu plog.JSONUnmarshaler
	first, _, _ := bytes.Cut(logs.Bytes(), []byte("\n"))
	ld, err := lu.UnmarshalLogs(first)
	require.NoError(t, err)
	require.Positive(t, ld.LogRecordCount())
}

// TestTenantFailureKeepsVLLMLoad: a tenant's failing requests do not touch
// the model server's metrics: vLLM's series of a tenant_failure run are
// those of the healthy run of its seed.
func TestTenantFailureKeepsVLLMLoad(t *testing.T) {
	for _, name := range []string{"tenant_failure", "tenant_failure/subtle"} {
		healthy, faulty := simulateRun(t, Healthy, 11, 0), simulateRun(t, name, 11, 0)
		for _, q := range []string{`sum(vllm:request_success_total)`, `sum(vllm:num_requests_running)`, `sum(vllm:prompt_tokens_total)`} {
			require.Equal(t, healthy.value(t, q, healthy.end()), faulty.value(t, q, faulty.end()), "%s: %s", name, q)
		}
	}
}
