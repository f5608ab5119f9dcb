package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/component"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/ingest/scrape"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/tenant/limits"
)

// readPaths are the API's reads of one tenant's data: the query API over
// the store (restricted below PromQL by tenant.Reads) and the reads of
// the trace and log store (restricted by the tenant of each resource).
var readPaths = map[string]bool{
	"/api/v1/query": true, "/api/v1/query_range": true, "/api/v1/query_exemplars": true,
	"/api/v1/series": true, "/api/v1/labels": true, "/api/v1/read": true,
	"/api/v1/format_query": true, "/api/v1/parse_query": true,
}

// uiAPIs are the web UI's JSON answers (ui.Handler.APIs), which read as
// its pages do.
var uiAPIs = map[string]bool{
	"/api/v1/gpus": true, "/api/v1/platform": true, "/api/v1/inference": true, "/api/v1/failures": true,
	"/api/v1/tenants": true, "/api/v1/topology": true, "/api/v1/cost": true,
}

// needOf is what a request to the HTTP API needs under tenancy. What is
// not one tenant's data — Vigil's own metrics and status, the scrape
// targets, the rules, alerts and incidents the evaluation derives over
// every tenant's data, and the web UI — needs the platform role, so that
// nothing the server does not restrict by tenant reaches one.
func needOf(r *http.Request) tenant.Need {
	p := r.URL.Path
	switch {
	case api.IsProbe(p):
		return tenant.NeedNone
	case p == "/api/v1/write":
		return tenant.NeedWrite
	case strings.HasPrefix(p, push.PathPrefix), strings.HasPrefix(p, push.Base64PathPrefix):
		return tenant.NeedWrite
	case readPaths[p], strings.HasPrefix(p, "/api/v1/label/") && strings.HasSuffix(p, "/values"),
		p == "/api/v1/traces", strings.HasPrefix(p, "/api/v1/traces/"), p == "/api/v1/logs", p == "/api/v1/slow":
		return tenant.NeedRead
	case strings.HasPrefix(p, "/api/v1/admin/"):
		return tenant.NeedAdmin
	case p == "/api/v1/incidents", strings.HasPrefix(p, "/api/v1/incidents/"), uiAPIs[p], p == "/api/v1/rules", p == "/api/v1/alerts":
		return tenant.NeedReadOrPlatform
	case p == "/metrics", p == "/federate", strings.HasPrefix(p, "/api/"):
		return tenant.NeedPlatform
	}
	// The web UI's pages.
	return tenant.NeedReadOrPlatform
}

// identify is who sent r, when the server authenticates: the common name
// of a verified client certificate, or the user of a basic-auth request
// that the web config file lists (exporter-toolkit checked its password
// before the request got here). Without authentication nobody is
// identified and the header alone names the tenant.
func (s *Server) identify(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		if cn := r.TLS.VerifiedChains[0][0].Subject.CommonName; cn != "" {
			return cn
		}
	}
	if u, _, ok := r.BasicAuth(); ok && s.webUsers.has(u) {
		return u
	}
	return ""
}

// webUsers are the basic-auth users of the web config file, read again
// when the file changes, as exporter-toolkit reads it for every request:
// a user name counts as an identity only while the file lists it, so an
// unchecked Authorization header never names one.
type webUsers struct {
	path string

	mu    sync.Mutex
	stamp string
	users map[string]bool
}

func (w *webUsers) has(user string) bool {
	if w == nil || w.path == "" {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(w.path)
	if err != nil {
		w.users, w.stamp = nil, ""
		return false
	}
	if stamp := fmt.Sprint(fi.ModTime().UnixNano(), fi.Size()); stamp != w.stamp {
		w.stamp, w.users = stamp, nil
		if b, err := os.ReadFile(w.path); err == nil {
			var c struct {
				Users map[string]any `yaml:"basic_auth_users"`
			}
			if yaml.Unmarshal(b, &c) == nil {
				w.users = make(map[string]bool, len(c.Users))
				for u := range c.Users {
					w.users[u] = true
				}
			}
		}
	}
	return w.users[user]
}

// otlpTenant is the OTLP receivers' tenancy: each request's tenant from
// its X-Scope-OrgID header or metadata, or from the identity the
// receivers' auth found, resolved as the HTTP API resolves a write. Off:
// nil.
func (s *Server) otlpTenant() func(context.Context, map[string][]string) (context.Context, error) {
	if !s.tenancy.Enabled() {
		return nil
	}
	return func(ctx context.Context, md map[string][]string) (context.Context, error) {
		who, _ := otlp.Identity(ctx)
		var header string
		for k, v := range md {
			if strings.EqualFold(k, tenant.Header) && len(v) > 0 {
				header = strings.TrimSpace(v[0])
				break
			}
		}
		p, err := s.tenancy.Resolve(who, header, tenant.NeedWrite)
		if err != nil {
			return nil, status.Error(grpcCode(err.Status), err.Msg)
		}
		return tenant.NewContext(ctx, p), nil
	}
}

// grpcCode is the gRPC code of an HTTP status of tenancy's.
func grpcCode(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	}
	return codes.InvalidArgument
}

// tenantWrites stamps what a metric path writes with its tenant.
func (s *Server) tenantWrites(a storage.AppendableV2, path string) storage.AppendableV2 {
	w := tenant.Writes{A: a}
	if path == redact.PathScrape {
		w.Of = func(ctx context.Context) (string, bool) {
			job, _ := scrape.TargetJob(ctx)
			return s.tenancy.ScrapeTenant(job), true
		}
	}
	return w
}

// startLimits reads the tenants' limits and starts their enforcement
// (tenancy only): the runtime file read again every reload period, and
// the idle series and tenants forgotten.
func (s *Server) startLimits(ctx context.Context, host component.Host) error {
	if !s.tenancy.Enabled() {
		return nil
	}
	tc := s.cfg.Tenancy
	ov, err := limits.New(tc.Limits, tc.LimitsFile, time.Duration(tc.LimitsReloadPeriod), s.logger.With("component", "limits"), s.reg)
	if err != nil {
		return UsageError{fmt.Errorf("tenancy: %w", err)}
	}
	if err := s.run(ctx, host, "tenant limits file", ov.Run); err != nil {
		return err
	}
	s.limits = limits.NewEnforcer(ov, limits.EnforcerOptions{Now: s.now}, s.reg)
	return s.run(ctx, host, "tenant limits", s.limits.Run)
}

// limitRequests applies a tenant's request size and query concurrency
// limits to the requests tenancy resolved (a handler under the
// middleware: the principal is in the context).
func (s *Server) limitRequests(next http.Handler) http.Handler {
	if s.limits == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := tenant.FromContext(r.Context())
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		switch needOf(r) {
		case tenant.NeedWrite:
			id, _ := p.Single()
			if err := s.limits.CheckRequestSize(id, r.ContentLength); err != nil {
				limits.WriteHTTP(w, err)
				return
			}
			if r.Method != http.MethodDelete {
				if err := s.limits.SamplesExhausted(id); err != nil {
					limits.WriteHTTP(w, err)
					return
				}
			}
			if most := s.limits.Limits(id).MaxRequestBytes; most > 0 {
				r.Body = http.MaxBytesReader(w, r.Body, most)
			}
		case tenant.NeedRead:
			// A read loads at most the least max_query_samples of its
			// tenants, over all its queries' selectors.
			most, limitOf := 0, ""
			for _, id := range p.IDs {
				if n := s.limits.MaxQuerySamples(id); n > 0 && (most == 0 || n < most) {
					most, limitOf = n, id
				}
			}
			if most > 0 {
				r = r.WithContext(tenant.WithSampleBudget(r.Context(), int64(most), func() error { return s.limits.QuerySamplesError(limitOf) }))
			}
			for _, id := range p.IDs {
				release, err := s.limits.AcquireQuery(r.Context(), id)
				if err != nil {
					if !limits.WriteHTTP(w, err) {
						http.Error(w, err.Error(), http.StatusServiceUnavailable)
					}
					return
				}
				defer release()
			}
		}
		next.ServeHTTP(w, r)
	})
}

// audit logs the admin actions: every request that needs the admin role,
// every write an admin or platform identity makes, and every deletion of a
// push group — who (identity, role), on which tenants, what (method,
// path), when and with what answer — as one record of the "audit"
// component, through the server's redacting logger.
func (s *Server) audit(next http.Handler) http.Handler {
	logger := s.logger.With("component", "audit")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := tenant.FromContext(r.Context())
		need := needOf(r)
		if need != tenant.NeedAdmin && !(need == tenant.NeedWrite && (p.Role >= tenant.RolePlatform || r.Method == http.MethodDelete)) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r)
		logger.Info("admin action", "identity", p.Identity, "role", p.Role.String(), "tenants", tenant.JoinIDs(p.IDs),
			"method", r.Method, "path", r.URL.Path, "status", rec.code, "remote", r.RemoteAddr, "took", time.Since(start).Round(time.Millisecond))
	})
}

// statusRecorder keeps the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// tenantSeries is the store's active-series count for remote write's
// limit, with the series it asks about stamped as they will be stored.
type tenantSeries struct{ *store.Embedded }

func (t tenantSeries) SeriesExists(ctx context.Context, ls labels.Labels) (bool, error) {
	if id, ok := tenant.WriteID(ctx); ok {
		ls = tenant.Stamp(ls, id)
	}
	return t.Embedded.SeriesExists(ctx, ls)
}
