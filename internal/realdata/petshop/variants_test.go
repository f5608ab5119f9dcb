package petshop

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// mildIssues are synthIssues with smaller faults: latency ×3, 8% failed,
// overload ×2.
func mildIssues() []synthIssue {
	out := make([]synthIssue, len(synthIssues))
	for i, is := range synthIssues {
		out[i] = is
		switch is.fault.kind {
		case "latency":
			out[i].fault.factor = 3
		case "availability":
			out[i].fault.factor = 0.08
		case "overload":
			out[i].fault.factor = 2
		}
	}
	return out
}

// TestPetShopSyntheticVariants measures the synthetic set over four seeds
// with each conversion choice changed in turn (the service graph left out,
// the failed requests left out, 6 or 24 hours of history) and with milder
// faults, and logs the tables: the figures the package doc quotes. It
// asserts nothing and runs only where VIGIL_PETSHOP_VARIANTS is set
// (about four minutes on two cores).
//
//	VIGIL_PETSHOP_VARIANTS=1 go test ./internal/realdata/petshop -run Variants -v -timeout 30m
func TestPetShopSyntheticVariants(t *testing.T) {
	if os.Getenv("VIGIL_PETSHOP_VARIANTS") == "" {
		t.Skip("VIGIL_PETSHOP_VARIANTS is not set (a measurement, not a check)")
	}
	for _, v := range []struct {
		name   string
		issues []synthIssue
		conv   convertOptions
	}{
		{"as converted", synthIssues, convertOptions{}},
		{"no service graph", synthIssues, convertOptions{noGraph: true}},
		{"no failed requests", synthIssues, convertOptions{noFailed: true}},
		{"6h history", synthIssues, convertOptions{history: 6 * time.Hour}},
		{"24h history", synthIssues, convertOptions{history: 24 * time.Hour}},
		{"mild faults", mildIssues(), convertOptions{}},
		{"mild faults, no service graph", mildIssues(), convertOptions{noGraph: true}},
	} {
		var all []result
		for seed := uint64(1); seed <= 4; seed++ {
			dir := t.TempDir()
			writeSynthetic(t, dir, seed, v.issues)
			res := runAll(t, dir, v.conv)
			for i := range res {
				res[i].scenario = fmt.Sprintf("seed%d", seed)
			}
			all = append(all, res...)
		}
		t.Logf("%s\n%s", v.name, table(t, all))
	}
}
