package microsvc_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
)

// TestTruthJSON: the truth and the decoys have internal/sim's JSON fields,
// so that truth.json reads the same.
func TestTruthJSON(t *testing.T) {
	f := func(a, b any) {
		t.Helper()
		require.Equal(t, jsonFields(reflect.TypeOf(a)), jsonFields(reflect.TypeOf(b)))
	}
	f(microsvc.Fault{}, sim.Fault{})
	f(microsvc.Decoy{}, sim.Decoy{})

	g, err := microsvc.New(microsvc.Config{Seed: 1}, microsvc.FaultSpec{Kind: microsvc.FaultLatency, Service: "carts"})
	require.NoError(t, err)
	b, err := json.Marshal(g.Truth())
	require.NoError(t, err)
	var back []sim.Fault
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "metric_anomaly", back[0].Kind)
	require.Equal(t, "latency", back[0].Variant)
	require.Equal(t, map[string]string{"service": "carts"}, back[0].Entity)
}

func jsonFields(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		out[f.Tag.Get("json")] = f.Type.String()
	}
	return out
}
