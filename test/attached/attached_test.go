// Package attached runs `vigil serve`, the real binary, with the
// Prometheus 2.42 and VictoriaMetrics 1.79 a team already runs:
//
//   - attached (--prometheus URL) to each, holding a simulated incident
//     loaded through its own write path, comparing what it pages with the
//     embedded `vigil serve` on the same data, then taking the backend
//     away mid-incident and bringing it back (TestAttachedServe);
//   - vigil replay over each backend (TestAttachedServe);
//   - sending what it stores and derives to both with a remote_write:
//     section, through a 2-minute outage of Prometheus (TestRemoteWriteOut);
//   - an HA pair and a second shard on one Prometheus holding two
//     clusters, with a real Alertmanager (TestAttachedHA).
//
// The package has no code outside its tests.
package attached

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/peertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// incidentView is an incident as /api/v1/incidents shows it.
type incidentView struct {
	ID       string            `json:"id"`
	Kind     string            `json:"kind"`
	Entity   map[string]string `json:"entity"`
	State    string            `json:"state"`
	Summary  string            `json:"summary"`
	OpenedAt time.Time         `json:"opened_at"`
	Revision int               `json:"revision"`
	Causes   []struct {
		Kind   string            `json:"kind"`
		Entity map[string]string `json:"entity"`
	} `json:"causes"`
}

func incidents(t *testing.T, base string) []incidentView {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/incidents")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Incidents []incidentView `json:"incidents"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Data.Incidents
}

// firing returns the firing incident of kind, if any.
func firing(t *testing.T, base, kind string) (incidentView, bool) {
	for _, i := range incidents(t, base) {
		if i.Kind == kind && i.State == "firing" {
			return i, true
		}
	}
	return incidentView{}, false
}

// metric returns the value of an unlabelled series of /metrics, or -1.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	return -1
}

// sentSeries reads the series count of vigil import's summary line.
func sentSeries(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`sent (\d+) series`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// seriesCount returns how many series base serves from start (Unix
// seconds) on, or -1.
func seriesCount(t *testing.T, base string, start int64) int {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/series", map[string][]string{
		"match[]": {`{__name__=~".+"}`}, "start": {strconv.FormatInt(start-60, 10)}, "end": {strconv.FormatInt(time.Now().Unix()+60, 10)}})
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var out struct {
		Data []map[string]string `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) != nil {
		return -1
	}
	return len(out.Data)
}

// backend is a Prometheus-compatible store the test loads and kills.
type backend struct {
	name  string
	start func(t *testing.T, dir, addr string) *peertest.Proc
}

var backends = []backend{
	{"Prometheus 2.42", func(t *testing.T, dir, addr string) *peertest.Proc {
		cfg := filepath.Join(dir, "prometheus.yml")
		// The import sends 40 minutes of history into a fresh head.
		require.NoError(t, os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\nstorage:\n  tsdb:\n    out_of_order_time_window: 2h\n"), 0o644))
		url := "http://" + addr
		return peertest.Start(t, url, addr, peertest.StatusOK(url+"/-/ready"), peertest.LookPath(t, "prometheus"),
			"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
			"--web.enable-remote-write-receiver", "--storage.tsdb.retention.time=100y", "--log.level=warn")
	}},
	{"VictoriaMetrics 1.79", func(t *testing.T, dir, addr string) *peertest.Proc {
		url := "http://" + addr
		return peertest.Start(t, url, addr, peertest.StatusOK(url+"/health"), peertest.LookPath(t, "victoria-metrics"),
			"-httpListenAddr="+addr, "-storageDataPath="+filepath.Join(dir, "data"), "-retentionPeriod=100y",
			"-search.latencyOffset=0s", "-loggerLevel=WARN")
	}},
}

// TestAttachedServe: on a simulated NVLink fault loaded into each backend
// through its own write path, the attached `vigil serve` opens the same
// training-stall page with the same rank-1 cause as the embedded one on
// the same data. With the backend killed mid-incident, its cycles are
// skipped (vigil_source_up 0), nothing resolves past resolve_after and a
// page says Vigil is blind; with the backend back on the same data, the
// same incident goes on.
// uiReadsBackend checks that the web UI of an attached serve reads what
// its diagnosis read: the backend's GPUs on /api/v1/gpus (8 nodes of 8),
// and the incident's evidence plotted from the backend's series, with the
// peers' band, not an empty plot from the embedded store alone.
func uiReadsBackend(t *testing.T, base, id string) {
	t.Helper()
	var gpus struct {
		Data struct {
			GPUs int `json:"gpus"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(t, base+"/api/v1/gpus")), &gpus))
	require.Equal(t, 64, gpus.Data.GPUs, "the attached UI's GPU grid")
	page := get(t, base+"/incidents/"+id)
	require.Contains(t, page, `class="series faulty`, "the incident's evidence is not plotted")
	require.Contains(t, page, `class="band band-range"`, "the evidence plot has no peers' band")
	require.NotContains(t, page, "The query returned nothing", "an evidence plot is empty")
}

// get returns the body of a GET of url, which must answer 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b)
	return string(b)
}

func TestAttachedServe(t *testing.T) {
	vigil := peertest.Vigil(t)
	dir := t.TempDir()
	sim := filepath.Join(dir, "sim")
	start := time.Now().Add(-40 * time.Minute).Unix()
	peertest.Run(t, vigil, "simulate", "--scenario", "nvlink_degraded", "--start", strconv.FormatInt(start, 10),
		"--duration", "40m", "--onset", "15m", "--nodes", "8", "--out", sim)
	data := filepath.Join(sim, "metrics.om")
	cfg := filepath.Join(dir, "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("evaluation:\n  interval: 5s\n  resolve_after: 20s\n"), 0o644))

	// Both sides hold the whole incident before their first cycle: an
	// incident's entity is what the cycle that opens it sees, and a cycle
	// during an import sees part of the data.
	peertest.Run(t, vigil, "import", "--data-dir", filepath.Join(dir, "embedded"), data)
	emb := peertest.StartVigil(t, "--config", cfg, "--data-dir", filepath.Join(dir, "embedded"))
	var want incidentView
	require.Eventually(t, func() bool {
		var ok bool
		want, ok = firing(t, emb.URL, "training_stall")
		return ok && len(want.Causes) > 0
	}, 2*time.Minute, time.Second, "the embedded serve never paged the stall")
	require.NoError(t, emb.Stop())

	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			bdir := filepath.Join(dir, strings.Fields(b.name)[0])
			require.NoError(t, os.MkdirAll(bdir, 0o755))
			addr := peertest.FreeAddr(t)
			be := b.start(t, bdir, addr)
			sent := peertest.Run(t, vigil, "import", "--server", be.URL, data)
			// The backend serves all of it before Vigil reads it (VictoriaMetrics
			// makes what it ingests searchable a moment later).
			require.Eventually(t, func() bool { return seriesCount(t, be.URL, start) == sentSeries(t, sent) },
				time.Minute, time.Second, "%s does not serve every series imported", b.name)
			att := peertest.StartVigil(t, "--config", cfg, "--data-dir", filepath.Join(bdir, "vigil"), "--prometheus", be.URL)
			var got incidentView
			require.Eventually(t, func() bool {
				var ok bool
				got, ok = firing(t, att.URL, "training_stall")
				return ok && len(got.Causes) > 0
			}, 2*time.Minute, time.Second, "the attached serve never paged the stall; its log:\n%s", att.Output())
			require.Equal(t, want.Entity, got.Entity)
			require.Equal(t, want.Causes[0], got.Causes[0], "rank-1 cause")
			require.Equal(t, 1.0, metric(t, att.URL, "vigil_source_up"))
			uiReadsBackend(t, att.URL, got.ID)

			// vigil replay over the same backend: the first page after the
			// onset names the same cause.
			out := peertest.Run(t, vigil, "replay", "--json", "--prometheus", be.URL, "--interval", "2m",
				"--from", strconv.FormatInt(start+16*60, 10), "--to", strconv.FormatInt(start+40*60, 10))
			var rep struct {
				Pages []struct {
					Severity string `json:"severity"`
					Symptom  struct {
						Kind string `json:"kind"`
					} `json:"symptom"`
					Causes []struct {
						Kind   string            `json:"kind"`
						Entity map[string]string `json:"entity"`
					} `json:"causes"`
				} `json:"pages"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
			paged := false
			for _, p := range rep.Pages {
				if p.Severity == "page" && p.Symptom.Kind == "training_stall" && len(p.Causes) > 0 {
					require.Equal(t, want.Causes[0].Kind, p.Causes[0].Kind, "replay's rank-1 cause")
					require.Equal(t, want.Causes[0].Entity, p.Causes[0].Entity)
					paged = true
					break
				}
			}
			require.True(t, paged, "replay never paged the stall: %s", out)

			be.Kill()
			require.Eventually(t, func() bool { return metric(t, att.URL, "vigil_watch_skipped_cycles_total") >= 8 },
				2*time.Minute, time.Second, "cycles not skipped with the backend down")
			require.Equal(t, 0.0, metric(t, att.URL, "vigil_source_up"))
			held, ok := firing(t, att.URL, "training_stall")
			require.True(t, ok, "the stall resolved while Vigil could not see (resolve_after 20s, 40 s down)")
			require.Equal(t, got.ID, held.ID)
			require.Equal(t, got.Summary, held.Summary)
			blind, ok := firing(t, att.URL, "exporter_down")
			require.True(t, ok, "no page says Vigil is blind")
			require.Contains(t, blind.Summary, "cannot read its source")

			be = b.start(t, bdir, addr)
			defer func() { require.NoError(t, be.Stop()) }()
			require.Eventually(t, func() bool { return metric(t, att.URL, "vigil_source_up") == 1 },
				time.Minute, time.Second, "the backend back, Vigil does not read it")
			cycles := metric(t, att.URL, "vigil_watch_cycles_total")
			require.Eventually(t, func() bool { return metric(t, att.URL, "vigil_watch_cycles_total") >= cycles+2 }, time.Minute, time.Second)
			again, ok := firing(t, att.URL, "training_stall")
			require.True(t, ok, "the stall is gone once the backend is back")
			require.Equal(t, got.ID, again.ID)
			require.Equal(t, got.OpenedAt, again.OpenedAt, "the same incident goes on, not a new one")
			require.NoError(t, att.Stop())
		})
	}
}
