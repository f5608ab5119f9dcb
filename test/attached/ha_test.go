package attached

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// withLabel rewrites an OpenMetrics file with name="value" added to every
// sample: two clusters' telemetry in one backend, told apart by a label,
// as a shared Mimir or VictoriaMetrics holds them.
func withLabel(t *testing.T, in, out, name, value string) {
	t.Helper()
	f, err := os.Open(in)
	require.NoError(t, err)
	defer f.Close()
	w, err := os.Create(out)
	require.NoError(t, err)
	bw := bufio.NewWriter(w)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	pair := fmt.Sprintf("%s=%q", name, value)
	for sc.Scan() {
		line := sc.Text()
		switch i := strings.IndexAny(line, "{ "); {
		case line == "" || line[0] == '#' || i < 0:
		case line[i] == '{' && strings.HasPrefix(line[i:], "{}"):
			line = line[:i] + "{" + pair + line[i+1:]
		case line[i] == '{':
			line = line[:i+1] + pair + "," + line[i+1:]
		default:
			line = line[:i] + "{" + pair + "}" + line[i:]
		}
		_, _ = bw.WriteString(line)
		_ = bw.WriteByte('\n')
	}
	require.NoError(t, sc.Err())
	require.NoError(t, bw.Flush())
	require.NoError(t, w.Close())
}

// amAlert is an alert as Alertmanager's API v2 lists it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

func amAlerts(t *testing.T, base string) []amAlert {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out []amAlert
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// amReceived is how many firing alerts Alertmanager was sent
// (alertmanager_alerts_received_total).
func amReceived(t *testing.T, base string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "alertmanager_alerts_received_total{") && strings.Contains(line, `status="firing"`) {
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(t, err)
			sum += f
		}
	}
	return sum
}

// TestAttachedHA: one Prometheus 2.42 holds two clusters, told apart by a
// cluster label: "a" with NVLink degradation on a training node, "b"
// healthy. Two Vigils attached with the selector {cluster="a"} (an HA
// pair) both page the stall with the same rank-1 cause, and the real
// Alertmanager both send to holds it once: the alert's identity is the
// same from either (its labels, and the shard's cluster="a" the selector
// adds to them), so Alertmanager deduplicates. A third Vigil with the
// selector {cluster="b"} (the other shard) never pages the stall: it does
// not see cluster a's telemetry.
func TestAttachedHA(t *testing.T) {
	vigil := peertest.Vigil(t)
	dir := t.TempDir()
	start := time.Now().Add(-40 * time.Minute).Unix()
	for _, c := range []struct{ name, scenario string }{{"a", "nvlink_degraded"}, {"b", "healthy"}} {
		sim := filepath.Join(dir, "sim-"+c.name)
		args := []string{"simulate", "--scenario", c.scenario, "--start", strconv.FormatInt(start, 10),
			"--duration", "40m", "--nodes", "8", "--out", sim}
		if c.scenario != "healthy" {
			args = append(args, "--onset", "15m")
		}
		peertest.Run(t, vigil, args...)
		withLabel(t, filepath.Join(sim, "metrics.om"), filepath.Join(dir, c.name+".om"), "cluster", c.name)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "prometheus"), 0o755))
	be := backends[0].start(t, filepath.Join(dir, "prometheus"), peertest.FreeAddr(t))
	defer func() { require.NoError(t, be.Stop()) }()
	total := 0
	for _, c := range []string{"a", "b"} {
		total += sentSeries(t, peertest.Run(t, vigil, "import", "--server", be.URL, filepath.Join(dir, c+".om")))
	}
	require.Eventually(t, func() bool { return seriesCount(t, be.URL, start) == total },
		time.Minute, time.Second, "Prometheus does not serve every series imported")

	am := peertest.StartAlertmanager(t)
	defer func() { require.NoError(t, am.Stop()) }()
	config := func(name, cluster string) string {
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(p, fmt.Appendf(nil, `evaluation:
  interval: 5s
source:
  url: %s
  selector: '{cluster=%q}'
alerting:
  alertmanagers: [%s]
  resend_interval: 5s
`, be.URL, cluster, am.URL), 0o644))
		return p
	}
	var pair []*peertest.Proc
	for _, name := range []string{"a1", "a2"} {
		pair = append(pair, peertest.StartVigil(t, "--config", config(name, "a"), "--data-dir", filepath.Join(dir, name)))
	}
	other := peertest.StartVigil(t, "--config", config("b", "b"), "--data-dir", filepath.Join(dir, "b"))
	var got []incidentView
	for _, v := range pair {
		var inc incidentView
		require.Eventually(t, func() bool {
			var ok bool
			inc, ok = firing(t, v.URL, "training_stall")
			return ok && len(inc.Causes) > 0
		}, 2*time.Minute, time.Second, "a Vigil of the pair never paged the stall; its log:\n%s", v.Output())
		got = append(got, inc)
	}
	require.Equal(t, got[0].Entity, got[1].Entity)
	require.Equal(t, got[0].Causes[0], got[1].Causes[0], "both name the same rank-1 cause")

	// Both send, on every resend; Alertmanager holds one alert.
	received := 0.0
	require.Eventually(t, func() bool {
		received = amReceived(t, am.URL)
		return received >= 4
	}, time.Minute, time.Second, "Alertmanager was not sent the stall by both")
	var stalls []amAlert
	for _, a := range amAlerts(t, am.URL) {
		if a.Labels["alertname"] == "TrainingStall" {
			stalls = append(stalls, a)
		}
	}
	require.Len(t, stalls, 1, "the pair's alerts are one to Alertmanager (received %v): %+v", received, stalls)
	require.Equal(t, "active", stalls[0].Status.State)
	require.Equal(t, "a", stalls[0].Labels["cluster"], "the selector's cluster=\"a\" names the shard in its alerts")

	// The other shard sees cluster b only: no training stall. (Its
	// inference may page: the simulator's traffic follows the time of day,
	// and a healthy run's traffic spike at the afternoon's peak fills the
	// queue.)
	cycles := metric(t, other.URL, "vigil_watch_cycles_total")
	require.Eventually(t, func() bool { return metric(t, other.URL, "vigil_watch_cycles_total") >= cycles+3 },
		time.Minute, time.Second)
	for _, i := range incidents(t, other.URL) {
		require.NotEqual(t, "training_stall", i.Kind, "the other shard sees cluster a's stall: %v", i.Entity)
	}
	require.Equal(t, 1.0, metric(t, other.URL, "vigil_source_up"))
	for _, p := range append(pair, other) {
		require.NoError(t, p.Stop())
	}
}
