package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// chromium returns the path of Debian's Chromium, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("Chromium is not installed (Debian package chromium; make deps installs it)")
	return ""
}

var demoUpRE = regexp.MustCompile(`the API is up on (http://\S+)`)

// startDemo runs `vigil demo --serve [SCENARIO]` on a free port of
// 127.0.0.1 — by default the NVLink story in simulated time, about 10 s —
// and returns its URL once the API is up; the demo stops with the test.
func startDemo(t *testing.T, scenario ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stderr := &peertest.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, append([]string{"demo", "--serve", "--listen", "127.0.0.1:0"}, scenario...), strings.NewReader(""), &peertest.SyncBuffer{}, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, stderr.String())
		case <-time.After(30 * time.Second):
			t.Errorf("the demo did not stop 30 s after it was told to")
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m := demoUpRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("the demo ended before serving: %v\n%s", err, stderr)
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the demo is not serving after 2 minutes:\n%s", stderr)
	}
}

// browserLog keeps what the browser reports that a page must never do:
// console errors, uncaught exceptions, failed or refused requests, and
// requests to another host than Vigil's.
type browserLog struct {
	host string
	mu   sync.Mutex
	bad  []string
	reqs int
}

func (b *browserLog) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
			args, _ := json.Marshal(e.Args)
			b.bad = append(b.bad, fmt.Sprintf("console %s: %s", e.Type, args))
		}
	case *runtime.EventExceptionThrown:
		b.bad = append(b.bad, "exception: "+e.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			b.bad = append(b.bad, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		b.reqs++
		u, err := url.Parse(e.Request.URL)
		if err != nil || (u.Scheme != "data" && u.Host != b.host) {
			b.bad = append(b.bad, "a request to another host: "+e.Request.URL)
		}
	case *network.EventLoadingFailed:
		b.bad = append(b.bad, fmt.Sprintf("request failed: %s %s", e.ErrorText, e.BlockedReason))
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 {
			b.bad = append(b.bad, fmt.Sprintf("HTTP %d: %s", e.Response.Status, e.Response.URL))
		}
	}
}

func (b *browserLog) problems() ([]string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bad...), b.reqs
}

// screenshotDir is $VIGIL_UI_SCREENSHOTS, or the test's artifact
// directory (kept with go test -artifacts).
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("VIGIL_UI_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.ArtifactDir()
}

// TestUIInBrowser opens the UI of a Vigil that ran the NVLink demo in
// headless Chromium: from / it clicks through to the training stall's
// incident, and reads from the DOM that the page names gpu-node-06,
// NVLink and the action, and that the NVLink evidence is plotted with the
// faulty GPUs' series and the peers' band; on /gpus the faulty GPU's cell
// carries the cause; /platform, /inference and /failures answer first
// and chart second. No page may log an error, fail
// a request or ask another host for anything. A screenshot of each page
// goes to screenshotDir.
// browser starts headless Chromium (bin) for the UI at base, for the
// test's length: the context to run in (90 s), the log of what its pages
// must never do, and shoot, which saves a screenshot of the page into
// screenshotDir (named in the test's log).
func browser(t *testing.T, bin, base string) (ctx context.Context, blog *browserLog, shoot func(name string)) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	blog = &browserLog{host: u.Host}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.NoSandbox, chromedp.Flag("headless", true), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel = chromedp.NewContext(actx, chromedp.WithListener(blog.listen))
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)
	dir := screenshotDir(t)
	t.Cleanup(func() { t.Logf("screenshots in %s", dir) })
	return ctx, blog, func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	}
}

func TestUIInBrowser(t *testing.T) {
	bin := chromium(t)
	base := startDemo(t)
	ctx, blog, shoot := browser(t, bin, base)

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("table.incidents"))))
	list, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	require.NoError(t, err)
	require.Contains(t, list, "training_stall")
	require.Contains(t, list, "gpu-node-06 NVLink degradation")
	shoot("incidents.png")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//a[@class="incident-link"][text()="training_stall"]`)),
		chromedp.WaitVisible(chromedp.CSS("article.cause"))))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Regexp(t, `/incidents/[0-9a-f]+$`, loc)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	require.NoError(t, err)
	require.Contains(t, text, "training_stall")
	require.Contains(t, text, "gpu-node-06 NVLink degradation")
	require.Contains(t, text, "Do: drain gpu-node-06 and reset the GPU")

	type plot struct {
		Series []string `json:"series"`
		Bands  int      `json:"bands"`
		Peers  string   `json:"peers"`
		Onset  bool     `json:"onset"`
		Query  string   `json:"query"`
	}
	p, err := chromedp.Run(ctx, chromedp.Evaluate[plot](`(() => {
		const li = document.querySelector('li.evidence-item[data-signal="DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]');
		const svg = li.querySelector("svg.evidence-plot");
		const band = svg.querySelector("path.band-range");
		return {
			series: [...svg.querySelectorAll("path.series.faulty")].filter(p => p.getAttribute("d").startsWith("M")).map(p => p.dataset.series),
			bands: [...svg.querySelectorAll("path.band")].filter(p => p.getAttribute("d").includes("Z")).length,
			peers: band ? band.dataset.peers : "",
			onset: svg.querySelector("line.onset") !== null,
			query: li.querySelector("pre.query code").textContent,
		};
	})()`))
	require.NoError(t, err)
	require.Contains(t, p.Series, "Hostname=gpu-node-06 gpu=3", "the faulty GPU's series")
	require.Len(t, p.Series, 8, "the node's eight GPUs")
	require.Equal(t, 2, p.Bands, "the peers' min–max and quartiles")
	require.Equal(t, "56", p.Peers, "the job's 7 other nodes × 8 GPUs")
	require.True(t, p.Onset)
	require.Equal(t, `DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{Hostname="gpu-node-06"}`, p.Query)
	shoot("incident.png")

	// The other incident, by the navigation bar and the list.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//header//nav/a[text()="Incidents"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.incidents")),
		chromedp.Click(chromedp.Search(`//a[@class="incident-link"][text()="nvlink_degraded"]`)),
		chromedp.WaitVisible(chromedp.CSS("article.cause"))))
	shoot("incident-nvlink.png")

	// The GPU grid: gpu-node-06 GPU 3 carries the incident's cause, the
	// reason on hover, and links to it.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//header//nav/a[text()="GPUs"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.gpu-grid"))))
	type cell struct {
		Cells  int    `json:"cells"`
		Health string `json:"health"`
		Title  string `json:"title"`
		Href   string `json:"href"`
	}
	c, err := chromedp.Run(ctx, chromedp.Evaluate[cell](`(() => {
		const row = [...document.querySelectorAll("table.gpu-grid tr")].find(r => r.querySelector("th").textContent === "gpu-node-06");
		const g = [...row.querySelectorAll(".gpu")].find(e => e.textContent === "3");
		return {cells: document.querySelectorAll("table.gpu-grid .gpu").length, health: g.dataset.health, title: g.title, href: g.getAttribute("href") || ""};
	})()`))
	require.NoError(t, err)
	require.Equal(t, 80, c.Cells, "10 nodes × 8 GPUs")
	require.Equal(t, "nvlink_degraded", c.Health)
	require.Contains(t, c.Title, "gpu-node-06 GPU 3: nvlink_degraded — gpu-node-06 NVLink degradation")
	require.Regexp(t, `^/incidents/[0-9a-f]+$`, c.Href)
	shoot("gpus.png")

	// The questions, by the navigation bar: each answers first (its
	// verdict in data-verdict) and draws its charts second.
	type answer struct {
		Verdict string   `json:"verdict"`
		Answer  string   `json:"answer"`
		Charts  []string `json:"charts"`
		Lines   int      `json:"lines"`
		Text    string   `json:"text"`
	}
	readAnswer := func(nav, shot string) answer {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Click(chromedp.Search(`//header//nav/a[text()="`+nav+`"]`)),
			chromedp.WaitVisible(chromedp.CSS("p.answer[data-verdict]"))))
		a, err := chromedp.Run(ctx, chromedp.Evaluate[answer](`(() => {
			const p = document.querySelector("p.answer[data-verdict]");
			return {
				verdict: p.dataset.verdict, answer: p.textContent,
				charts: [...document.querySelectorAll(".chart h3")].map(h => h.textContent),
				lines: [...document.querySelectorAll(".chart path.series")].filter(p => p.getAttribute("d").startsWith("M")).length,
				text: document.querySelector("main").textContent,
			};
		})()`))
		require.NoError(t, err)
		shoot(shot)
		return a
	}
	pl := readAnswer("Platform", "platform.png")
	require.Equal(t, "healthy", pl.Verdict, pl.Answer)
	require.Contains(t, pl.Text, "10 of 10 nodes ready")
	require.Contains(t, pl.Text, "vllm-llama-3-1-70b")
	require.Contains(t, pl.Charts, "Nodes ready")
	require.Positive(t, pl.Lines)

	inf := readAnswer("Inference", "inference.png")
	require.Equal(t, "healthy", inf.Verdict, inf.Answer)
	require.Contains(t, inf.Answer, "1 model serving")
	require.Contains(t, inf.Text, "meta-llama/Llama-3.1-70B-Instruct")
	require.Contains(t, inf.Text, "llm-time-to-first-token", "the TTFT SLO's burn rates")
	require.Contains(t, inf.Charts, "p95 time to first token (s)")
	require.Contains(t, inf.Charts, "KV-cache usage (1 = full)")
	require.GreaterOrEqual(t, inf.Lines, 6)

	fl := readAnswer("Failures", "failures.png")
	require.Equal(t, "healthy", fl.Verdict, fl.Answer)
	require.Contains(t, fl.Answer, "the inference engines counted failed", "the NVLink demo has no span metrics")
	require.Contains(t, fl.Text, "By model (the inference engines' counters)")
	require.Contains(t, readAnswer("Tenants", "tenants.png").Answer, "No tenants in the data", "the NVLink demo has no tenant label")
	// The demo prices its A100s (cmd/vigil/demo.go): the notebook holds one
	// mostly idle, the training job 64, the vLLM replicas 8.
	cst := readAnswer("Cost", "cost.png")
	require.Regexp(t, `^[0-9.]+ USD in all: [0-9.]+ held by pods, of which [0-9.]+ idle`, cst.Answer)
	for _, ns := range []string{"ml-train", "inference", "research"} {
		require.Contains(t, cst.Text, ns)
	}
	require.Contains(t, cst.Text, "prompt", "the vLLM model's cost per million tokens")

	// The topology, searched by its GET form.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//header//nav/a[text()="Topology"]`)),
		chromedp.WaitVisible(chromedp.CSS("form.search")),
		chromedp.SendKeys(chromedp.CSS(`form.search input[name="q"]`), "gpu-node-06"),
		chromedp.Submit(chromedp.CSS(`form.search input[name="q"]`)),
		// The answer's page has the query in its value attribute; the
		// page the keys were typed into has it only in the property.
		chromedp.WaitVisible(chromedp.CSS(`form.search input[name="q"][value="gpu-node-06"]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.topo-node[data-node="gpu-node-06"]`))))
	nodes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("section.topo-node")].map(s => s.dataset.node)`))
	require.NoError(t, err)
	require.Equal(t, []string{"gpu-node-06"}, nodes)
	shoot("topology.png")

	// The request path: the NVLink demo sends no traces, so /slow says so
	// (its rows and /traces/{id} are tested in internal/ui).
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//header//nav/a[text()="Slow requests"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.answer[data-verdict="no data"]`))))
	slow, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("p.answer")))
	require.NoError(t, err)
	require.Contains(t, slow, "No traces yet")
	shoot("slow.png")

	bad, reqs := blog.problems()
	require.Empty(t, bad)
	require.Greater(t, reqs, 3, "the listener saw the pages' requests")
}
