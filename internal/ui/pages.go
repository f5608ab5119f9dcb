package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// page is one page of the UI. The registry below is the one place a page
// is added: the other pages of DESIGN.md (/gpus, /inference, /failures,
// /platform, /topology, /traces/{id}, /slow, /tenants, /cost) each get an
// entry, a template under templates/ that defines "content", and a file
// with their data function.
type page struct {
	// pattern is the ServeMux pattern ("GET /incidents/{id}").
	pattern string
	// nav is the label in the navigation bar and path its link; a page
	// with no nav (a detail page) is reached from another.
	nav, path string
	// title is the page's <title> unless data sets view.Title.
	title string
	// template is the file under templates/ that defines "content".
	template string
	// data returns what the template renders; an *httpError answers with
	// its status and message on the error page.
	data func(ctx context.Context, r *request) (any, error)
}

const errorTemplate = "error.html"

// registry lists the pages, in the navigation's order.
func (h *Handler) registry() []page {
	return []page{
		{pattern: "GET /{$}", title: "Incidents", template: "incidents.html", data: h.incidentsPage},
		{pattern: "GET /incidents", nav: "Incidents", path: "/incidents", title: "Incidents", template: "incidents.html", data: h.incidentsPage},
		{pattern: "GET /incidents/{id}", title: "Incident", template: "incident.html", data: h.incidentPage},
		{pattern: "GET /platform", nav: "Platform", path: "/platform", title: "Platform", template: "platform.html", data: h.platformPage},
		{pattern: "GET /gpus", nav: "GPUs", path: "/gpus", title: "GPUs", template: "gpus.html", data: h.gpusPage},
		{pattern: "GET /inference", nav: "Inference", path: "/inference", title: "Inference", template: "inference.html", data: h.inferencePage},
		{pattern: "GET /failures", nav: "Failures", path: "/failures", title: "Failures", template: "failures.html", data: h.failuresPage},
		{pattern: "GET /tenants", nav: "Tenants", path: "/tenants", title: "Tenants", template: "tenants.html", data: h.tenantsPage},
		{pattern: "GET /cost", nav: "Cost", path: "/cost", title: "Cost", template: "cost.html", data: h.costPage},
		{pattern: "GET /topology", nav: "Topology", path: "/topology", title: "Topology", template: "topology.html", data: h.topologyPage},
		{pattern: "GET /slow", nav: "Slow requests", path: "/slow", title: "Slow requests", template: "slow.html", data: h.slowPage},
		{pattern: "GET /traces/{id}", title: "Trace", template: "trace.html", data: h.tracePage},
	}
}

// navItem is one link of the navigation bar.
type navItem struct {
	Title, Href string
	Current     bool
}

// view is what the layout renders: the frame of every page, and the
// page's own data in Page.
type view struct {
	Title string
	Nav   []navItem
	// Path is the page's path, the time-range form's action.
	Path string
	// From, To and Refresh are the form's values, as the URL gave them.
	From, To string
	Refresh  int
	// Refreshes are the choices of auto-refresh, in seconds (0: off).
	Refreshes []int
	// Notices are messages about the request itself (a bad time range),
	// shown above the page.
	Notices []string
	// DataTime is the data clock when the page was rendered.
	DataTime time.Time
	// Loading says what is still loading, and Reload is the URL the page
	// reloads to for it (its data clock pinned with ?at=); both empty when
	// the page has everything.
	Loading, Reload string
	Page            any
}

// request is one request to a page: its view and its parsed state.
type request struct {
	http *http.Request
	view *view
	now  time.Time
	// rng is the ?from=&to= range; set says whether the URL gave one.
	rng timeRange
	// badInput makes the page answer 400 (it still renders).
	badInput bool
	// pinned: ?at= set the data clock; the request is a loading page's
	// reload, which may take the answers kept for it.
	pinned bool
}

var refreshChoices = []int{0, 10, 30, 60, 300}

func (h *Handler) newRequest(r *http.Request, p page) *request {
	q := r.URL.Query()
	now := h.opts.Now()
	v := &view{
		Title: p.title, Path: r.URL.Path, From: q.Get("from"), To: q.Get("to"),
		Refreshes: refreshChoices, DataTime: now,
	}
	req := &request{http: r, view: v, now: now}
	if s := q.Get("at"); s != "" {
		// A reload of a page that was loading asks for the same data
		// clock, so its queries are the ones that ran on.
		ms, err := strconv.ParseInt(s, 10, 64)
		at := time.UnixMilli(ms)
		switch {
		case err != nil:
			req.notice("at=" + strconv.Quote(s) + " is not a time in Unix milliseconds; showing now.")
		case at.After(now) || now.Sub(at) > maxPin:
			// A stale link: the data clock is now.
		default:
			req.now, v.DataTime, req.pinned = at, at, true
		}
	}
	rng, err := parseRange(v.From, v.To, req.now)
	if err != nil {
		req.notice(err.Error() + " — showing the default window instead.")
	} else {
		req.rng = rng
	}
	if s := q.Get("refresh"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 3600 {
			req.notice("refresh=" + strconv.Quote(s) + " is not a number of seconds from 0 to 3600; auto-refresh is off.")
		} else {
			v.Refresh = max(n, 5*min(n, 1)) // at most every 5 s
		}
	}
	for _, pg := range h.pages {
		if pg.nav != "" {
			cur := pg.path == r.URL.Path || (pg.path == "/incidents" && r.URL.Path == "/")
			v.Nav = append(v.Nav, navItem{Title: pg.nav, Href: req.link(pg.path), Current: cur})
		}
	}
	return req
}

// maxPin is how far back ?at= may pin a page's data clock: a reload's
// link, not a way to travel in time (?from=&to= is).
const maxPin = 10 * time.Minute

// loading marks the page as still loading n queries after budget: it
// says so and reloads itself with its data clock pinned.
func (r *request) loading(n int, budget time.Duration) {
	switch n {
	case 0: // the page's own data; its frame says so
	case 1:
		r.view.Loading = fmt.Sprintf("Still loading: 1 query ran past %s; this page reloads in %d s to show it.", budget, loadReload)
	default:
		r.view.Loading = fmt.Sprintf("Still loading: %d queries ran past %s; this page reloads in %d s to show them.", n, budget, loadReload)
	}
	q := r.http.URL.Query()
	q.Set("at", strconv.FormatInt(r.now.UnixMilli(), 10))
	r.view.Reload = r.http.URL.Path + "?" + q.Encode()
}

func (r *request) notice(msg string) {
	r.view.Notices = append(r.view.Notices, msg)
	r.badInput = true
}

// link returns path with the request's state (range, refresh) kept.
func (r *request) link(path string) string {
	q := url.Values{}
	for _, k := range []string{"from", "to", "refresh"} {
		if v := r.http.URL.Query().Get(k); v != "" && !r.badInput {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
