package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/ui"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The test store's story: four nodes of a job, two GPUs each, an hour of
// NVLink traffic every 15 s; gpu-node-03's collapses at onset.
var (
	now   = time.Date(2026, 11, 12, 3, 0, 0, 0, time.UTC)
	onset = now.Add(-15 * time.Minute)
)

// evil is a pod name that must show as text.
const evil = `<script>alert(1)</script>`

func openStore(t *testing.T) *store.Embedded {
	t.Helper()
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	app := s.AppenderV2(t.Context())
	for ts := now.Add(-time.Hour); !ts.After(now); ts = ts.Add(15 * time.Second) {
		for n := range 4 {
			for g := range 2 {
				node := fmt.Sprintf("gpu-node-%02d", n)
				v := 1000.0 + float64(10*n+g)
				if node == "gpu-node-03" && !ts.Before(onset) {
					v = 20
				}
				l := labels.FromStrings("__name__", "nvlink_bytes", "Hostname", node, "gpu", fmt.Sprint(g), "namespace", "train", "pod", evil)
				_, err := app.Append(0, l, 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
				require.NoError(t, err)
			}
		}
		// Each GPU's temperature and utilization (what /gpus reads); the
		// notebook's GPU is idle, and one node's name must show as text.
		for n, node := range []string{"gpu-node-00", "gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-09", evil} {
			util := 80.0
			if node == "gpu-node-09" {
				util = 0
			}
			for g := range min(2, 6-n) {
				for name, v := range map[string]float64{"DCGM_FI_DEV_GPU_TEMP": 60, "DCGM_FI_DEV_GPU_UTIL": util} {
					l := labels.FromStrings("__name__", name, "Hostname", node, "gpu", fmt.Sprint(g), "UUID", fmt.Sprintf("GPU-%d-%d", n, g))
					_, err := app.Append(0, l, 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
					require.NoError(t, err)
				}
			}
		}
		// An idle GPU of another namespace, which is no peer of the job's.
		_, err := app.Append(0, labels.FromStrings("__name__", "nvlink_bytes", "Hostname", "gpu-node-09", "gpu", "0", "namespace", "notebook"), 0, ts.UnixMilli(), 0, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	return s
}

// incidents is a fixed list of incidents.
type incidents []incident.Incident

func (l incidents) List() []incident.Incident { return l }

func (l incidents) Get(id string) (incident.Incident, bool) {
	for _, i := range l {
		if i.ID == id {
			return i, true
		}
	}
	return incident.Incident{}, false
}

func testIncidents() incidents {
	since := onset
	resolved := now.Add(-40 * time.Minute)
	return incidents{
		{
			ID: "abc123", Kind: "training_stall", Entity: diagnose.Entity{"namespace": "train", "pod": evil},
			Severity: incident.SeverityPage, State: incident.StateFiring, Summary: "train/job stalled: " + evil,
			Since: onset.Add(30 * time.Second), OpenedAt: onset.Add(time.Minute), LastSeen: now,
			Revision: 2,
			History: []incident.Revision{
				{At: onset.Add(time.Minute), Headline: "gpu-node-03 NVLink degradation"},
				{At: onset.Add(3 * time.Minute), Headline: "gpu-node-03 NVLink degradation (XID 74)"},
			},
			Causes: []diagnose.Cause{{
				Rank: 1, Kind: "nvlink_degraded", Entity: diagnose.Entity{"node": "gpu-node-03"}, Confidence: 0.93, Since: &since,
				Summary: "gpu-node-03 NVLink degradation", Action: "drain gpu-node-03 and reset the GPU",
				Evidence: []diagnose.Evidence{
					{Signal: "nvlink_bytes", Query: `nvlink_bytes{Hostname="gpu-node-03"}`, Summary: "NVLink traffic at 2% of the job's other GPUs"},
					{Signal: "broken", Query: `rate(nvlink_bytes{`, Summary: "a query that does not parse"},
					{Signal: "note", Summary: "no query"},
				},
			}},
		},
		{
			ID: "old1", Kind: "ttft_high", Entity: diagnose.Entity{"model": "llama"}, Severity: incident.SeverityTicket,
			State: incident.StateResolved, Summary: "llama slow", Since: now.Add(-50 * time.Minute), OpenedAt: now.Add(-50 * time.Minute),
			LastSeen: resolved, Resolved: &resolved, LastSent: now, ResolvedSent: now,
		},
	}
}

func newServer(t *testing.T, inc ui.Incidents) *httptest.Server {
	t.Helper()
	h, err := ui.New(ui.Options{Store: openStore(t), Incidents: inc, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if strings.HasPrefix(path, "/static/") {
		return resp.StatusCode, string(b)
	}
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
	return resp.StatusCode, string(b)
}

// requireOffline checks a page names nothing on another host: every src
// and href is a path of this server (or a data: URL).
func requireOffline(t *testing.T, body string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		u := m[1]
		require.True(t, strings.HasPrefix(u, "/") || strings.HasPrefix(u, "#") || u == "data:,", "a link off this server: %s", u)
		require.False(t, strings.HasPrefix(u, "//"), u)
	}
	require.NotContains(t, body, "<script", "no script at all")
}

func TestIncidentList(t *testing.T) {
	srv := newServer(t, testIncidents())
	for _, path := range []string{"/", "/incidents"} {
		code, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, code, path)
		requireOffline(t, body)
		require.Contains(t, body, `<h2 id="open-h">Open <span class="count">1</span></h2>`)
		require.Contains(t, body, `<a class="incident-link" href="/incidents/abc123">training_stall</a>`)
		require.Contains(t, body, "gpu-node-03 NVLink degradation <span class=\"conf\">0.93</span>", "the rank-1 cause and its confidence")
		require.Contains(t, body, "14m ago", "since, on the data clock")
		require.Contains(t, body, "<td>not sent</td>")
		require.Contains(t, body, `<h2 id="resolved-h">Recently resolved <span class="count">1</span></h2>`)
		require.Contains(t, body, "<td>resolution sent</td>")
		require.Contains(t, body, `href="/api/v1/incidents"`, "the page's JSON")
	}
	// A window that ends before the resolved incident began leaves it out.
	code, body := get(t, srv, "/incidents?from=2026-11-12T02:50:00Z&to=2026-11-12T03:00:00Z&refresh=30")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `Recently resolved <span class="count">0</span>`)
	require.Contains(t, body, `<meta http-equiv="refresh" content="30">`)
	require.Contains(t, body, `href="/incidents/abc123?from=2026-11-12T02%3A50%3A00Z&amp;refresh=30&amp;to=2026-11-12T03%3A00%3A00Z"`, "links keep the state")
}

func TestIncidentPage(t *testing.T) {
	srv := newServer(t, testIncidents())
	code, body := get(t, srv, "/incidents/abc123")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, "2026-11-12 02:45:30 UTC", "the onset")
	require.Contains(t, body, "#1</span> gpu-node-03 NVLink degradation")
	require.Contains(t, body, "<strong>93%</strong>")
	require.Contains(t, body, "drain gpu-node-03 and reset the GPU")
	// The plot: gpu-node-03's two GPUs as lines, the job's six others as
	// the band (the notebook's idle GPU is no peer), the onset marked,
	// the query copyable.
	require.Equal(t, 1, strings.Count(body, `<svg class="evidence-plot"`))
	require.Contains(t, body, `data-series="Hostname=gpu-node-03 gpu=0"`)
	require.Contains(t, body, `data-series="Hostname=gpu-node-03 gpu=1"`)
	require.Contains(t, body, `<path class="band band-range" d="M`)
	require.Contains(t, body, `data-peers="6"`)
	require.Contains(t, body, "of 6 other series in namespace train")
	require.Contains(t, body, `onset 02:45:00`)
	require.Contains(t, body, `<pre class="query"><code>nvlink_bytes{Hostname=&#34;gpu-node-03&#34;}</code></pre>`)
	require.Contains(t, body, `nvlink_bytes{namespace=&#34;train&#34;}`, "the peers' query")
	require.Regexp(t, `class="plot-error">No plot: evaluate rate\(nvlink_bytes\{: [^<]*parse error`, body, "a broken query says why, the page renders")
	// The timeline.
	require.Contains(t, body, "diagnosed: gpu-node-03 NVLink degradation</li>")
	require.Contains(t, body, "re-diagnosed: gpu-node-03 NVLink degradation (XID 74)</li>")
	require.Contains(t, body, "last seen (still firing)")
}

func TestEscapesLabelValues(t *testing.T) {
	srv := newServer(t, testIncidents())
	for _, path := range []string{"/incidents", "/incidents/abc123", "/gpus"} {
		_, body := get(t, srv, path)
		require.NotContains(t, body, evil, path)
		require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", path)
	}
}

func TestBadInput(t *testing.T) {
	srv := newServer(t, testIncidents())
	f := func(path string, code int, want string) {
		t.Helper()
		got, body := get(t, srv, path)
		require.Equal(t, code, got, path)
		require.Contains(t, body, want, path)
		require.NotContains(t, body, "goroutine", path)
		require.NotContains(t, body, ".go:", path)
	}
	f("/incidents/nope", http.StatusNotFound, `There is no incident &#34;nope&#34;.`)
	f("/incidents/%3Cscript%3E", http.StatusNotFound, `There is no incident &#34;&lt;script&gt;&#34;.`)
	f("/nope", http.StatusNotFound, "There is no page here.")
	f("/incidents/abc123?from=yesterday", http.StatusBadRequest, `bad time range: from=&#34;yesterday&#34;: not a time`)
	f("/incidents/abc123?from=yesterday", http.StatusBadRequest, `<svg class="evidence-plot"`) // the default window instead
	f("/incidents?from=2026-11-12T03:00:00Z&to=2026-11-12T02:00:00Z", http.StatusBadRequest,
		"bad time range: from (2026-11-12 03:00:00 UTC) is not before to (2026-11-12 02:00:00 UTC)")
	f("/incidents?from=2026-01-01T00:00:00Z&to=2026-11-12T00:00:00Z", http.StatusBadRequest, "longer than the 31 days a page shows")
	f("/incidents?refresh=-3", http.StatusBadRequest, "auto-refresh is off")
	// A window of its own: the plot says the query returned nothing.
	f("/incidents/abc123?from=2026-11-13T00:00:00Z&to=2026-11-13T01:00:00Z", http.StatusOK, "The query returned nothing from 2026-11-13 00:00:00 UTC")
	f("/incidents/abc123?from=30m", http.StatusOK, `<svg class="evidence-plot"`)
}

func TestEvaluationOff(t *testing.T) {
	srv := newServer(t, nil)
	code, body := get(t, srv, "/incidents")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "The evaluation is off")
	code, _ = get(t, srv, "/incidents/abc123")
	require.Equal(t, http.StatusNotFound, code)
}

func TestStylesheet(t *testing.T) {
	srv := newServer(t, nil)
	code, body := get(t, srv, "/static/vigil.css")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "prefers-color-scheme: dark")
	require.NotContains(t, body, "url(", "no font or image from anywhere")
}

func TestNewWithoutStore(t *testing.T) {
	_, err := ui.New(ui.Options{})
	require.EqualError(t, err, "ui: no store")
}

func TestGPUs(t *testing.T) {
	inc := testIncidents()
	since := onset
	inc = append(inc, incident.Incident{ID: "xid1", Kind: "nvlink_degraded", State: incident.StateFiring, Since: onset, LastSeen: now,
		Causes: []diagnose.Cause{{Rank: 1, Kind: "gpu_xid_error", Entity: diagnose.Entity{"node": "gpu-node-01", "gpu": "1"}, Confidence: 0.9, Since: &since, Summary: "XID 48 on gpu-node-01 GPU 1"}}})
	h, err := ui.New(ui.Options{Store: openStore(t), Incidents: inc, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, body := get(t, srv, "/gpus")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, "11 GPUs on 6 nodes at 2026-11-12 03:00:00 UTC:")
	require.Regexp(t, `<span class="hcount h-cause">1 gpu_xid_error</span>, <span class="hcount h-idle">2 idle</span>, <span class="hcount h-ok">8 ok</span>`, body, "the answer first, worst first")
	require.Contains(t, body, `<a class="gpu h-cause" href="/incidents/xid1" data-health="gpu_xid_error" title="gpu-node-01 GPU 1: gpu_xid_error — XID 48 on gpu-node-01 GPU 1">1</a>`,
		"the cause of an open incident wins, and links to it")
	require.Contains(t, body, `title="gpu-node-09 GPU 0: idle — utilization 0%">0</span>`, "the reason on hover")
	require.Contains(t, body, `<tr class="node-nvlink_degraded" title="nvlink_degraded: gpu-node-03 NVLink degradation">`, "a cause on the node marks its row")
	require.Contains(t, body, `href="/incidents/abc123" data-health="ok"`, "the node's GPUs link to its incident")

	api := httptest.NewServer(h.GPUsAPI())
	defer api.Close()
	resp, err := api.Client().Get(api.URL + "/api/v1/gpus?time=2026-11-12T03:00:00Z")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Data   struct {
			GPUs   int `json:"gpus"`
			Counts []struct {
				Health string `json:"health"`
				N      int    `json:"gpus"`
			} `json:"counts"`
			Nodes []struct {
				Node string `json:"node"`
				GPUs []struct {
					GPU, Health, Incident string
				} `json:"gpus"`
			} `json:"nodes"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "success", out.Status)
	require.Equal(t, 11, out.Data.GPUs)
	require.Equal(t, "gpu_xid_error", out.Data.Counts[0].Health)
	found := false
	for _, n := range out.Data.Nodes {
		if n.Node == "gpu-node-01" {
			require.Equal(t, "xid1", n.GPUs[1].Incident)
			require.Equal(t, "gpu_xid_error", n.GPUs[1].Health)
			found = true
		}
	}
	require.True(t, found, "gpu-node-01 in %+v", out.Data.Nodes)

	resp, err = api.Client().Get(api.URL + "/api/v1/gpus?time=soon")
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
}

func TestGPUsEmpty(t *testing.T) {
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	h, err := ui.New(ui.Options{Store: s, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, body := get(t, srv, "/gpus")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No GPU reports to Vigil")
	require.Contains(t, body, "the store holds no data")
}
