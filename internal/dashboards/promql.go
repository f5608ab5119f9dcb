package dashboards

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// Matchers of the variables, as the label names of each vocabulary carry
// them.
const (
	mCluster   = `cluster=~"$cluster"`
	mNamespace = `namespace=~"$namespace"`
	mNode      = `node=~"$node"`
	mModel     = `model=~"$model"`
)

// rateWindow is the range of every rate(): Grafana's, at least four
// scrape intervals.
const rateWindow = "$__rate_interval"

// sel writes a selector: the metric with the cluster's matcher and more.
func sel(metric string, matchers ...string) string {
	return metric + "{" + strings.Join(append([]string{mCluster}, matchers...), ", ") + "}"
}

// rate is rate() of a counter's selector over the rate window.
func rate(selector string) string { return "rate(" + selector + "[" + rateWindow + "])" }

// dcgmNodeLabels are dcgm-exporter's node labels, preferred first
// (catalog: Hostname until 2026, hostname since).
func dcgmNodeLabels() []string {
	return catalog.Default().GroupLabels(catalog.DCGMExporter, catalog.KeyNode)
}

// gpuExpr writes f once for each of dcgm-exporter's node labels and joins
// them with `or`: f gets the matchers that pick the GPUs of the node
// variable by that label (only series that have it, so the two halves
// never overlap) and the label's name, for by-clauses and legends.
func gpuExpr(f func(matchers []string, nodeLabel string) string) string {
	var parts []string
	for _, l := range dcgmNodeLabels() {
		m := []string{mCluster, l + `=~"$node"`, l + `!=""`, mNamespace}
		parts = append(parts, "("+f(m, l)+")")
	}
	return strings.Join(parts, " or ")
}

// gsel writes a dcgm-exporter selector of metric with gpuExpr's matchers.
func gsel(metric string, matchers []string, more ...string) string {
	return metric + "{" + strings.Join(append(slices.Clone(matchers), more...), ", ") + "}"
}

// gpuLegend names a GPU in a legend, whichever node label it has.
const gpuLegend = "{{Hostname}}{{hostname}} GPU {{gpu}}"

// engines are the inference servers the inference panels read, in the
// catalog's order.
var engines = []catalog.Vocabulary{catalog.VLLM, catalog.NIM, catalog.SGLang, catalog.TGI, catalog.Triton}

// shape says how a per-model panel reads a signal.
type shape struct {
	// quantile, for a histogram, is the quantile read (0: the rate of the
	// _count series, requests per second).
	quantile float64
	// by are more labels to keep beside namespace and model.
	by []string
}

// perModel writes PromQL for a catalog signal, by namespace and canonical
// model, from every source in the inference engines' vocabularies, joined
// with `or` (a cluster may run several engines): each source's model
// label renamed to model, its scale applied, filtered by the variables.
func perModel(signal string, s shape) string {
	c := catalog.Default()
	sig, ok := c.Signal(signal)
	if !ok {
		panic("dashboards: the catalog has no signal " + signal) // a programming error, caught by every test
	}
	var parts []string
	for _, src := range sig.Sources {
		if !slices.Contains(engines, src.Vocabulary) {
			continue
		}
		parts = append(parts, "("+sourceExpr(c, sig, src, s)+")")
	}
	if len(parts) == 0 {
		panic("dashboards: no inference engine carries " + signal)
	}
	return strings.Join(parts, " or ")
}

func sourceExpr(c *catalog.Catalog, sig *catalog.Signal, src catalog.Source, s shape) string {
	modelLabel := catalog.KeyModel
	if ls := c.GroupLabels(src.Vocabulary, catalog.KeyModel); len(ls) > 0 {
		modelLabel = ls[0]
	}
	matchers := []string{mNamespace, modelLabel + `=~"$model"`}
	by := append([]string{"namespace", "model"}, s.by...)
	agg := string(sig.Agg)
	var inner string
	switch typ := src.TrueType(*sig); {
	case typ == catalog.Histogram && s.quantile > 0:
		inner = rate(sel(src.Metric+"_bucket", matchers...))
		by = append([]string{"le"}, by...)
		agg = "sum"
	case typ == catalog.Histogram:
		inner = rate(sel(src.Metric+"_count", matchers...))
		agg = "sum"
	case typ == catalog.Counter:
		inner = rate(sel(src.Metric, matchers...))
		agg = "sum"
	default:
		inner = sel(src.Metric, matchers...)
		if agg == "" {
			agg = "avg"
		}
	}
	if modelLabel != catalog.KeyModel {
		inner = fmt.Sprintf(`label_replace(%s, "model", "$1", %q, "(.+)")`, inner, modelLabel)
	}
	expr := fmt.Sprintf("%s by (%s) (%s)", agg, strings.Join(by, ", "), inner)
	if s.quantile > 0 {
		expr = fmt.Sprintf("histogram_quantile(%s, %s)", num(s.quantile), expr)
	}
	if f := src.Factor(); f != 1 && (s.quantile > 0 || src.TrueType(*sig) != catalog.Histogram) {
		expr = fmt.Sprintf("%s * %s", expr, num(f))
	}
	return expr
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
