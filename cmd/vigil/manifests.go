package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/deploy/helm"
	"github.com/vigil-obs/vigil/internal/manifests"
)

func newManifestsCmd(e *env) *cobra.Command {
	var opts manifests.Options
	cmd := &cobra.Command{
		Use:   "manifests [--values FILE]... [--set k=v]... [--namespace NS]",
		Short: "Print Vigil's Helm chart rendered as Kubernetes YAML",
		Long: `Render the Helm chart built into this binary (deploy/helm/vigil) with Helm's
own engine and print the objects as one multi-document YAML stream, in
Helm's install order, for kubectl apply, Kustomize, Argo CD or Flux; no
helm binary and no cluster are needed.

--values and --set work as in helm install: the files are merged over the
chart's values.yaml in order, then each --set. The values are checked
against the chart's values.schema.json (a key the chart does not know is an
error), and the rendered vigil.yaml is loaded with vigil serve's own loader.
See docs/deploy.md.`,
		Example: `  # The embedded default into namespace monitoring:
  vigil manifests --namespace monitoring | kubectl apply -n monitoring -f -

  # With dcgm-exporter and an Alertmanager:
  vigil manifests --set dcgmExporter.enabled=true \
    --set 'vigil.alerting.alertmanagers[0]=http://alertmanager-operated.monitoring:9093'

  # Attached to the Prometheus kube-prometheus-stack runs:
  vigil manifests --values deploy/helm/vigil/ci/external-prometheus-values.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fsys, err := helm.Chart()
			if err != nil {
				return fmt.Errorf("manifests: %w", err)
			}
			ms, err := manifests.RenderChart(cmd.Context(), fsys, opts)
			switch {
			case errors.Is(err, manifests.ErrValues):
				return usagef("manifests: %v", err)
			case err != nil:
				return fmt.Errorf("manifests: %w", err)
			}
			if err := manifests.Write(e.stdout, ms); err != nil {
				return fmt.Errorf("manifests: write: %w", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&opts.ValuesFiles, "values", "f", nil, "a values file (YAML) merged over the chart's values.yaml (repeatable)")
	fl.StringArrayVar(&opts.Set, "set", nil, "a value on the command line, as helm's --set: key=value, a.b=c, list[0]=x (repeatable)")
	fl.StringVar(&opts.Namespace, "namespace", "default", "the namespace of the objects")
	return cmd
}
