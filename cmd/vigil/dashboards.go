package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/dashboards"
)

func newDashboardsCmd(e *env) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "dashboards --out DIR",
		Short: "Write Vigil's Grafana dashboards as JSON",
		Long: `Write Vigil's Grafana dashboards into DIR, one JSON file per dashboard:
platform (nodes, GPUs, allocation, restarts, request success), GPUs
(utilisation, temperature, power, clocks, XID, NVLink, clock-event reasons,
ECC and row remapping, PCIe, and each GPU's pod), inference (latency, time
to first token, tokens per second, queue, KV cache, SLO burn), failures (by
model, provider, tenant, route and error type) and incidents (Vigil's own
alerts, incidents and health). It prints the path of each file it writes.

Each has the variables datasource, cluster, namespace, node and model, and
reads the metric names of dcgm-exporter, vLLM, NIM, SGLang, TGI, Triton,
kube-state-metrics and the span metrics, and Vigil's recorded SLO series,
from Vigil itself or any Prometheus-compatible datasource. Import them in
Grafana, or let the Helm chart ship them as ConfigMaps for
kube-prometheus-stack's dashboard sidecar.`,
		Example: `  vigil dashboards --out dashboards/
  vigil dashboards --out /var/lib/grafana/dashboards/vigil`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return usagef("dashboards: --out DIR is required")
			}
			paths, err := dashboards.Write(out)
			if err != nil {
				return fmt.Errorf("dashboards: %w", err)
			}
			for _, p := range paths {
				fmt.Fprintln(e.stdout, p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the directory to write into (created if missing)")
	return cmd
}
