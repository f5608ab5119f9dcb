package nezha

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/realdata/nezha"
)

// TestNezhaDays runs `vigil eval --suite nezha --data DIR --json` on the
// shared days and logs the table and every fault's ranks.
func TestNezhaDays(t *testing.T) {
	root := os.Getenv("VIGIL_NEZHA_DIR")
	if root == "" {
		_, file, _, _ := runtime.Caller(0)
		root = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "realdata", "nezha")
	}
	if days, _ := filepath.Glob(filepath.Join(root, "20*")); len(days) == 0 {
		t.Skipf("no Nezha day under %s", root)
	}
	bin, err := peertest.BuildVigil()
	require.NoError(t, err)
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), bin, "eval", "--suite", "nezha", "--data", root, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	var rep struct {
		Results []nezha.Result `json:"results"`
		Notes   []string       `json:"notes"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.NotEmpty(t, rep.Results)
	var b strings.Builder
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	require.NoError(t, nezha.WriteTable(&b, rep.Results))
	b.WriteString("\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%s %-12s %-15s truth=%-22s vigil=%d %v naive=%d %v\n", r.Day, r.Data, r.Fault, r.Truth,
			nezha.Rank(r.Ranked, r.Truth), r.Ranked[:min(3, len(r.Ranked))], nezha.Rank(r.Naive, r.Truth), r.Naive[:min(3, len(r.Naive))])
	}
	t.Logf("%d faults in %s\n%s", len(rep.Results), time.Since(start).Round(time.Second), b.String())
}

// BenchmarkNezhaEval times `vigil eval --suite nezha` on the shared days:
// seconds per case, the binary's start-up and the reading of the days
// included.
func BenchmarkNezhaEval(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "realdata", "nezha")
	if days, _ := filepath.Glob(filepath.Join(root, "20*")); len(days) == 0 {
		b.Skipf("no Nezha day under %s", root)
	}
	bin, err := peertest.BuildVigil()
	require.NoError(b, err)
	cases := 0
	start := time.Now()
	for b.Loop() {
		out, err := exec.CommandContext(b.Context(), bin, "eval", "--suite", "nezha", "--data", root, "--json").Output()
		require.NoError(b, err)
		var rep struct {
			Results []nezha.Result `json:"results"`
		}
		require.NoError(b, json.Unmarshal(out, &rep))
		cases += len(rep.Results)
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(cases), "s/case")
}
