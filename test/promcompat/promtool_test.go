package promcompat

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// testPromtool runs Debian's promtool 2.42 `query` commands against both
// servers and requires the same output text. Instant results come in the
// engine's order, which is not specified, so their lines are compared
// sorted; everything else is compared as printed. The queries return raw
// samples or exact aggregations, so the printed values must match to the
// last digit.
func testPromtool(t *testing.T, env *compatEnv) {
	promtool := peertest.LookPath(t, "promtool")
	at := formatSeconds(evalAt(101 * time.Minute))
	start, end := formatSeconds(evalAt(95*time.Minute)), formatSeconds(evalAt(110*time.Minute))
	const server = "SERVER"
	cases := []struct {
		name string
		args []string
		sort bool
	}{
		{"instant selector", []string{"query", "instant", server, `DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-04"}`, "--time=" + at}, true},
		{"instant aggregation", []string{"query", "instant", server, `max by (Hostname, modelName) (DCGM_FI_DEV_POWER_USAGE)`, "--time=" + at}, true},
		{"instant json", []string{"query", "instant", "-o", "json", server, `count(kube_pod_info)`, "--time=" + at}, false},
		{"range", []string{"query", "range", server, `max by (pod) (vllm:num_requests_waiting)`, "--start=" + start, "--end=" + end, "--step=1m"}, false},
		{"range raw counter", []string{"query", "range", server, `vllm:request_success_total{pod="vllm-1", finished_reason="stop"}`, "--start=" + start, "--end=" + end, "--step=15s"}, false},
		{"series", []string{"query", "series", server, "--match=kube_pod_info", "--start=" + start, "--end=" + end}, false},
		{"series two matchers", []string{"query", "series", server, `--match=DCGM_FI_DEV_GPU_UTIL{gpu="0"}`, `--match=vllm:num_requests_running`, "--start=" + start, "--end=" + end}, false},
		{"labels", []string{"query", "labels", server, "Hostname"}, false},
		{"labels of all metric names", []string{"query", "labels", server, "__name__"}, false},
		{"labels with match and range", []string{"query", "labels", server, "pod", "--match=DCGM_FI_DEV_GPU_UTIL", "--start=" + start, "--end=" + end}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(url string) string {
				args := slices.Clone(c.args)
				args[slices.Index(args, server)] = url
				out := peertest.Run(t, promtool, args...)
				require.NotEmpty(t, strings.TrimSpace(out), "promtool %s printed nothing", strings.Join(args, " "))
				if c.sort {
					lines := strings.Split(strings.TrimSpace(out), "\n")
					slices.Sort(lines)
					out = strings.Join(lines, "\n")
				}
				return out
			}
			require.Equal(t, run(env.promURL), run(env.vigilURL))
		})
	}
}
