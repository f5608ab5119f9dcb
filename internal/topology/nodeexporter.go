package topology

import (
	"context"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// nodeExporterMetrics are the node-exporter series whose presence says a
// node's exporter is up: node_uname_info carries the host name (nodename),
// node_boot_time_seconds is there when the uname collector is off.
const nodeExporterMetrics = "node_uname_info|node_boot_time_seconds"

// nodeExporters are the node-exporter targets with a current sample.
type nodeExporters struct {
	// rows are the targets, each with the labels that name its node in the
	// catalog's order of preference.
	rows []*exporterTarget
}

// exporterTarget is one scraped exporter and the labels naming its node.
type exporterTarget struct {
	key    string
	claims []Identity
}

// readNodeExporters reads which node-exporters report and what they call
// their node.
func (b *builder) readNodeExporters(ctx context.Context) error {
	names := nodeLabels(b.cat, catalog.NodeExporter)
	byKey := map[string]*exporterTarget{}
	ne := &nodeExporters{}
	b.hosts = ne
	qs := "group by (" + strings.Join(names, ", ") + ") ({__name__=~\"" + nodeExporterMetrics + "\"})"
	return b.each(ctx, qs, func(lset labels.Labels, _ float64) {
		key := lset.Get("instance")
		if key == "" {
			key = lset.Get("nodename")
		}
		t := byKey[key]
		if t == nil {
			t = &exporterTarget{key: key}
			byKey[key] = t
			ne.rows = append(ne.rows, t)
		}
		for _, name := range names {
			v := lset.Get(name)
			if v == "" || slices.ContainsFunc(t.claims, func(id Identity) bool { return id.Label == name }) {
				continue
			}
			t.claims = append(t.claims, Identity{Source: sourceNodeExporter, Label: name, Value: v})
		}
		slices.SortStableFunc(t.claims, func(a, b Identity) int {
			return slices.Index(names, a.Label) - slices.Index(names, b.Label)
		})
	})
}

// nodeLabels returns the labels that name a node in vocabulary v, in the
// catalog's order of preference, and instance (the scrape address) last.
func nodeLabels(cat *catalog.Catalog, v catalog.Vocabulary) []string {
	names := aliasLabels(cat, v, catalog.KeyNode)
	if !slices.Contains(names, "instance") {
		names = append(names, "instance")
	}
	return names
}

// aliasLabels returns every label that carries key in vocabulary v (its
// own aliases and the Kubernetes target labels), preferred first.
func aliasLabels(cat *catalog.Catalog, v catalog.Vocabulary, key string) []string {
	var out []string
	for _, a := range cat.Aliases(v) {
		if a.Key != key {
			continue
		}
		for _, l := range a.Labels {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// resolveTarget picks the node of an exporter target from its claims.
func (k *kubeIndex) resolveTarget(t *exporterTarget) (node string, ids []Identity, why string) {
	claims := make([]claim, 0, len(t.claims))
	for _, id := range t.claims {
		claims = append(claims, claim{Identity: id, res: k.resolveValue(id.Label, id.Value)})
	}
	return pickNode(claims)
}
