//lint:file-ignore SA1019 Grafana's classic dashboard schema (v1) is what file provisioning and kube-prometheus-stack's sidecar load; dashboardv2 is for Grafana 12's new API only.

package dashboards_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/dashboards"
)

var update = flag.Bool("update", false, "rewrite the chart's dashboards (deploy/helm/vigil/dashboards) from the builders")

// chartDir holds the copies the Helm chart ships.
const chartDir = "../../deploy/helm/vigil/dashboards"

// TestChartCopies: the chart's dashboards are what the builders build
// (go test ./internal/dashboards -update rewrites them), and nothing else.
func TestChartCopies(t *testing.T) {
	files, err := dashboards.Build()
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		p := filepath.Join(chartDir, f.Name)
		if *update {
			require.NoError(t, os.MkdirAll(chartDir, 0o755))
			require.NoError(t, os.WriteFile(p, f.JSON, 0o644))
			continue
		}
		got, err := os.ReadFile(p)
		require.NoError(t, err, "run go test ./internal/dashboards -update")
		require.Equal(t, string(f.JSON), string(got), "%s is stale: run go test ./internal/dashboards -update", p)
	}
	have, err := filepath.Glob(filepath.Join(chartDir, "*.json"))
	require.NoError(t, err)
	for _, p := range have {
		require.Contains(t, names, filepath.Base(p), "%s is no dashboard the builders build", p)
	}
}

// TestWrite: Write writes one file per dashboard, the same bytes as Build.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	paths, err := dashboards.Write(dir)
	require.NoError(t, err)
	files, err := dashboards.Build()
	require.NoError(t, err)
	require.Len(t, paths, len(files))
	for i, f := range files {
		got, err := os.ReadFile(paths[i])
		require.NoError(t, err)
		require.Equal(t, f.JSON, got)
	}
}

// query is one target of a decoded dashboard.
type query struct {
	dashboard, panel, ref string
	expr                  string
	instant               bool
}

func (q query) String() string { return q.dashboard + " / " + q.panel + " / " + q.ref }

var registerPlugins sync.Once

// decode reads every dashboard back through the SDK's own types, strictly
// (an unknown field is an error), and returns its targets.
func decode(t *testing.T) ([]dashboard.Dashboard, []query) {
	t.Helper()
	registerPlugins.Do(plugins.RegisterDefaultPlugins)
	files, err := dashboards.Build()
	require.NoError(t, err)
	var ds []dashboard.Dashboard
	var qs []query
	for _, f := range files {
		var d dashboard.Dashboard
		require.NoError(t, strict(&d, f.JSON), f.Name)
		ds = append(ds, d)
		for _, p := range d.Panels {
			if p.Panel == nil {
				continue
			}
			require.NotEmpty(t, p.Panel.Targets, "%s / %s has no query", f.Name, *p.Panel.Title)
			for _, tg := range p.Panel.Targets {
				pq, ok := tg.(*prometheus.Dataquery)
				require.True(t, ok, "%s / %s: a %T, not a Prometheus query", f.Name, *p.Panel.Title, tg)
				require.NotEmpty(t, pq.Expr)
				qs = append(qs, query{dashboard: *d.Title, panel: *p.Panel.Title, ref: *pq.RefId, expr: pq.Expr,
					instant: pq.Instant != nil && *pq.Instant})
			}
		}
	}
	return ds, qs
}

// strict decodes raw into d, failing on any field the SDK does not know
// or any required field that is missing. (In v0.0.22 UnmarshalJSONStrict
// returns an empty cog.BuildErrors, not nil, when all is well, and so
// leaves the rows out of what it decodes: the checked decode is thrown
// away and d is decoded again by UnmarshalJSON.)
func strict(d *dashboard.Dashboard, raw []byte) error {
	var check dashboard.Dashboard
	err := check.UnmarshalJSONStrict(raw)
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		err = nil
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, d)
}

// TestDecode: every dashboard decodes back into the SDK's Dashboard, with
// its variables, unique panel ids and a Prometheus query in every panel.
func TestDecode(t *testing.T) {
	ds, qs := decode(t)
	require.Len(t, ds, 5)
	for _, d := range ds {
		var vars []string
		for _, v := range d.Templating.List {
			vars = append(vars, v.Name)
		}
		require.Equal(t, []string{"datasource", "cluster", "namespace", "node", "model"}, vars, *d.Title)
		ids := map[uint32]bool{}
		for _, p := range d.Panels {
			id := uint32(0)
			if p.Panel != nil {
				require.NotNil(t, p.Panel.Id)
				id = *p.Panel.Id
				require.Equal(t, "${datasource}", *p.Panel.Datasource.Uid)
			} else {
				require.NotNil(t, p.RowPanel)
				id = p.RowPanel.Id
			}
			require.False(t, ids[id], "%s: panel id %d twice", *d.Title, id)
			ids[id] = true
		}
	}
	require.Greater(t, len(qs), 60)
}

var varRE = regexp.MustCompile(`\$\{?(\w+)\}?`)

// substitute does what Grafana does to a query before it sends it: the
// built-in intervals and the variables' values ($1 in label_replace is
// no variable and stays).
func substitute(t *testing.T, expr string, vars map[string]string) string {
	t.Helper()
	return varRE.ReplaceAllStringFunc(expr, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		if v, ok := vars[name]; ok {
			return v
		}
		require.Regexp(t, `^\d+$`, name, "%s: no value for variable %s", expr, m)
		return m
	})
}

// allVars are the values of a dashboard left at its defaults: every
// variable All.
var allVars = map[string]string{
	"__rate_interval": "2m", "__interval": "30s", "__range": "30m",
	"cluster": ".*", "namespace": ".*", "node": ".*", "model": ".*",
}

// own are the names of Vigil's own series (its rules' records and alerts,
// its metrics and its span metrics), which the catalog does not list.
var own = regexp.MustCompile(`^(slo:|vigil:|vigil_|ALERTS$|traces_span_metrics_)`)

// TestExprs: every query parses as PromQL once Grafana's variables are
// substituted, reads only the catalog's metric names and Vigil's own, and
// filters by the variables it has to.
func TestExprs(t *testing.T) {
	_, qs := decode(t)
	c := catalog.Default()
	for _, q := range qs {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(t, q.expr, allVars))
		require.NoError(t, err, q.String())
		for _, vs := range parser.ExtractSelectors(expr) {
			i := slices.IndexFunc(vs, func(m *labels.Matcher) bool { return m.Name == model.MetricNameLabel })
			require.GreaterOrEqual(t, i, 0, "%s: a selector without a metric name", q)
			name := vs[i].Value
			if _, ok := c.Lookup(name); !ok {
				require.Regexp(t, own, name, "%s: %s is neither the catalog's nor Vigil's", q, name)
			}
		}
		require.Contains(t, q.expr, `cluster=~"$cluster"`, q.String())
		if strings.Contains(q.expr, "DCGM_") {
			require.Contains(t, q.expr, `=~"$node"`, "%s: a GPU query follows the node variable", q)
		}
	}
	for name, v := range dashboards.VariableQueries {
		m := regexp.MustCompile(`^label_values\((.+), (\w+)\)$`).FindStringSubmatch(v)
		require.NotNil(t, m, name)
		_, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(t, m[1], allVars))
		require.NoError(t, err, name)
	}
}
