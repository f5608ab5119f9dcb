package petshop

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// runAll loads every scenario under dir and runs the binary's `vigil
// diagnose` on each issue, converted with conv.
func runAll(t *testing.T, dir string, conv convertOptions) []result {
	t.Helper()
	bin, err := peertest.BuildVigil()
	require.NoError(t, err)
	all, err := run(t.Context(), dir, conv, execDiagnose(bin, t.TempDir()), nil)
	require.NoError(t, err)
	return all
}

// evalAll runs the binary's `vigil eval --suite petshop --data dir --json`.
func evalAll(t *testing.T, dir string) []result {
	t.Helper()
	bin, err := peertest.BuildVigil()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), bin, "eval", "--suite", "petshop", "--data", dir, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	var rep struct {
		Results []Result `json:"results"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	return internalResults(rep.Results)
}

// table is the results' table and cases as text.
func table(t *testing.T, results []result) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, writeTable(&b, results))
	require.NoError(t, writeCases(&b, results))
	return b.String()
}

// count is how many results pass ok.
func count(results []result, ok func(result) bool) int {
	n := 0
	for _, r := range results {
		if ok(r) {
			n++
		}
	}
	return n
}

// TestPetShopSynthetic runs the whole harness — the reader, the converter
// and the real `vigil diagnose` binary — on a synthetic data set in the
// PetShop layout (seed 1: 8 issues), and requires the recall measured on
// it: the root cause first in all 8 (the overload of petlistadoptions,
// whose callees' requests rise as much as its own and rank first, is
// found by the walk climbing the load back up) and so among the first
// three; the service-graph walk
// leads to the first cause at least once. Then the scorer must really
// compare nodes: with each issue's ground truth swapped for the next
// issue's (always another node), the top-1 recall collapses.
func TestPetShopSynthetic(t *testing.T) {
	dir := t.TempDir()
	writeSynthetic(t, dir, 1, synthIssues)
	results := evalAll(t, dir)
	t.Log("\n" + table(t, results))
	require.Len(t, results, len(synthIssues))

	top1 := count(results, func(r result) bool { return r.inTopK(1) })
	require.Equal(t, len(results), top1, "top-1 recall")
	require.Equal(t, len(results), count(results, func(r result) bool { return r.inTopK(3) }), "top-3 recall")
	require.Zero(t, count(results, func(r result) bool { return len(r.ranked) == 0 }), "issues without a cause")
	require.Positive(t, count(results, func(r result) bool { return r.walked }), "the service-graph walk never led to the first cause")

	rotated := make([]result, len(results))
	for i, r := range results {
		r.truth = results[(i+1)%len(results)].truth
		require.NotEqual(t, results[i].truth, r.truth, "issue %d: the next issue has the same root cause", i)
		rotated[i] = r
	}
	wrong := count(rotated, func(r result) bool { return r.inTopK(1) })
	require.Less(t, wrong, top1)
	require.LessOrEqual(t, wrong, 1, "top-1 recall against the wrong ground truth")
}

// TestPetShopDataSet runs the harness on the real data set where
// VIGIL_PETSHOP_DIR names it (the repository's dataset directory, or one
// scenario's), else on ../shared/realdata/petshop beside the checkout when
// it is there (CI has it), and logs the table; it fails only on harness
// errors: the figures are reported, not barred.
//
//	VIGIL_PETSHOP_DIR=/path/to/petshop-root-cause-analysis/dataset go test ./internal/realdata/petshop -run DataSet -v -timeout 1h
func TestPetShopDataSet(t *testing.T) {
	dir := os.Getenv("VIGIL_PETSHOP_DIR")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		shared := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "realdata", "petshop")
		if _, err := os.Stat(shared); err != nil {
			t.Skip("VIGIL_PETSHOP_DIR is not set (the PetShop data set's dataset directory) and ../shared/realdata/petshop is absent")
		}
		dir = shared
	}
	results := evalAll(t, dir)
	require.NotEmpty(t, results)
	t.Log("\n" + table(t, results))
}

// BenchmarkPetShopEval times `vigil eval --suite petshop` on the shared
// data set: seconds per issue, the binary's start-up and the reading of
// the scenarios included.
func BenchmarkPetShopEval(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "realdata", "petshop")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("%s is not here", dir)
	}
	bin, err := peertest.BuildVigil()
	require.NoError(b, err)
	issues := 0
	start := time.Now()
	for b.Loop() {
		out, err := exec.CommandContext(b.Context(), bin, "eval", "--suite", "petshop", "--data", dir, "--json").Output()
		require.NoError(b, err)
		var rep struct {
			Results []Result `json:"results"`
		}
		require.NoError(b, json.Unmarshal(out, &rep))
		issues += len(rep.Results)
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(issues), "s/issue")
}
