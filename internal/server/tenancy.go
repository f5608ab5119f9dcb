package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/ingest/scrape"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
)

// readPaths are the API's reads of one tenant's data: the query API over
// the store (restricted below PromQL by tenant.Reads) and the reads of
// the trace and log store (restricted by the tenant of each resource).
var readPaths = map[string]bool{
	"/api/v1/query": true, "/api/v1/query_range": true, "/api/v1/query_exemplars": true,
	"/api/v1/series": true, "/api/v1/labels": true, "/api/v1/read": true,
	"/api/v1/format_query": true, "/api/v1/parse_query": true,
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
	}
	return tenant.NeedPlatform
}

// identify is who sent r, when the server authenticates: the user of a
// basic-auth request the web config file checked, or the common name of a
// verified client certificate. Without authentication nobody is
// identified and the header alone names the tenant.
func (s *Server) identify(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		if cn := r.TLS.VerifiedChains[0][0].Subject.CommonName; cn != "" {
			return cn
		}
	}
	if s.basicAuth {
		if u, _, ok := r.BasicAuth(); ok {
			return u
		}
	}
	return ""
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

// tenantSeries is the store's active-series count for remote write's
// limit, with the series it asks about stamped as they will be stored.
type tenantSeries struct{ *store.Embedded }

func (t tenantSeries) SeriesExists(ctx context.Context, ls labels.Labels) (bool, error) {
	if id, ok := tenant.WriteID(ctx); ok {
		ls = tenant.Stamp(ls, id)
	}
	return t.Embedded.SeriesExists(ctx, ls)
}
