package fileimport_test

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

// scalarOf returns the value of a one-element vector or a scalar.
func scalarOf(t *testing.T, v parser.Value) float64 {
	t.Helper()
	switch v := v.(type) {
	case promql.Scalar:
		return v.V
	case promql.Vector:
		require.Len(t, v, 1, "vector %v", v)
		return v[0].F
	}
	t.Fatalf("not a scalar or vector: %v", v)
	return 0
}

// vectorOf evaluates q at ts and returns the values keyed by the value of
// label key.
func vectorOf(t *testing.T, s store.Store, q string, ts time.Time, key string) map[string]float64 {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, ts)
	require.NoError(t, err)
	vec, ok := v.(promql.Vector)
	require.True(t, ok, "%s is not a vector: %v", q, v)
	out := make(map[string]float64, len(vec))
	for _, smp := range vec {
		out[smp.Metric.Get(key)] = smp.F
	}
	return out
}
