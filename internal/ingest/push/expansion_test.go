package push

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/vigil-obs/vigil/internal/admission"
)

// TestExpansion checks admission.ExpansionText against what decoding a
// push in the text format allocates per body byte: a batch job's
// metrics, 5,000 series of a few labels.
func TestExpansion(t *testing.T) {
	var b strings.Builder
	b.WriteString("# HELP batch_rows_processed Rows processed.\n# TYPE batch_rows_processed counter\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "batch_rows_processed{shard=\"%d\",table=\"events_%d\",stage=\"load\"} %d\n", i, i%40, i*1000)
	}
	body := []byte(b.String())
	h := http.Header{"Content-Type": {"text/plain; version=0.0.4"}}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	fams, err := decodeFamilies(body, h)
	runtime.ReadMemStats(&m1)
	if err != nil || len(fams) != 1 {
		t.Fatalf("decode: %d families, %v", len(fams), err)
	}
	ratio := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(len(body))
	t.Logf("%d bytes, %.2f allocated per byte (ExpansionText %d)", len(body), ratio, admission.ExpansionText)
	if ratio > admission.ExpansionText {
		t.Fatalf("the text decoder allocates %.2f per byte, more than ExpansionText %d", ratio, admission.ExpansionText)
	}
}
