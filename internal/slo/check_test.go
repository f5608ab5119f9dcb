package slo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"
)

// fakeStore is a Lookup over a fixed set of metrics.
func fakeStore(metrics map[string][]float64) Lookup {
	return func(_ context.Context, metric string) (bool, []float64, error) {
		les, ok := metrics[metric]
		return ok, les, nil
	}
}

// TestCheckMetricsPresets: a cluster that runs vLLM alone gets a warning for
// each preset it has no metric of, none for vLLM's.
func TestCheckMetricsPresets(t *testing.T) {
	store := fakeStore(map[string][]float64{
		"vllm:time_to_first_token_seconds_bucket":   vllmTTFTBuckets,
		"vllm:time_per_output_token_seconds_bucket": vllmITLBuckets,
		"vllm:num_requests_waiting":                 nil,
	})
	warns, err := CheckMetrics(t.Context(), Presets(), store)
	require.NoError(t, err)
	var slos []string
	for _, w := range warns {
		slos = append(slos, w.SLO)
	}
	require.ElementsMatch(t, []string{PresetRequestLatency, PresetTritonLatency, PresetModelAccuracy, PresetFeatureDrift,
		PresetGPUSMUtilisation, PresetTrainingJobSuccess, PresetNVLinkBandwidth}, slos)
	for _, w := range warns {
		if w.SLO == PresetModelAccuracy {
			require.Equal(t, "slos[5].sli.gauge (model-accuracy): no series of model_accuracy in the store: its rules would never fire", w.String())
		}
		if w.SLO == PresetTrainingJobSuccess {
			require.Contains(t, w.Msg, "kube_job_failed or kube_job_status_succeeded")
		}
	}
}

// TestCheckMetricsBuckets: a threshold off the bounds the store holds is a
// warning that names the line of the threshold.
func TestCheckMetricsBuckets(t *testing.T) {
	spec, err := Parse("slo.yaml", []byte(`slos:
  - name: ttft
    objective: 99
    sli:
      latency:
        sources:
          - metric: vllm:time_to_first_token_seconds
          - metric: sglang:time_to_first_token_seconds
        threshold: 0.75
`))
	require.NoError(t, err)
	require.Empty(t, ValidateBuckets(spec, KnownBuckets()), "0.75 is one of vLLM's bounds")
	warns, err := CheckMetrics(t.Context(), spec, fakeStore(map[string][]float64{
		"vllm:time_to_first_token_seconds_bucket": {0.1, 0.25, 0.5, 1},
	}))
	require.NoError(t, err)
	require.Len(t, warns, 1)
	require.Equal(t, "slo.yaml:9: slos[0].sli.latency.threshold (ttft): 0.75 s is not a bucket boundary of vllm:time_to_first_token_seconds: its nearest le bounds are 0.5 and 1", warns[0].String())

	warns, err = CheckMetrics(t.Context(), spec, fakeStore(nil))
	require.NoError(t, err)
	require.Len(t, warns, 1)
	require.Equal(t, "slo.yaml:5: slos[0].sli.latency (ttft): no series of vllm:time_to_first_token_seconds_bucket or sglang:time_to_first_token_seconds_bucket in the store: its rules would never fire", warns[0].String())
}

func TestCheckMetricsError(t *testing.T) {
	boom := errors.New("connection refused")
	_, err := CheckMetrics(t.Context(), Presets(), func(context.Context, string) (bool, []float64, error) {
		return false, nil, boom
	})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "check SLO llm-inter-token-latency")
}

// TestStoreLookup reads a TSDB: existence and le bounds within the range.
func TestStoreLookup(t *testing.T) {
	db := teststorage.New(t)
	at := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	app := db.Appender(t.Context())
	for _, le := range []string{"0.5", "1.0", "2.5", "+Inf"} {
		_, err := app.Append(0, labels.FromStrings("__name__", "vllm:time_to_first_token_seconds_bucket", "le", le, "model_name", "m"), at.UnixMilli(), 1)
		require.NoError(t, err)
	}
	_, err := app.Append(0, labels.FromStrings("__name__", "model_accuracy", "model", "m"), at.UnixMilli(), 0.9)
	require.NoError(t, err)
	require.NoError(t, app.Commit())

	lookup := StoreLookup(db, at.Add(-time.Hour), at)
	ok, les, err := lookup(t.Context(), "vllm:time_to_first_token_seconds_bucket")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []float64{0.5, 1, 2.5}, les)
	ok, les, err = lookup(t.Context(), "model_accuracy")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, les)
	ok, _, err = lookup(t.Context(), "vigil_feature_drift")
	require.NoError(t, err)
	require.False(t, ok)

	before := StoreLookup(db, at.Add(-2*time.Hour), at.Add(-time.Hour))
	ok, _, err = before(t.Context(), "model_accuracy")
	require.NoError(t, err)
	require.False(t, ok, "a sample after the range does not count")
}
