package cost_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/cost"
)

func TestParsePricesErrors(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		_, err := cost.ParsePrices("p.yaml", []byte(in))
		require.EqualError(t, err, want)
	}
	f("", "p.yaml: empty prices file: it needs a currency and gpu_hourly")
	f("gpu_hourly: {default: 1}\n", `p.yaml: currency: must be an ISO 4217 code such as USD or EUR (prices are never guessed to be in one), got ""`)
	f("currency: dollars\ngpu_hourly: {default: 1}\n", `p.yaml: currency: must be an ISO 4217 code such as USD or EUR (prices are never guessed to be in one), got "DOLLARS"`)
	f("currency: USD\n", "p.yaml: gpu_hourly: names no price: give a price per GPU model (dcgm-exporter's modelName) or a default")
	f("currency: USD\ngpu_hourly: {default: -1}\n", `p.yaml: gpu_hourly["default"]: must not be negative, got -1`)
	f("currency: USD\ngpu_hourly: {default: .nan}\n", `p.yaml: gpu_hourly["default"]: must be a finite number, got NaN`)
	f("currency: USD\ngpu_hourly: {default: 1}\nnode_overrides: [{gpu_hourly: 1}]\n", "p.yaml: node_overrides[0].match: must name at least one node label and its value")
	f("currency: USD\ngpu_hourly: {default: 1}\nnode_overrides: [{match: {spot: \"true\"}, gpu_hourly: -0.5}]\n", "p.yaml: node_overrides[0].gpu_hourly: must not be negative, got -0.5")
	f("currency: USD\ngpu_hourly: {default: 1}\nnodes: 3\n", "p.yaml: unmarshal errors:\n  line 3: field nodes not found in type cost.Prices")
	f("currency: USD\ngpu_hourly: {default: one}\n", "p.yaml: unmarshal errors:\n  line 2: cannot unmarshal !!str `one` into float64")
	f("currency: USD\ngpu_hourly: {default: 1}\n---\ncurrency: EUR\n", `p.yaml: a second YAML document after "---": put all prices in one`)
}

func TestHourly(t *testing.T) {
	p, err := cost.ParsePrices("p.yaml", []byte(`currency: usd
gpu_hourly: {"NVIDIA H100 80GB HBM3": 4, default: 2}
node_overrides:
  - match: {node.kubernetes.io/instance-type: p5.48xlarge, spot: "true"}
    gpu_hourly: 1.5
  - match: {node: gpu-9}
    gpu_hourly: 0.5
`))
	require.NoError(t, err)
	require.Equal(t, "USD", p.Currency)
	f := func(model string, nodeLabels map[string]string, want float64, wantFrom string) {
		t.Helper()
		got, from, ok := p.Hourly(model, nodeLabels)
		require.True(t, ok)
		require.Equal(t, want, got)
		require.Equal(t, wantFrom, from)
	}
	f("NVIDIA H100 80GB HBM3", map[string]string{"node": "a"}, 4, "gpu_hourly")
	f("NVIDIA H100 80GB HBM3", map[string]string{"node": "a", "label_node_kubernetes_io_instance_type": "p5.48xlarge", "label_spot": "true"}, 1.5, "node_overrides[0]")
	f("NVIDIA H100 80GB HBM3", map[string]string{"node": "a", "label_node_kubernetes_io_instance_type": "p5.48xlarge"}, 4, "gpu_hourly")
	f("Tesla T4", map[string]string{"node": "gpu-9"}, 0.5, "node_overrides[1]")
	f("Tesla T4", nil, 2, "default")
}

func TestMIGShare(t *testing.T) {
	f := func(profile, model string, want float64, wantOK bool) {
		t.Helper()
		got, ok := cost.MIGShare(profile, model)
		require.Equal(t, wantOK, ok, profile)
		require.InDelta(t, want, got, 1e-12, profile)
	}
	f("1g.10gb", "NVIDIA H100 80GB HBM3", 1.0/7, true)
	f("3g.40gb", "NVIDIA A100-SXM4-80GB", 3.0/7, true)
	f("7g.80gb", "NVIDIA A100-SXM4-80GB", 1, true)
	f("1g.10gb+me", "NVIDIA A100-SXM4-80GB", 1.0/7, true)
	f("1c.3g.40gb", "NVIDIA A100-SXM4-80GB", 3.0/7, true)
	f("2g.12gb", "NVIDIA A30", 0.5, true)
	f("7g.80gb", "NVIDIA A30", 0, false)
	f("whole", "NVIDIA A100-SXM4-80GB", 0, false)
}

func TestIdlePerDay(t *testing.T) {
	// 8 GPUs at 0.50 an hour, 2% active: 8 × 0.50 × 0.98 × 24 = 94.08.
	require.InDelta(t, 94.08, cost.IdlePerDay(8, 0.5, 0.02), 1e-9)
	require.Equal(t, "idle cost 94.08 USD/day (8 GPUs at 0.50 USD/h, 2% active)", cost.IdleClause(8, 0.5, 0.02, "USD"))
}

// FuzzParsePrices: any input parses or fails with an error, never a
// panic; what parses is valid and prices every model without error.
//
//	go test ./internal/cost -run '^$' -fuzz '^FuzzParsePrices$' -fuzztime 60s
func FuzzParsePrices(f *testing.F) {
	f.Add(handPrices)
	f.Add("currency: USD\ngpu_hourly: {default: 1}\n")
	f.Add("currency: EUR\nnode_overrides: [{match: {spot: \"true\"}, gpu_hourly: 0.4}]\n")
	f.Add("currency: USD\ngpu_hourly: {default: -1}\n")
	f.Add("[1, 2]")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := cost.ParsePrices("fuzz.yaml", []byte(in))
		if err != nil {
			return
		}
		require.NoError(t, p.Validate())
		for _, m := range append(p.Models(), "unknown") {
			if v, _, ok := p.Hourly(m, map[string]string{"node": "n"}); ok {
				require.GreaterOrEqual(t, v, 0.0)
			}
		}
	})
}
