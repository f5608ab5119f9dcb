package diagnose_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// pageReport is a fixed report with every part of the page: symptoms,
// more causes than the page shows, a cause without onset or action,
// findings and warnings.
func pageReport() *diagnose.Report {
	at := time.Date(2026, 11, 12, 2, 50, 30, 0, time.UTC)
	ts := func(h, m, s int) *time.Time { t := time.Date(2026, 11, 12, h, m, s, 0, time.UTC); return &t }
	ev := func(signal, summary string) []diagnose.Evidence {
		return []diagnose.Evidence{{Signal: signal, Query: signal + `{hostname="gpu-node-06"}`, Summary: summary}, {Signal: "second", Summary: "shown"}, {Signal: "third", Summary: "shown"}, {Signal: "fourth", Summary: "not shown"}}
	}
	rep := &diagnose.Report{
		At: at,
		Symptoms: []diagnose.Symptom{
			{Kind: diagnose.SymptomTrainingStall, Entity: diagnose.Entity{"namespace": "ml-train", "workload": "llm-pretrain-worker"},
				Since: *ts(2, 47, 30), Summary: "ml-train/llm-pretrain-worker stalled: tensor activity of its 8 ranks fell from 0.62 to 0.01"},
		},
		Causes: []diagnose.Cause{
			{Rank: 1, Kind: diagnose.KindNVLinkDegraded, Entity: diagnose.Entity{"node": "gpu-node-06", "gpu": "3"}, Confidence: 0.93, Since: ts(2, 47, 0),
				Summary:  "gpu-node-06 NVLink degradation — probable cause of training stall",
				Evidence: ev("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NVLink bandwidth on gpu-node-06 is 1% of its peers' at 02:47:00"),
				Action:   "cordon gpu-node-06; restart the job on healthy nodes", Explains: []int{0}},
			{Rank: 2, Kind: diagnose.KindGPUXIDError, Entity: diagnose.Entity{"node": "gpu-node-06", "gpu": "3"}, Confidence: 0.41,
				Summary: "XID 74 on gpu-node-06 GPU 3", Evidence: ev("DCGM_FI_DEV_XID_ERRORS", "XID 74 at 02:47:00")},
			{Rank: 3, Kind: diagnose.KindStraggler, Entity: diagnose.Entity{"node": "gpu-node-02"}, Confidence: 0.3, Summary: "gpu-node-02 is slow"},
			{Rank: 4, Kind: diagnose.KindNodeNetworkDegraded, Entity: diagnose.Entity{"node": "gpu-node-03"}, Confidence: 0.25, Summary: "four"},
			{Rank: 5, Kind: diagnose.KindPCIeDegraded, Entity: diagnose.Entity{"node": "gpu-node-04", "gpu": "0"}, Confidence: 0.22, Summary: "five"},
			{Rank: 6, Kind: diagnose.KindGPUPowerThrottle, Entity: diagnose.Entity{"node": "gpu-node-05", "gpu": "1"}, Confidence: 0.21, Summary: "six"},
			{Rank: 7, Kind: diagnose.KindGPUThermalThrottle, Entity: diagnose.Entity{"node": "gpu-node-05", "gpu": "2"}, Confidence: 0.2, Summary: "seven"},
		},
		Findings: []diagnose.Cause{
			{Rank: 1, Kind: diagnose.KindGPUIdle, Entity: diagnose.Entity{"namespace": "research", "pod": "notebook-0", "custom": "x"}, Confidence: 0.99,
				Since: ts(2, 10, 0), Summary: "research/notebook-0 holds GPU 5 of gpu-node-10 idle",
				Evidence: ev("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "no GPU work for 40m0s"), Action: "ask the owner to release the GPU"},
		},
		Warnings: []string{"node-exporter's instance 10.0.1.19:9100 maps to no node"},
		Coverage: pageCoverage(),
	}
	return rep
}

// pageCoverage is the coverage of a cluster of ten nodes, one of whose
// dcgm-exporter stopped reporting, and another with no dcgm-exporter.
func pageCoverage() diagnose.Coverage {
	since := time.Date(2026, 11, 12, 2, 41, 0, 0, time.UTC)
	layer := func(vocs []string, counts map[string]int) diagnose.Layer {
		l := diagnose.Layer{Vocabularies: vocs, Counts: counts}
		for _, n := range counts {
			l.Entities += n
		}
		return l
	}
	return diagnose.Coverage{
		Layers: diagnose.Layers{
			GPU:        layer([]string{"dcgm-exporter"}, map[string]int{"gpu": 72}),
			Node:       layer([]string{"node-exporter"}, map[string]int{"node": 10}),
			Kubernetes: layer([]string{"kube-state-metrics"}, map[string]int{"node": 10, "pod": 92}),
			Inference:  layer([]string{"vllm"}, map[string]int{"server": 2, "model": 1}),
			Logs:       layer([]string{"vigil-logs"}, nil),
		},
		Blind: []diagnose.BlindSpot{
			{Entity: diagnose.Entity{"node": "gpu-node-03"}, Reason: "dcgm-exporter stopped reporting its GPUs at 02:41:00 while the node is up", Since: &since},
			{Entity: diagnose.Entity{"node": "gpu-node-09"}, Reason: "kube-state-metrics gives it 8 GPUs (nvidia.com/gpu capacity) and no dcgm-exporter series names them"},
		},
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestWriteText compares the page with its golden file (go test -update
// rewrites it): plain without colour, the same text with ANSI colours on
// a terminal.
func TestWriteText(t *testing.T) {
	healthy := &diagnose.Report{At: time.Date(2026, 11, 12, 2, 50, 30, 0, time.UTC), Healthy: true,
		Symptoms: []diagnose.Symptom{}, Causes: []diagnose.Cause{}, Findings: []diagnose.Cause{}, Warnings: []string{},
		Coverage: diagnose.Coverage{Layers: diagnose.Layers{
			GPU:  diagnose.Layer{Entities: 1, Vocabularies: []string{"dcgm-exporter"}, Counts: map[string]int{"gpu": 1}},
			Node: diagnose.Layer{Entities: 1, Vocabularies: []string{"node-exporter"}, Counts: map[string]int{"node": 1}},
		}}}
	blind := &diagnose.Report{At: time.Date(2026, 11, 12, 2, 50, 30, 0, time.UTC),
		Symptoms: []diagnose.Symptom{}, Causes: []diagnose.Cause{}, Findings: []diagnose.Cause{},
		Warnings: []string{"no known vocabulary in the data: nothing to diagnose; name a label with --entity-label"},
		Coverage: diagnose.Coverage{Blind: []diagnose.BlindSpot{{Entity: diagnose.Entity{}, Reason: "no telemetry Vigil knows (1 metric name: foo_bar)"}}}}
	for _, tt := range []struct {
		golden string
		rep    *diagnose.Report
	}{
		{"page.golden", pageReport()},
		{"healthy.golden", healthy},
		{"blind.golden", blind},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var plain, color bytes.Buffer
			require.NoError(t, diagnose.WriteText(&plain, tt.rep, false))
			require.NoError(t, diagnose.WriteText(&color, tt.rep, true))
			path := filepath.Join("testdata", tt.golden)
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, plain.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), plain.String())
			require.NotContains(t, plain.String(), "\x1b", "no ANSI code without colour")
			require.Contains(t, color.String(), "\x1b[", "ANSI codes with colour")
			require.Equal(t, plain.String(), ansi.ReplaceAllString(color.String(), ""), "colour changes nothing else")
		})
	}
}

// TestWriteTextPage checks what an operator must see on the page.
func TestWriteTextPage(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, diagnose.WriteText(&b, pageReport(), false))
	page := b.String()
	require.Regexp(t, `^Vigil diagnosis at 2026-11-12 02:50:30 UTC — NOT HEALTHY\n`, page)
	require.Contains(t, page, "\nSeen: 72 GPUs (dcgm-exporter), 10 nodes (node-exporter), 10 nodes and 92 pods (kube-state-metrics), "+
		"2 servers and 1 model (vllm), no entity (vigil-logs); blind to gpu-node-03's GPUs since 02:41:00, gpu-node-09's GPUs\n")
	require.Contains(t, page, "1. 0.93  nvlink_degraded")
	require.Contains(t, page, "node=gpu-node-06 gpu=3")
	require.Contains(t, page, "action:   cordon gpu-node-06; restart the job on healthy nodes")
	require.Contains(t, page, "… and 2 more (--json lists them all)")
	require.NotContains(t, page, "seven", "the page shows five causes")
	require.NotContains(t, page, "not shown", "three lines of evidence at most")
	require.Contains(t, page, "     evidence: third: shown\n               … and 1 more\n")
	require.Contains(t, page, "namespace=research pod=notebook-0 custom=x", "canonical keys first, then the others")
}
