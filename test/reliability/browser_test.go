package reliability

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
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

// page is a dashboard on an origin of its own that reads Vigil's API from
// the browser, as a Grafana panel with direct access or a custom page
// does: a GET, and a form POST (which a browser preflights when it sets a
// header beyond the simple ones).
const page = `<!doctype html><html><body><pre id="out">pending</pre><script>
const api = %q;
async function step(name, f) {
  try { return name + " " + await f(); } catch (e) { return name + " error: " + e; }
}
async function run() {
  const out = [];
  out.push(await step("GET", async () => {
    const r = await fetch(api + "/api/v1/query?query=up_probe");
    return r.status + " " + (await r.json()).status;
  }));
  out.push(await step("POST", async () => {
    const r = await fetch(api + "/api/v1/query", {method: "POST",
      headers: {"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Bearer probe"},
      body: "query=up_probe"});
    const body = await r.json();
    return r.status + " " + body.status + " " + body.data.result.length;
  }));
  out.push(await step("INCIDENTS", async () => (await fetch(api + "/api/v1/incidents")).status));
  return out.join("\n");
}
run().then(r => document.getElementById("out").textContent = r,
           e => document.getElementById("out").textContent = "error: " + e);
</script></body></html>`

// TestBrowserReadsTheAPI runs the cross-origin reads in Chromium: before
// issue 17's fix the Origin header every such fetch carries crashed the
// handler, and the browser saw a network error.
func TestBrowserReadsTheAPI(t *testing.T) {
	bin := chromium(t)
	v := startVigil(t, "")
	writeProbe(t, v)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, page, v.URL)
	}))
	defer site.Close()
	require.NotEqual(t, site.URL, v.URL)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.NoSandbox, chromedp.Flag("headless", true), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(site.URL)))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("out").textContent !== "pending"`))
	require.NoError(t, err)
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("out").textContent`))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, []string{"GET 200 success", "POST 200 success 1", "INCIDENTS 200"}, lines, out)
	v.requireUp(t)
}
