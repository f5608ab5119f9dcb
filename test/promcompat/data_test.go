package promcompat

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// testSameData checks that both servers hold exactly the dump: the same
// metric names and, for every name, the same series with the same samples.
// The only rewrite is the documented one: Prometheus 3 normalises the le
// label of classic histogram buckets on ingestion (le="1" becomes "1.0"),
// so Prometheus 2.42's le values are normalised the same way before the
// comparison (the differences table asserts the normalisation itself).
func testSameData(t *testing.T, env *compatEnv) {
	promNames, err := env.prom.labelValues(t.Context(), "__name__", nil)
	require.NoError(t, err)
	vigilNames, err := env.vigil.labelValues(t.Context(), "__name__", nil)
	require.NoError(t, err)
	require.Equal(t, promNames, vigilNames, "metric names")
	require.NotEmpty(t, promNames, "Prometheus serves no data: did it load the backfilled blocks?")

	// Every sample of the dump lies within 5h before this time.
	at := evalAt(4*time.Hour + 30*time.Minute)
	total := 0
	for _, name := range promNames {
		expr := `{__name__="` + name + `"}[5h]`
		want, err := env.prom.query(t.Context(), expr, at)
		require.NoError(t, err, "prometheus: %s", expr)
		got, err := env.vigil.query(t.Context(), expr, at)
		require.NoError(t, err, "vigil: %s", expr)
		if env.buckets[name] {
			want = want.mapLabels(normaliseLe)
		}
		require.Empty(t, diffResults(want, got, "prometheus", "vigil", false), "samples of %s", name)
		for _, s := range want.Series {
			total += len(s.Points)
		}
	}
	t.Logf("%d metric names, %d samples: the same in both", len(promNames), total)
}

// normaliseLe formats the le label as OpenMetrics (and Prometheus 3's
// parsers) do: "1" becomes "1.0", "1e-05" stays "1e-05".
func normaliseLe(m map[string]string) map[string]string {
	if le, ok := m["le"]; ok {
		if f, err := strconv.ParseFloat(le, 64); err == nil {
			m["le"] = labels.FormatOpenMetricsFloat(f)
		}
	}
	return m
}
