package cost_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/cost"
)

// handPrices are the prices of the hand-computed case: the A100-80GB at
// 2.50, the H100 at 4.00 but 1.10 on the spot node, the A100-40GB at the
// default, 2.00.
const handPrices = `currency: USD
gpu_hourly:
  "NVIDIA A100-SXM4-80GB": 2.5
  "NVIDIA H100 80GB HBM3": 4.0
  default: 2.0
node_overrides:
  - match: {node.kubernetes.io/instance-type: spot-h100}
    gpu_hourly: 1.1
`

// cent is the tolerance of a figure checked to the cent.
const cent = 0.005

// TestHandComputed checks testdata/hand.om to the cent. One hour, one
// sample a minute, (T0, T0+1h], T0 = 1800000000:
//
//	gpu-a  2 × A100-80GB at 2.50, pod labels. GPU 0 held by train/trainer-0
//	       for 30 min at 0.8, then free; GPU 1 free.
//	       available 2 h = 5.00; allocated 0.5 h = 1.25; used 0.4 h = 1.00;
//	       idle 1.25 − 1.00 = 0.25.
//	gpu-b  1 × H100, spot-h100 → override 1.10. Time-sliced: vllm-0 and
//	       vllm-1 all hour at 0.6, each half.
//	       available 1 h = 1.10; allocated 1 h = 1.10 (0.55 each); used
//	       0.6 h = 0.66 (0.33 each); idle 0.44 (0.22 each).
//	gpu-c  1 × A100-40GB (not named: default 2.00), MIG: instance 1 (3g,
//	       3/7) research/nb-0 all hour at 0.5; instance 2 (1g, 1/7)
//	       research/nb-1 the last 15 min at 1.0; instance 3 free.
//	       available 1 h = 2.00; allocated 3/7 + 1/7 × 1/4 = 13/28 h =
//	       0.928571; used 3/7 × 0.5 + 1/28 = 1/4 h = 0.50; idle 0.428571
//	       (nb-0: 6/7 − 3/7 = 0.428571, nb-1: 0).
//	gpu-d  2 × A100-80GB at 2.50, no pod labels: kube-state-metrics says
//	       batch/job-0 requests 1 GPU for the first 30 min, while GPU 0 is
//	       at 0.9 and GPU 1 at 0.
//	       available 2 h = 5.00; allocated min(1, 2) × 0.5 h = 1.25; used
//	       min(0.9, 1) × 0.5 h = 0.45 h = 1.125; idle 0.125.
//
// Totals: available 6 h, allocated 2.464286 h, used 1.70 h; total 13.10,
// allocated 4.528571, idle 1.243571, unallocated 8.571429.
//
// Tokens of inference/llama-8b (vllm-0 and vllm-1): 1,000,000 prompt,
// 330,000 generated. Its GPUs: allocated 1.10, used 0.66, so per million
// prompt tokens 1.10 (allocation) and 0.66 (usage), per million generated
// 3.333333 and 2.00.
func TestHandComputed(t *testing.T) {
	src := openFiles(t, "testdata/hand.om")
	prices, err := cost.ParsePrices("prices.yaml", []byte(handPrices))
	require.NoError(t, err)
	t0 := time.Unix(1800000000, 0).UTC()
	run := func(by string) *cost.Report {
		rep, err := cost.Compute(t.Context(), src, cost.Options{From: t0, To: t0.Add(time.Hour), Prices: prices, By: by})
		require.NoError(t, err)
		return rep
	}
	rep := run(cost.ByNamespace)
	require.Equal(t, "USD", rep.Currency)
	require.Equal(t, time.Minute, rep.Step)
	require.InDelta(t, 6.0, rep.GPUHours.Available, 1e-9)
	require.InDelta(t, 0.5+1+13.0/28+0.5, rep.GPUHours.Allocated, 1e-9)
	require.InDelta(t, 1.70, rep.GPUHours.Used, 1e-9)
	require.InDelta(t, 13.10, rep.Cost.Total, cent)
	require.InDelta(t, 4.528571, rep.Cost.Allocated, cent)
	require.InDelta(t, 1.243571, rep.Cost.Idle, cent)
	require.InDelta(t, 8.571429, rep.Cost.Unallocated, cent)

	type fig struct{ gpus, alloc, used, cost, idle float64 }
	want := func(rows []cost.Row, key string, w map[string]fig) {
		t.Helper()
		require.Len(t, rows, len(w))
		for _, r := range rows {
			f, ok := w[r.Entity[key]]
			require.True(t, ok, "unexpected row %v", r.Entity)
			require.InDelta(t, f.gpus, r.GPUs, 1e-9, "gpus of %v", r.Entity)
			require.InDelta(t, f.alloc, r.GPUHoursAllocated, 1e-6, "allocated hours of %v", r.Entity)
			require.InDelta(t, f.used, r.GPUHoursUsed, 1e-6, "used hours of %v", r.Entity)
			require.InDelta(t, f.cost, r.Cost, cent, "cost of %v", r.Entity)
			require.InDelta(t, f.idle, r.IdleCost, cent, "idle cost of %v", r.Entity)
		}
	}
	want(rep.By, "namespace", map[string]fig{
		"inference": {1, 1, 0.6, 1.10, 0.44},
		"research":  {4.0 / 7, 13.0 / 28, 0.25, 0.928571, 0.428571},
		"train":     {1, 0.5, 0.4, 1.25, 0.25},
		"batch":     {1, 0.5, 0.45, 1.25, 0.125},
	})
	var order []string
	for _, r := range rep.By {
		order = append(order, r.Entity["namespace"])
	}
	require.Equal(t, []string{"inference", "research", "train", "batch"}, order, "sorted by idle cost")

	nodes := run(cost.ByNode)
	want(nodes.By, "node", map[string]fig{
		"gpu-a": {2, 0.5, 0.4, 5.00, 0.25},
		"gpu-b": {1, 1, 0.6, 1.10, 0.44},
		"gpu-c": {1, 13.0 / 28, 0.25, 2.00, 0.428571},
		"gpu-d": {2, 0.5, 0.45, 5.00, 0.125},
	})

	models := run(cost.ByModel)
	require.Len(t, models.By, 1)
	m := models.By[0]
	require.Equal(t, map[string]string{"namespace": "inference", "model": "llama-8b"}, m.Entity)
	require.InDelta(t, 1_000_000, m.Tokens.Prompt, 1e-3)
	require.InDelta(t, 330_000, m.Tokens.Generation, 1e-3)
	require.NotNil(t, m.CostPer1MTokens)
	require.InDelta(t, 1.10, *m.CostPer1MTokens.Allocation.Prompt, cent)
	require.InDelta(t, 0.66, *m.CostPer1MTokens.Usage.Prompt, cent)
	require.InDelta(t, 3.333333, *m.CostPer1MTokens.Allocation.Generation, cent)
	require.InDelta(t, 2.00, *m.CostPer1MTokens.Usage.Generation, cent)

	tenants := run(cost.ByTenant)
	for _, r := range tenants.By {
		if r.Entity["tenant"] == "inference" {
			require.InDelta(t, 1.10, *r.CostPer1MTokens.Allocation.Prompt, cent)
		}
	}

	require.Contains(t, rep.Warnings, `GPU models the prices do not name were priced at the default, 2 USD an hour: "NVIDIA A100-SXM4-40GB" (1 GPUs)`)
	require.Contains(t, rep.Warnings, "dcgm-exporter names no pod on 1 nodes (pod attribution off): their allocation comes from kube-state-metrics' nvidia.com/gpu requests, up to the GPUs that report; which GPU a pod holds is not known, so a pod's use is the node's activity shared by its requests (gpu-d)")
}
