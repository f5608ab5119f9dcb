// Package ui owns Vigil's web UI: server-rendered HTML pages, built with
// html/template from templates embedded in the binary (go:embed), with
// the plots drawn as inline SVG in Go. It needs nothing at run time but
// the binary: no script, font or stylesheet from another host, and no
// build toolchain for the browser.
//
// The pages answer the questions of the person who was paged: /incidents
// lists what is open and recent; /incidents/{id} gives the symptom, the
// ranked causes with their confidence and action, and for each piece of
// evidence the plot that proves it — the query evaluated over the
// incident's window, the faulty entity's series against its peers' band —
// with the query itself to copy into Grafana or promtool. /slow and
// /traces/{id} show the request path: the slowest requests and each
// route's time per service (internal/hops' Routes, what vigil slow
// prints), and one trace's waterfall with each service's share of its
// critical path (hops.Breakdown). /tenants splits the span metrics'
// requests and failures by tenant and names the tenant that stands out.
//
// Every page takes its state from the URL (?from=&to=&refresh=), so a link
// shares what its sender saw. html/template escapes every label value.
//
// No page waits on a slow query past its render budget (loading.go): a
// query still running then goes on in the background, the page renders
// what it has and says what is loading, and reloads itself with its data
// clock pinned (?at=) to find the answers. The JSON under /api/v1/ waits
// for its queries instead.
//
// New pages go in the registry of pages.go: one entry per page (its
// pattern, its navigation label, its template and a function that returns
// its data), with the page's own file beside it.
//
// It does not diagnose, track incidents or store samples: it reads the
// incident tracker (internal/incident), queries the store
// (internal/store) the HTTP API queries, and reads the trace store
// (internal/traces) through internal/hops, which owns the breakdowns.
package ui
