package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/traces"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Incidents is what the UI reads of the incident tracker.
type Incidents interface {
	// List returns the incidents, firing first.
	List() []incident.Incident
	// Get returns one incident.
	Get(id string) (incident.Incident, bool)
}

var _ Incidents = (*incident.Tracker)(nil)

// Queryable is the store the pages' plots query: the one the HTTP API's
// query endpoint queries (store.Store is one).
type Queryable interface {
	storage.Queryable
	// Engine returns the PromQL engine over the store, with its limits.
	Engine() promql.QueryEngine
}

// Options configure the UI.
type Options struct {
	// Store answers the plots' queries.
	Store Queryable
	// Incidents, when set, lists the incidents; nil: the evaluation is off
	// and the incident pages say so.
	Incidents Incidents
	// Now is the data clock (default time.Now): what "since" counts from
	// and where a window without ?to= ends.
	Now func() time.Time
	// Logger receives the UI's logs.
	Logger *slog.Logger
	// QueryTimeout bounds each plot's query (default 10s); a plot that
	// runs past it says so and the page renders without it.
	QueryTimeout time.Duration
	// Traces, when set, is the trace store /slow and /traces/{id} read;
	// nil: those pages say there is none.
	Traces *traces.Store
	// Catalog names the metrics of each signal the question pages read
	// (default catalog.Default()).
	Catalog *catalog.Catalog
	// Prices price the GPUs of /cost; nil with Currency reads OpenCost's
	// node_gpu_hourly_cost in it; neither: the page says how to set them.
	Prices   *cost.Prices
	Currency string
	// RenderBudget is how long a page waits for its queries (default
	// 3s): past it the page renders what it has, says what is still
	// loading, and reloads itself for the rest (loading.go).
	RenderBudget time.Duration
}

const defaultQueryTimeout = 10 * time.Second

// Handler serves the UI's pages.
type Handler struct {
	opts  Options
	cat   *catalog.Catalog
	mux   *http.ServeMux
	pages []page
	// tmpl holds one template set per page template: the layout with that
	// page's "content".
	tmpl map[string]*template.Template
	css  []byte
	// loads runs the pages' queries and keeps their answers for the
	// reloads of a page that was still loading.
	loads *loads
}

var _ http.Handler = (*Handler)(nil)

// New builds the UI over opts.
func New(opts Options) (*Handler, error) {
	if opts.Store == nil {
		return nil, errors.New("ui: no store")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = defaultQueryTimeout
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.RenderBudget <= 0 {
		opts.RenderBudget = defaultRenderBudget
	}
	h := &Handler{opts: opts, cat: opts.Catalog, mux: http.NewServeMux(), tmpl: map[string]*template.Template{}, loads: newLoads(plotParallel)}
	h.pages = h.registry()
	css, err := fs.ReadFile(assets, "static/vigil.css")
	if err != nil {
		return nil, fmt.Errorf("ui: read stylesheet: %w", err)
	}
	h.css = css
	names := []string{errorTemplate}
	for _, p := range h.pages {
		names = append(names, p.template)
	}
	for _, name := range names {
		if _, done := h.tmpl[name]; done {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/plot.html", "templates/question.html", "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("ui: parse template %s: %w", name, err)
		}
		h.tmpl[name] = t
	}
	for _, p := range h.pages {
		h.mux.Handle(p.pattern, h.serve(p))
	}
	h.mux.HandleFunc("GET /static/vigil.css", h.serveCSS)
	h.mux.Handle("/", h.serve(page{template: errorTemplate, data: notFoundPage}))
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) serveCSS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(h.css)
}

// httpError is an error a page answers with its own status: an unknown
// incident (404), bad input (400).
type httpError struct {
	status int
	title  string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, title: "Not found", msg: fmt.Sprintf(format, args...)}
}

func notFoundPage(context.Context, *request) (any, error) {
	return nil, notFound("There is no page here.")
}

// errorView is the data of the error page.
type errorView struct {
	Title, Message string
}

// serve renders p: the layout with the page's content, or the error page
// with a clear message. The whole page is rendered before a byte is
// written, so a failing template never leaves half a page.
func (h *Handler) serve(p page) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := h.newRequest(r, p)
		data, err := h.pageData(r.Context(), p, req)
		tmpl, status := p.template, http.StatusOK
		if errors.Is(err, errLoading) {
			// The page's own data waits: its frame says so and reloads.
			tmpl, data, err = errorTemplate, errorView{Title: "Loading", Message: "The store is slow to answer: this page's data is still being read."}, nil
			req.view.Title = "Loading"
			req.loading(0, h.opts.RenderBudget)
		}
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) {
				h.opts.Logger.Warn("render page", "path", r.URL.Path, "err", err)
				he = &httpError{status: http.StatusInternalServerError, title: "Something went wrong", msg: err.Error()}
			}
			tmpl, status, data = errorTemplate, he.status, errorView{Title: he.title, Message: he.msg}
			req.view.Title = he.title
		} else if req.badInput {
			status = http.StatusBadRequest
		}
		req.view.Page = data
		var buf bytes.Buffer
		if err := h.tmpl[tmpl].ExecuteTemplate(&buf, "layout.html", req.view); err != nil {
			h.opts.Logger.Error("execute template", "template", tmpl, "err", err)
			http.Error(w, fmt.Sprintf("render %s: the page could not be rendered", r.URL.Path), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		// Nothing on a page comes from elsewhere; the policy says so to
		// the browser too.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; script-src 'none'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
	})
}

// pageResult is a page's data built by pageData, with what it set of its
// view and how many of its queries were still loading.
type pageResult struct {
	data    any
	title   string
	pending int
}

// pageData builds p's data for req under the render budget. It runs on
// after the budget when it must, on a copy of the request's view, and its
// answer waits for the page's reload (the key has the data clock, which a
// reload pins); a page whose queries ran past the budget is marked
// loading.
func (h *Handler) pageData(ctx context.Context, p page, req *request) (any, error) {
	// The page's queries stop waiting at until; the page waits a little
	// longer for what it builds of what they gave.
	until := time.Now().Add(h.opts.RenderBudget)
	key := "page\x00" + req.http.URL.Path + "\x00" + pageState(req) + "\x00" + strconv.FormatInt(req.now.UnixMilli(), 10)
	ctx, _ = withBudget(ctx, until.Add(h.opts.RenderBudget/2), req.pinned)
	// The run may outlive this request: it works on copies.
	clone, view := *req, *req.view
	clone.view = &view
	v, err := h.loads.take(ctx, key, 2*h.opts.QueryTimeout, func(ctx context.Context) (any, error) {
		ctx, b := withBudget(ctx, until, clone.pinned)
		data, err := p.data(ctx, &clone)
		return pageResult{data: data, title: view.Title, pending: int(b.pending.Load())}, err
	})
	if err != nil {
		return nil, err
	}
	res := v.(pageResult)
	req.view.Title = res.title
	if res.pending > 0 {
		req.loading(res.pending, h.opts.RenderBudget)
	}
	return res.data, nil
}

// pageState is the request's query string but for the auto-refresh and
// the pin, which change no data.
func pageState(req *request) string {
	q := req.http.URL.Query()
	q.Del("refresh")
	q.Del("at")
	return q.Encode()
}
