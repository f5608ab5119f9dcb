package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/sim"
)

// TestEvalUsage: bad flags are exit 2 with one line, before anything runs.
func TestEvalUsage(t *testing.T) {
	requireUsage(t, runVigil(t, "", "eval", "--suite", "nope"),
		`eval: unknown suite "nope" (the suites are small, main, subtle, unseen, later, generic, graph, robust, all)`)
	requireUsage(t, runVigil(t, "", "eval", "--seeds", "0"), "--seeds must be at least 1")
	requireUsage(t, runVigil(t, "", "eval", "--parallel", "0"), "--parallel must be at least 1")
	requireUsage(t, runVigil(t, "", "eval", "--scenario", "bogus"), `unknown scenario "bogus"`)
	requireUsage(t, runVigil(t, "", "eval", "--suite", "main", "--scenario", "healthy"), "exclude each other")
	requireUsage(t, runVigil(t, "", "eval", "--duration", "10s"), "--duration")
	requireUsage(t, runVigil(t, "", "eval", "extra"), "unknown command")
	requireUsage(t, runVigil(t, "", "eval", "--suite", "nezha"), "--suite nezha needs --data DIR")
	requireUsage(t, runVigil(t, "", "eval", "--data", "x"), "--data goes with --suite nezha or petshop")
	requireUsage(t, runVigil(t, "", "eval", "--suite", "petshop"), "--suite petshop needs --data DIR")
	requireUsage(t, runVigil(t, "", "eval", "--suite", "nezha", "--data", "x", "--check"), "no bars to --check")
}

// TestEvalNezha runs the nezha suite on a day in the data set's layout:
// two services, each row a minute for three hours, and two CPU faults,
// the one on cart ten minutes before the one on frontend.
func TestEvalNezha(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2024-05-01")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "metric"), 0o755))
	start := time.Date(2024, 5, 1, 10, 0, 19, 0, time.UTC)
	faults := map[string]time.Time{"cartservice": start.Add(20 * time.Minute), "frontend": start.Add(30 * time.Minute)}
	for _, pod := range []string{"cartservice-579f59597d-wc2lz", "frontend-579b9bff58-t2dbm"} {
		var b strings.Builder
		b.WriteString("Time,TimeStamp,PodName,CpuUsageRate(%),MemoryUsage(Mi)\n")
		for i := range 180 {
			ts := start.Add(time.Duration(i) * time.Minute)
			cpu := 20 + float64(i%4)
			if at := faults[strings.SplitN(pod, "-", 2)[0]]; !ts.Before(at) && ts.Before(at.Add(4*time.Minute)) {
				cpu = 95
			}
			fmt.Fprintf(&b, "%s m=+1.0,%d,%s,%g,%g\n", ts.Format("2006-01-02 15:04:05.999999999 -0700 MST"), ts.Unix(), pod, cpu, 300+float64(i%3))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "metric", pod+"_metric.csv"), []byte(b.String()), 0o644))
	}
	list := `{"10": [{"inject_time": "2024-05-01 10:20:05", "inject_timestamp": "1714558805", "inject_pod": "cartservice-579f59597d-wc2lz", "inject_type": "cpu_contention"},
		{"inject_time": "2024-05-01 10:30:05", "inject_timestamp": "1714559405", "inject_pod": "frontend-579b9bff58-t2dbm", "inject_type": "cpu_contention"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "2024-05-01-fault_list.json"), []byte(list), 0o644))

	r := runVigil(t, "", "eval", "--suite", "nezha", "--data", filepath.Dir(dir))
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "suite nezha: 2 faults")
	require.Regexp(t, `2024-05-01 +metrics +all +2 +1\.00 +1\.00`, r.stdout)
	require.Contains(t, r.stderr, "nezha: 2024-05-01 metrics cpu_contention cartservice: rank 1\n")

	r = runVigil(t, "", "eval", "--suite", "nezha", "--data", dir, "--json")
	require.NoError(t, r.err, r.stderr)
	var rep struct {
		Results []struct {
			Truth  string   `json:"truth"`
			Ranked []string `json:"ranked"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Results, 2)
	require.Equal(t, "frontend", rep.Results[1].Truth)
	require.Equal(t, "frontend", rep.Results[1].Ranked[0])

	r = runVigil(t, "", "eval", "--suite", "nezha", "--data", t.TempDir())
	require.Error(t, r.err)
	require.Contains(t, r.stderr, "no Nezha day")
}

// runEvalWith runs vigil eval with a fake engine, as Run would.
func runEvalWith(t *testing.T, diag eval.DiagnoseFunc, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, now: time.Now, evalEngine: diag}
	root := newRoot(e)
	root.SetArgs(append([]string{"eval"}, args...))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.ExecuteContext(t.Context())
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err, code: exitCode(err)}
}

// oracle answers with the truth of nvlink_degraded seed 1 over 10 minutes
// from its onset on.
func oracle(t *testing.T) eval.DiagnoseFunc {
	t.Helper()
	sc, err := sim.ParseScenario("nvlink_degraded")
	require.NoError(t, err)
	s, err := sim.New(sim.Config{Seed: 1, Duration: 10 * time.Minute}, sc)
	require.NoError(t, err)
	truth := s.Truth()[0]
	return func(_ context.Context, _ diagnose.Source, at time.Time) (*diagnose.Report, error) {
		rep := &diagnose.Report{At: at, Healthy: true}
		if !at.Before(truth.Onset) {
			rep.Healthy = false
			rep.Causes = []diagnose.Cause{{Rank: 1, Kind: truth.Kind, Entity: diagnose.Entity(truth.Entity), Confidence: 0.93}}
		}
		return rep, nil
	}
}

// TestEvalRuns runs a scenario end to end through a fake engine: the
// tables on stdout, progress on stderr, one JSON object with --json, and
// --check passing.
func TestEvalRuns(t *testing.T) {
	args := []string{"--scenario", "nvlink_degraded", "--seeds", "1", "--duration", "10m"}
	r := runEvalWith(t, oracle(t), append(args, "--check")...)
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "suite custom: 1 runs, 1 faults, 0 healthy\n")
	require.Regexp(t, `(?m)^nvlink_degraded\s+1\s+1\.00\s+1\.00\s+1\.00\s+1\.00\s+1\.00\s+0s\s+0s\s+0$`, r.stdout)
	require.Contains(t, r.stdout, "ECE 0.070\n")
	require.Contains(t, r.stderr, "eval: 1/1 custom nvlink_degraded seed 1: nvlink_degraded rank 1, first after 0s")

	r = runEvalWith(t, oracle(t), append(args, "--json")...)
	require.NoError(t, r.err, r.stderr)
	res := decodeOne[eval.Result](t, r.stdout)
	require.Len(t, res.Cases, 1)
	require.Equal(t, 1.0, res.Suites[0].Overall.AC1)
	require.NotContains(t, r.stdout, "eval: 1/1", "progress is not on stdout")
}

// TestEvalCheck: a missed bar with --check is exit 1 with one line, after
// the tables.
func TestEvalCheck(t *testing.T) {
	wrong := func(_ context.Context, _ diagnose.Source, at time.Time) (*diagnose.Report, error) {
		return &diagnose.Report{At: at, Causes: []diagnose.Cause{{Rank: 1, Kind: "node_down", Entity: diagnose.Entity{"node": "gpu-node-01"}, Confidence: 0.9}}}, nil
	}
	r := runEvalWith(t, wrong, "--scenario", "nvlink_degraded", "--seeds", "1", "--duration", "10m", "--check")
	require.Error(t, r.err)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.err.Error(), "bar(s) missed: suite custom: AC@1 0.000 is below 0.90")
	require.NotContains(t, r.err.Error(), "\n")
	require.Contains(t, r.stdout, "suite custom")

	// Without --check the job is done: exit 0.
	r = runEvalWith(t, wrong, "--scenario", "nvlink_degraded", "--seeds", "1", "--duration", "10m")
	require.NoError(t, r.err)
}
