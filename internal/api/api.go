package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/util/features"
	"github.com/prometheus/prometheus/util/httputil"
	"github.com/prometheus/prometheus/util/notifications"
	apiv1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/buildinfo"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
)

// Options configure the HTTP API.
type Options struct {
	// Store answers the queries.
	Store store.Store
	// Gatherer and Registerer are Vigil's own metrics registry.
	Gatherer   prometheus.Gatherer
	Registerer prometheus.Registerer
	// Logger receives the API's logs.
	Logger *slog.Logger
	// ListenAddress is shown in the status API.
	ListenAddress string
	// DataDir is shown in the status API.
	DataDir string
	// LookbackDelta and QueryTimeout are the engine's settings.
	LookbackDelta, QueryTimeout time.Duration
	// Flags are shown at /api/v1/status/flags.
	Flags map[string]string
	// Write, when set, receives remote write at /api/v1/write.
	Write http.Handler
	// Push, when set, is the Pushgateway-compatible push endpoint at
	// /metrics/job/ (and /metrics/job@base64/).
	Push http.Handler
	// Targets, when set, serves /api/v1/targets, /api/v1/scrape_pools and
	// the metadata of scraped targets at /api/v1/metadata.
	Targets Targets
	// Rules, when set, serves /api/v1/rules and the rules' alerts.
	Rules apiv1.RulesRetriever
	// RulesFor, when set, picks the rules of a request (tenancy: a
	// tenant's own evaluation's); nil: Rules for every request.
	RulesFor func(context.Context) apiv1.RulesRetriever
	// Alertmanagers, when set, serves /api/v1/alertmanagers.
	Alertmanagers apiv1.AlertmanagerRetriever
	// Incidents, when set, serves /api/v1/incidents and adds the firing
	// incidents to /api/v1/alerts.
	Incidents Incidents
	// CORSOrigin is the anchored pattern of the origins a browser may read
	// the API from; nil allows every origin (Prometheus's default, '.*').
	CORSOrigin *regexp.Regexp
	// RemoteRead bounds /api/v1/read; zero fields take Prometheus's
	// defaults.
	RemoteRead RemoteReadLimits
	// QueryLimits bound every expression and series selector before it is
	// parsed (querybound.go); zero fields take the defaults.
	QueryLimits QueryLimits
	// QueryGate shares the query slots of the HTTP API between clients;
	// nil: the store's engine alone bounds them.
	QueryGate *admission.FairGate
	// Tenancy restricts every read of the store to the tenants of the
	// request's context (tenant.Reads): Wrap must then resolve them.
	Tenancy bool
	// Wrap, if set, wraps the whole handler (tenancy's resolution of who a
	// request is from).
	Wrap func(http.Handler) http.Handler
	// Extra handlers mounted by path (e.g. the trace and log API).
	Extra map[string]http.Handler
	// UI, when set, is the web UI: every path no other handler takes
	// (/, /incidents, ...), so /api/v1/, /metrics and the probes stay
	// the API's.
	UI http.Handler
}

// RemoteReadLimits bound /api/v1/read as Prometheus's
// --storage.remote.read-* flags do.
type RemoteReadLimits struct {
	// Concurrency is how many reads run at once; more wait (default 10).
	Concurrency int
	// SampleLimit bounds the samples of one read of the samples response
	// type (default 50,000,000; negative: no limit).
	SampleLimit int
	// MaxBytesInFrame bounds a frame of a streamed read (default 1 MiB).
	MaxBytesInFrame int
}

func (l RemoteReadLimits) withDefaults() RemoteReadLimits {
	if l.Concurrency <= 0 {
		l.Concurrency = 10
	}
	switch {
	case l.SampleLimit == 0:
		l.SampleLimit = 50_000_000
	case l.SampleLimit < 0:
		l.SampleLimit = 0 // Prometheus's "no limit"
	}
	if l.MaxBytesInFrame <= 0 {
		l.MaxBytesInFrame = 1 << 20
	}
	return l
}

// anyOrigin is Prometheus's default --web.cors.origin, compiled as it
// compiles it.
var anyOrigin = regexp.MustCompile("^(?:.*)$")

// Targets is what the API reads from the scrape manager.
type Targets interface {
	apiv1.TargetRetriever
	apiv1.ScrapePoolsRetriever
}

// Handler serves the API. Until SetReady(true), /-/ready and the query API
// answer 503.
type Handler struct {
	mux *http.ServeMux
	// serve is mux, wrapped by Options.Wrap.
	serve http.Handler
	ready atomic.Bool
	start time.Time
}

// New builds the handler.
func New(opts Options) (*Handler, error) {
	if opts.Store == nil {
		return nil, errors.New("api: no store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Gatherer == nil {
		opts.Gatherer = prometheus.NewRegistry()
	}
	h := &Handler{mux: http.NewServeMux(), start: time.Now()}

	admin := adminStats(opts.Store)
	var rulesR apiv1.RulesRetriever = noRules{}
	if opts.Rules != nil {
		rulesR = opts.Rules
	}
	rulesOf := func(context.Context) apiv1.RulesRetriever { return rulesR }
	if opts.RulesFor != nil {
		rulesOf = opts.RulesFor
	}
	var ams apiv1.AlertmanagerRetriever = noAlertmanagers{}
	if opts.Alertmanagers != nil {
		ams = opts.Alertmanagers
	}
	var targets Targets = noTargets{}
	if opts.Targets != nil {
		targets = opts.Targets
	}
	bi := buildinfo.Get()
	cors := opts.CORSOrigin
	if cors == nil {
		cors = anyOrigin
	}
	rr := opts.RemoteRead.withDefaults()
	var (
		queryable storage.SampleAndChunkQueryable = chunkQueryable{opts.Store}
		exemplars                                 = exemplarQueryable(opts.Store)
	)
	if opts.Tenancy {
		queryable = tenantQueryable{tenant.Reads{Q: queryable}, tenant.ChunkReads{Q: queryable}}
		exemplars = tenant.ExemplarReads{Q: exemplars}
	}
	v1 := apiv1.NewAPI(
		opts.Store.Engine(),
		queryable,
		nil,
		exemplars,
		func(context.Context) apiv1.ScrapePoolsRetriever { return targets },
		func(context.Context) apiv1.TargetRetriever { return targets },
		func(context.Context) apiv1.AlertmanagerRetriever { return ams },
		func() config.Config { return config.DefaultConfig },
		opts.Flags,
		apiv1.GlobalURLOptions{ListenAddress: opts.ListenAddress, Host: opts.ListenAddress, Scheme: "http"},
		h.readyWrap,
		admin,
		opts.DataDir,
		false, // admin endpoints off
		false, // search API off
		0,
		opts.Logger.With("component", "api"),
		rulesOf,
		rr.SampleLimit, rr.Concurrency, rr.MaxBytesInFrame,
		false,
		cors,
		h.runtimeInfo(opts.DataDir),
		&apiv1.PrometheusVersion{
			Version: bi.Version, Revision: bi.Revision, Branch: bi.Branch,
			BuildUser: "vigil", BuildDate: bi.BuildDate, GoVersion: bi.GoVersion,
		},
		func() []notifications.Notification { return nil },
		func() (<-chan notifications.Notification, func(), bool) { return nil, func() {}, false },
		opts.Gatherer,
		opts.Registerer,
		nil,
		false, nil, // remote-write receiver: not in this API yet
		false, false, false, // OTLP: not here
		opts.LookbackDelta,
		false, false,
		nil,
		features.DefaultRegistry,
		apiv1.OpenAPIOptions{Version: bi.Version},
		parser.NewParser(parser.Options{}),
		false,
		opts.QueryTimeout,
	)
	r := route.New()
	v1.Register(r.WithPrefix("/api/v1"))
	h.mux.Handle("/api/v1/", boundQueries(opts.QueryLimits.withDefaults(), gateQueries(opts.QueryGate, opts.QueryTimeout, r)))
	if opts.Write != nil {
		h.mux.Handle("/api/v1/write", opts.Write)
	}
	if opts.Incidents != nil {
		h.mux.Handle("/api/v1/incidents", withCORS(cors, h.readyWrap(serveIncidents(opts.Incidents))))
		h.mux.Handle("/api/v1/incidents/", withCORS(cors, h.readyWrap(serveIncidents(opts.Incidents))))
		h.mux.Handle("GET /api/v1/alerts", withCORS(cors, h.readyWrap(serveAlerts(rulesOf, opts.Incidents))))
	}
	for path, hd := range opts.Extra {
		h.mux.Handle(path, withCORS(cors, hd))
	}
	if opts.Push != nil {
		h.mux.Handle("/metrics/job/", opts.Push)
		h.mux.Handle("/metrics/job@base64/", opts.Push)
	}
	h.mux.Handle("/metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError)}))
	if opts.UI != nil {
		h.mux.Handle("/", opts.UI)
	}
	h.mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("Vigil is Healthy.\n"))
	})
	h.mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !h.ready.Load() {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("Vigil is Ready.\n"))
	})
	h.serve = h.mux
	if opts.Wrap != nil {
		h.serve = opts.Wrap(h.mux)
	}
	return h, nil
}

// IsProbe reports whether path is a health probe's (/-/healthy, /-/ready).
func IsProbe(path string) bool { return path == "/-/healthy" || path == "/-/ready" }

// SetReady marks the server ready (or not).
func (h *Handler) SetReady(v bool) { h.ready.Store(v) }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serve.ServeHTTP(w, r) }

// withCORS gives Vigil's own API handlers the CORS headers the
// Prometheus API sets on its own (httputil.SetCORS), and answers a
// browser's preflight as it does.
func withCORS(origin *regexp.Regexp, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httputil.SetCORS(w, origin, r)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) readyWrap(f http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.ready.Load() {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		f(w, r)
	}
}

func (h *Handler) runtimeInfo(dataDir string) func() (apiv1.RuntimeInfo, error) {
	return func() (apiv1.RuntimeInfo, error) {
		cwd, _ := os.Getwd()
		host, _ := os.Hostname()
		return apiv1.RuntimeInfo{
			StartTime:           h.start,
			CWD:                 cwd,
			Hostname:            host,
			ServerTime:          time.Now().UTC(),
			ReloadConfigSuccess: true,
			LastConfigTime:      h.start,
			GoroutineCount:      runtime.NumGoroutine(),
			GOMAXPROCS:          runtime.GOMAXPROCS(0),
		}, nil
	}
}

// chunkQueryable adds chunk queries (remote read) to stores without them.
type chunkQueryable struct{ store.Store }

func (c chunkQueryable) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	if cq, ok := c.Store.(storage.ChunkQueryable); ok {
		return cq.ChunkQuerier(mint, maxt)
	}
	return nil, errors.New("this store serves no chunks")
}

// tenantQueryable restricts both kinds of reads to the request's tenants.
type tenantQueryable struct {
	tenant.Reads
	tenant.ChunkReads
}

func exemplarQueryable(s store.Store) storage.ExemplarQueryable {
	if eq, ok := s.(storage.ExemplarQueryable); ok {
		return eq
	}
	return noExemplars{}
}

type noExemplars struct{}

func (noExemplars) ExemplarQuerier(context.Context) (storage.ExemplarQuerier, error) {
	return noExemplars{}, nil
}

func (noExemplars) Select(int64, int64, ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	return nil, nil
}

// adminStats returns the store's TSDB statistics, or a stub that says the
// store has none.
func adminStats(s store.Store) apiv1.TSDBAdminStats {
	if a, ok := s.(apiv1.TSDBAdminStats); ok {
		return a
	}
	return noAdmin{}
}

var errNoTSDB = errors.New("this store is not a local TSDB")

type noAdmin struct{}

func (noAdmin) CleanTombstones() error                                         { return errNoTSDB }
func (noAdmin) Delete(context.Context, int64, int64, ...*labels.Matcher) error { return errNoTSDB }
func (noAdmin) Snapshot(string, bool) error                                    { return errNoTSDB }
func (noAdmin) Stats(string, int) (*tsdb.Stats, error)                         { return nil, errNoTSDB }
func (noAdmin) WALReplayStatus() (tsdb.WALReplayStatus, error)                 { return tsdb.WALReplayStatus{}, nil }
func (noAdmin) BlockMetas() ([]tsdb.BlockMeta, error)                          { return nil, nil }

type noTargets struct{}

func (noTargets) ScrapePools() []string                       { return nil }
func (noTargets) TargetsActive() map[string][]*scrape.Target  { return nil }
func (noTargets) TargetsDropped() map[string][]*scrape.Target { return nil }
func (noTargets) TargetsDroppedCounts() map[string]int        { return nil }
func (noTargets) ScrapePoolConfig(string) (*config.ScrapeConfig, error) {
	return nil, errors.New("no scrape pools")
}

type noAlertmanagers struct{}

func (noAlertmanagers) Alertmanagers() []*url.URL        { return nil }
func (noAlertmanagers) DroppedAlertmanagers() []*url.URL { return nil }

type noRules struct{}

func (noRules) RuleGroups() []*rules.Group           { return nil }
func (noRules) AlertingRules() []*rules.AlertingRule { return nil }
