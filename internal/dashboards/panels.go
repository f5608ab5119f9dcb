//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// datasourceVar is the name of every dashboard's datasource variable.
const datasourceVar = "datasource"

// ds is the datasource of every panel and variable: the one the
// datasource variable picks.
func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + datasourceVar + "}")}
}

// target is one query of a panel: PromQL and its legend.
type target struct{ expr, legend string }

func q(expr, legend string) target { return target{expr: expr, legend: legend} }

// queries builds a panel's targets, A, B, ... in order; instant ones for
// tables, which show one row per series.
func queries(instant bool, ts []target) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(ts))
	for i, t := range ts {
		b := prometheus.NewDataqueryBuilder().Expr(t.expr).RefId(string(rune('A' + i))).Datasource(ds())
		if t.legend != "" {
			b = b.LegendFormat(t.legend)
		}
		if instant {
			b = b.Instant().Format(prometheus.PromQueryFormatTable)
		} else {
			b = b.Range()
		}
		out = append(out, b)
	}
	return out
}

// graph is a time-series panel, half the width of the dashboard.
func graph(title, desc, unit string, ts ...target) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Title(title).Description(desc).Unit(unit).Datasource(ds()).
		Height(8).Span(12).FillOpacity(10).Targets(queries(false, ts))
}

// number is a stat panel, a quarter of the dashboard's width, showing the
// last value of its series.
func number(title, desc, unit string, ts ...target) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(desc).Unit(unit).Datasource(ds()).
		Height(4).Span(6).ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Targets(queries(false, ts))
}

// list is a table panel of instant queries, the dashboard's full width:
// one row per series, its labels as columns.
func list(title, desc string, ts ...target) *table.PanelBuilder {
	return table.NewPanelBuilder().Title(title).Description(desc).Datasource(ds()).
		Height(8).Span(24).Targets(queries(true, ts)).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"})).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}})
}

// row starts a row of the dashboard.
func row(title string) *dashboard.RowBuilder { return dashboard.NewRowBuilder(title) }

// newDashboard is a dashboard with Vigil's uid, tags, time range and
// variables.
func newDashboard(uid, title, desc string) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).Uid(uid).Description(desc).
		Tags([]string{"vigil", "ai-cluster"}).Editable().Refresh("1m").Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).Tooltip(dashboard.DashboardCursorSyncCrosshair)
	for _, v := range variables() {
		b = b.WithVariable(v)
	}
	return b
}
