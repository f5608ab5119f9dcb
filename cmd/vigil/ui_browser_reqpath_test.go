package main

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIInBrowserRequestPath opens the UI of a Vigil that ran the
// tenant_failure demo, whose requests cross services and carry tenants,
// in headless Chromium: the incident names tenant-c in vector-db; /tenants
// answers that tenant-c stands out, its row marked; /slow lists the
// slowest requests and each route's time per service, and its first
// trace's page draws the waterfall with each service's share of the
// critical path. As in TestUIInBrowser, no page may log an error, fail a
// request or ask another host for anything, and each page is shot.
func TestUIInBrowserRequestPath(t *testing.T) {
	bin := chromium(t)
	base := startDemo(t, "tenant_failure")
	ctx, blog, shoot := browser(t, bin, base)

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("table.incidents")),
		chromedp.Click(chromedp.Search(`//a[@class="incident-link"][text()="error_rate_high"]`)),
		chromedp.WaitVisible(chromedp.CSS("article.cause"))))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	require.NoError(t, err)
	require.Contains(t, text, "tenant tenant-c failing in vector-db")
	shoot("reqpath-incident.png")

	// /tenants: the answer names tenant-c, whose row is marked.
	type tenants struct {
		Verdict string   `json:"verdict"`
		Answer  string   `json:"answer"`
		Rows    []string `json:"rows"`
		Bad     []string `json:"bad"`
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//header//nav/a[text()="Tenants"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.tenants"))))
	tn, err := chromedp.Run(ctx, chromedp.Evaluate[tenants](`(() => {
		const p = document.querySelector("p.answer[data-verdict]");
		return {
			verdict: p.dataset.verdict, answer: p.textContent,
			rows: [...document.querySelectorAll("table.tenants tr[data-tenant]")].map(r => r.dataset.tenant),
			bad: [...document.querySelectorAll("table.tenants tr.bad[data-tenant]")].map(r => r.dataset.tenant),
		};
	})()`))
	require.NoError(t, err)
	require.Equal(t, "unhealthy", tn.Verdict, tn.Answer)
	require.Contains(t, tn.Answer, "tenant-c")
	require.Contains(t, tn.Rows, "tenant-a")
	require.Contains(t, tn.Bad, "tenant-c", "its row is marked (the background's 1 % may mark another)")
	shoot("reqpath-tenants.png")

	// /slow, then the slowest request's waterfall.
	type slow struct {
		Traces []string `json:"traces"`
		Routes []string `json:"routes"`
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.Search(`//header//nav/a[text()="Slow requests"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.slowest"))))
	sl, err := chromedp.Run(ctx, chromedp.Evaluate[slow](`({
		traces: [...document.querySelectorAll("table.slowest tr[data-trace]")].map(r => r.dataset.trace),
		routes: [...document.querySelectorAll("section.route[data-route]")].map(s => s.dataset.route),
	})`))
	require.NoError(t, err)
	require.NotEmpty(t, sl.Traces, "the slowest requests")
	require.NotEmpty(t, sl.Routes, "the routes' breakdowns")
	shoot("reqpath-slow.png")

	type trace struct {
		Bars     int      `json:"bars"`
		Services []string `json:"services"`
		Title    string   `json:"title"`
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`table.slowest tr[data-trace] a`)),
		chromedp.WaitVisible(chromedp.CSS("svg.waterfall"))))
	tr, err := chromedp.Run(ctx, chromedp.Evaluate[trace](`({
		bars: document.querySelectorAll("svg.waterfall rect.bar").length,
		services: [...document.querySelectorAll("table.critical-path tr[data-service]")].map(r => r.dataset.service),
		title: document.querySelector("main h1").textContent,
	})`))
	require.NoError(t, err)
	require.Contains(t, tr.Title, sl.Traces[0])
	require.Greater(t, tr.Bars, 1, "a waterfall of the trace's spans")
	require.Contains(t, tr.Services, "api-gateway", "the critical path's services")
	shoot("reqpath-trace.png")

	bad, _ := blog.problems()
	require.Empty(t, bad)
}
