package catalog_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// TestSignalsDoc fails while docs/signals.md is stale;
// `go test ./internal/catalog -update` rewrites it.
func TestSignalsDoc(t *testing.T) {
	c := catalog.Default()
	var b bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&b))
	doc := b.String()
	for _, s := range c.Signals() {
		require.Contains(t, doc, "### "+s.Name+"\n", "every signal has a section")
		for _, src := range s.Sources {
			require.Contains(t, doc, "`"+src.Metric+"`")
		}
	}
	require.True(t, strings.HasPrefix(doc, "# Signals\n"))
	golden(t, "../../docs/signals.md", doc)
}
