package catalog

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// FuzzResolve feeds arbitrary label values to Resolve and Lookup: outside
// input must never panic, and a node is never an address.
//
//	go test ./internal/catalog -fuzz FuzzResolve -fuzztime 30s
func FuzzResolve(f *testing.F) {
	f.Add("DCGM_FI_DEV_GPU_TEMP", "Hostname", "424773df46e0", "pod", "p")
	f.Add("node_load1", "instance", "10.0.0.1:9100", "node", "")
	f.Add("node_load1", "instance", "[::1]:9100", "nodename", "x")
	f.Add("kube_pod_owner", "owner_name", "<none>", "owner_kind", "<none>")
	f.Add("vllm:time_to_first_token_seconds_bucket", "model_name", "m", "le", "+Inf")
	c := Default()
	f.Fuzz(func(t *testing.T, name, l1, v1, l2, v2 string) {
		b := labels.NewScratchBuilder(3)
		b.Add("__name__", name)
		b.Add(l1, v1)
		b.Add(l2, v2)
		b.Sort()
		r := c.ResolveSeries(b.Labels())
		if n, ok := r.Entity[KeyNode]; ok && n == "" {
			t.Fatalf("empty node from %v", b.Labels())
		}
		c.Lookup(name)
		c.TrueType(name)
	})
}

// FuzzClockReasons decodes arbitrary values.
func FuzzClockReasons(f *testing.F) {
	for _, v := range []float64{0, 1, 0x4c, 9223372036854775794, -1, 1e300} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		_ = FormatClockReasons(v)
		_ = BlankKind(v)
	})
}
