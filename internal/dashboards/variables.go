//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Variables every dashboard has, beside the datasource: Prometheus
// label_values queries, each "All" by default (the regular expression .*,
// which also matches a series without the label, as a single cluster's
// series are).
const (
	varCluster   = "cluster"
	varNamespace = "namespace"
	varNode      = "node"
	varModel     = "model"
)

// VariableQueries are the label_values queries of the variables, by name:
// the cluster and node from kube-state-metrics' nodes, the namespace from
// its pods, the model from Vigil's recorded queue depth, which carries the
// canonical model label whatever the inference engine.
var VariableQueries = map[string]string{
	varCluster:   `label_values(kube_node_info, cluster)`,
	varNamespace: `label_values(kube_pod_info{cluster=~"$cluster"}, namespace)`,
	varNode:      `label_values(kube_node_info{cluster=~"$cluster"}, node)`,
	varModel:     `label_values(vigil:inference_queue_depth:sum{cluster=~"$cluster", namespace=~"$namespace"}, model)`,
}

func variables() []cog.Builder[dashboard.VariableModel] {
	out := []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(datasourceVar).Label("Data source").Type("prometheus").
			Description("A Prometheus-compatible API: Vigil itself (:9700) or the Prometheus it writes to"),
	}
	for _, v := range []struct{ name, label, desc string }{
		{varCluster, "Cluster", "The cluster label of a Prometheus that holds several clusters; All on one cluster"},
		{varNamespace, "Namespace", "Kubernetes namespaces (kube-state-metrics' pods)"},
		{varNode, "Node", "Kubernetes nodes (kube-state-metrics); dcgm-exporter's Hostname or hostname"},
		{varModel, "Model", "Served models, whatever the engine (Vigil's recorded vigil:inference_queue_depth:sum)"},
	} {
		query := VariableQueries[v.name]
		out = append(out, dashboard.NewQueryVariableBuilder(v.name).Label(v.label).Description(v.desc).
			Datasource(ds()).Query(dashboard.StringOrMap{String: &query}).Definition(query).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).IncludeAll(true).AllValue(".*").
			Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
				Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")}}))
	}
	return out
}
