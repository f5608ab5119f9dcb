package diagnose

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/sim"
)

// report is the part of `vigil diagnose --json` the comparison reads.
type report struct {
	At       time.Time `json:"at"`
	Healthy  bool      `json:"healthy"`
	Symptoms []struct {
		Kind   string            `json:"kind"`
		Entity map[string]string `json:"entity"`
		Since  time.Time         `json:"since"`
	} `json:"symptoms"`
	Causes   []cause  `json:"causes"`
	Findings []cause  `json:"findings"`
	Warnings []string `json:"warnings"`
}

type cause struct {
	Rank       int               `json:"rank"`
	Kind       string            `json:"kind"`
	Entity     map[string]string `json:"entity"`
	Confidence float64           `json:"confidence"`
	Since      *time.Time        `json:"since"`
}

// vigilDiagnose runs the vigil binary's diagnose with args and --json and
// decodes its one object.
func vigilDiagnose(t *testing.T, args ...string) report {
	t.Helper()
	cmd := exec.Command(peertest.Vigil(t), append([]string{"diagnose", "--json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "vigil diagnose %v: %s", args, stderr.String())
	dec := json.NewDecoder(&stdout)
	var r report
	require.NoError(t, dec.Decode(&r))
	require.False(t, dec.More(), "one JSON object on stdout")
	return r
}

// TestPrometheusEqualsInput backfills a simulated NVLink fault (30
// minutes, 4 nodes, a 2-rank training job) into Prometheus 2.42 with
// promtool and diagnoses it through --prometheus and through --input, at
// the end of the run and 3 minutes after the onset: the same symptoms, and
// the same causes and findings (rank, kind, entity, confidence).
func TestPrometheusEqualsInput(t *testing.T) {
	for _, bin := range []string{"promtool", "prometheus"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (make deb-deps installs it)", bin)
		}
	}
	sc, err := sim.ParseScenario("nvlink_degraded")
	require.NoError(t, err)
	s, err := sim.New(sim.Config{Seed: 1, Duration: 30 * time.Minute, Nodes: 4, GPUsPerNode: 4, TrainingNodes: 2,
		Replicas: 1, NodeCPUs: 2, PeakRequestRate: 3}, sc)
	require.NoError(t, err)
	path, p := backfilled(t, s)

	truth := s.Truth()[0]
	end := s.Config().Start.Add(s.Config().Duration)
	for _, at := range []time.Time{end, truth.Onset.Add(3 * time.Minute)} {
		t.Run(at.Format("15:04:05"), func(t *testing.T) {
			atArg := at.Format(time.RFC3339)
			want := vigilDiagnose(t, "--input", path, "--at", atArg)
			got := vigilDiagnose(t, "--prometheus", p.URL, "--at", atArg)

			require.NotEmpty(t, want.Causes, "the fault is found from the file")
			require.Equal(t, truth.Kind, want.Causes[0].Kind)
			require.True(t, want.At.Equal(at))
			require.True(t, got.At.Equal(at))
			require.Equal(t, want.Healthy, got.Healthy)
			require.Equal(t, want.Symptoms, got.Symptoms)
			require.Equal(t, want.Causes, got.Causes)
			require.Equal(t, want.Findings, got.Findings)
		})
	}
}

// backfilled writes s's run as OpenMetrics, backfills it into a fresh
// Prometheus data directory with promtool, and starts Prometheus 2.42 on
// it; it returns the file and the server.
func backfilled(t *testing.T, s *sim.Simulator) (string, *peertest.Proc) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "metrics.om")
	fh, err := os.Create(path)
	require.NoError(t, err)
	bw := bufio.NewWriter(fh)
	require.NoError(t, s.WriteOpenMetrics(t.Context(), bw))
	require.NoError(t, bw.Flush())
	require.NoError(t, fh.Close())
	dir := t.TempDir()
	peertest.Run(t, peertest.LookPath(t, "promtool"), "tsdb", "create-blocks-from", "openmetrics", path, dir)
	return path, peertest.StartPrometheus(t, dir, "")
}
