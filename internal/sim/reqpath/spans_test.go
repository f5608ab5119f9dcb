package reqpath_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// graphOf is the service graph `diagnose --input` derives from traces:
// each edge's request count at the end, by client → server.
func graphOf(t *testing.T, traces []byte, at time.Time) map[string]float64 {
	t.Helper()
	opts := fileimport.DefaultOptions(at)
	opts.DeriveFromOTLP = true
	f, err := fileimport.Read("traces.otlp.json", bytes.NewReader(traces), opts)
	require.NoError(t, err)
	out := map[string]float64{}
	require.NoError(t, f.Each(func(lset labels.Labels, _ int64, v float64) error {
		if lset.Get(model.MetricNameLabel) == "traces_service_graph_request_total" {
			out[lset.Get("client")+" → "+lset.Get("server")] = v
		}
		return nil
	}))
	return out
}

// The three ways of recording calls give the same service graph between
// the instrumented services: the graph comes from the span tree where no
// client/server pair records a call.
func TestSpanStylesGiveOneServiceGraph(t *testing.T) {
	t.Parallel()
	base := reqpath.Config{Seed: 3, Start: runStart(), Duration: 10 * time.Minute, Faults: []reqpath.Fault{
		{Kind: reqpath.KindDependencySlow, Onset: runStart().Add(4 * time.Minute), Entity: map[string]string{"service": "vector-db"}},
	}}
	at := runStart().Add(time.Hour)
	graphs := map[string]map[string]float64{}
	kinds := map[string]map[ptrace.SpanKind]int{}
	for _, style := range []string{reqpath.SpansPaired, reqpath.SpansServerOnly, reqpath.SpansNoKind} {
		cfg := base
		cfg.Spans = style
		traces, logs := writeFiles(t, cfg)
		graphs[style] = graphOf(t, traces, at)
		kinds[style] = map[ptrace.SpanKind]int{}
		for _, sp := range decodeFiles(t, traces, logs).spans {
			kinds[style][sp.kind]++
		}
	}
	// The variants are what they say.
	require.Zero(t, kinds[reqpath.SpansNoKind][ptrace.SpanKindServer]+kinds[reqpath.SpansNoKind][ptrace.SpanKindClient])
	require.Less(t, kinds[reqpath.SpansServerOnly][ptrace.SpanKindClient], kinds[reqpath.SpansPaired][ptrace.SpanKindClient]/2)
	require.Equal(t, kinds[reqpath.SpansPaired][ptrace.SpanKindServer], kinds[reqpath.SpansServerOnly][ptrace.SpanKindServer])

	paired := graphs[reqpath.SpansPaired]
	inCluster := []string{"api-gateway → ai-app", "ai-app → vector-db", "ai-app → vllm-llama-3-1-8b", "ai-app → vllm-llama-3-1-70b"}
	for _, e := range inCluster {
		require.Positive(t, paired[e], "%s in %v", e, paired)
		require.Equal(t, paired[e], graphs[reqpath.SpansServerOnly][e], "server spans only: %s", e)
		require.Equal(t, paired[e], graphs[reqpath.SpansNoKind][e], "no span kinds: %s", e)
	}
	// Calls to the tool, which has no spans, are the caller's spans naming
	// their peer: the same virtual-node edge in every style.
	tool := "ai-app → web-search-api"
	require.Positive(t, paired[tool])
	require.Equal(t, paired[tool], graphs[reqpath.SpansServerOnly][tool])
	require.Equal(t, paired[tool], graphs[reqpath.SpansNoKind][tool])
}

func TestSpanStyleValidated(t *testing.T) {
	cfg := reqpath.Config{Start: runStart(), Spans: "pairs"}.WithDefaults()
	require.ErrorIs(t, cfg.Validate(), reqpath.ErrInvalidConfig)
}
