package server

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	apiv1 "github.com/prometheus/prometheus/web/api/v1"
	"go.opentelemetry.io/collector/component"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/ui"
	"github.com/vigil-obs/vigil/internal/watch"
)

// tenantSource is what a tenant's own evaluation reads and writes: the
// server's view restricted to the tenant, and the embedded store with what
// it records stamped with the tenant.
type tenantSource struct {
	storage.Queryable
	storage.AppendableV2
	engine promql.QueryEngine
}

func (t tenantSource) Engine() promql.QueryEngine { return t.engine }

// tenantSender labels a tenant's alerts with their tenant, so that
// Alertmanager routes them to the tenant's receivers and they never merge
// with the platform's or another tenant's.
type tenantSender struct {
	next watch.Sender
	id   string
}

func (s tenantSender) Send(alerts ...*notifier.Alert) {
	for _, a := range alerts {
		a.Labels = labels.NewBuilder(a.Labels).Set("tenant", s.id).Labels()
	}
	s.next.Send(alerts...)
}

// tenantDir is the directory of a tenant's own state under the data
// directory: named by a hash of the ID, so that a tenant ID never becomes
// part of a file path (the class of CVE-2021-36157).
func tenantDir(dataDir, id string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return filepath.Join(dataDir, "tenants", fmt.Sprintf("%016x", h.Sum64()))
}

// startTenantEvaluations starts the own evaluation of every tenant
// tenancy.evaluate lists, next to the platform's.
func (s *Server) startTenantEvaluations(ctx context.Context, host component.Host, src watch.Source, sender watch.Sender, ext string) error {
	tc := s.cfg.Tenancy
	if !tc.Enabled || len(tc.Evaluate) == 0 || s.ev == nil {
		return nil
	}
	ec := s.cfg.Evaluation
	s.tenantEvals = map[string]*evaluation{}
	for _, id := range tc.Evaluate {
		logger := s.logger.With("tenant", id)
		tr, eng, err := s.openEvaluation(tenantDir(s.cfg.Storage.DataDir, id), logger)
		if err != nil {
			return fmt.Errorf("evaluation of tenant %s: %w", id, err)
		}
		tsrc := tenantSource{
			Queryable:    tenant.Fixed(src, []string{id}),
			AppendableV2: tenant.Writes{A: s.st, Of: func(context.Context) (string, bool) { return id, true }},
			engine:       src.Engine(),
		}
		groups, _, err := sloGroups(ctx, ec, s.st, tsrc, s.now(), logger)
		if err != nil {
			return err
		}
		var snd watch.Sender
		if sender != nil {
			snd = tenantSender{sender, id}
		}
		w, err := watch.New(watch.Options{
			Source: tsrc, Engine: eng, Groups: groups, Tracker: tr, Sender: snd,
			Interval: time.Duration(ec.Interval), ResendInterval: time.Duration(s.cfg.Alerting.ResendInterval),
			ExternalURL: ext, Now: s.now, Wall: s.opts.Wall, FindingConfidence: ec.FindingConfidence,
			Logger:     logger.With("component", "watch"),
			Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"tenant": id}, s.reg),
		})
		if err != nil {
			return fmt.Errorf("evaluation of tenant %s: %w", id, err)
		}
		s.tenantEvals[id] = &evaluation{tracker: tr, watcher: w}
		if !s.opts.Driven {
			if err := s.run(ctx, host, "evaluation of tenant "+id, w.Run); err != nil {
				return err
			}
		}
	}
	return nil
}

// rulesFor is the rules a request reads under tenancy: its tenant's own
// evaluation's (none for a tenant not evaluated on its own, or several
// tenants), the platform's for the platform role naming none.
func (s *Server) rulesFor(ctx context.Context) apiv1.RulesRetriever {
	p, ok := tenant.PrincipalOf(ctx)
	switch {
	case ok && len(p.IDs) == 0 && p.Role >= tenant.RolePlatform:
		return s.ev.watcher
	case ok && len(p.IDs) == 1 && s.tenantEvals[p.IDs[0]] != nil:
		return s.tenantEvals[p.IDs[0]].watcher
	}
	return noRules{}
}

// noRules is a rules retriever with no rules.
type noRules struct{}

func (noRules) RuleGroups() []*rules.Group           { return nil }
func (noRules) AlertingRules() []*rules.AlertingRule { return nil }

// tenantIncidents are the incidents the API lists under tenancy: a
// tenant's own evaluation's for a request that names tenants (none for a
// tenant not evaluated on its own), the platform's for the platform role.
type tenantIncidents struct {
	platform *incident.Tracker
	by       map[string]*evaluation
}

var _ api.ContextIncidents = tenantIncidents{}

func (t tenantIncidents) List() []incident.Incident { return t.platform.List() }

func (t tenantIncidents) Get(id string) (incident.Incident, bool) { return t.platform.Get(id) }

func (t tenantIncidents) ForContext(ctx context.Context) api.Incidents {
	p, ok := tenant.PrincipalOf(ctx)
	if !ok || len(p.IDs) == 0 {
		if ok && p.Role >= tenant.RolePlatform {
			return t.platform
		}
		return ownIncidents(nil)
	}
	var trs []*incident.Tracker
	for _, id := range p.IDs {
		if ev, ok := t.by[id]; ok {
			trs = append(trs, ev.tracker)
		}
	}
	return ownIncidents(trs)
}

// ownIncidents are the incidents of some tenants' trackers.
type ownIncidents []*incident.Tracker

func (o ownIncidents) List() []incident.Incident {
	var out []incident.Incident
	for _, tr := range o {
		out = append(out, tr.List()...)
	}
	slices.SortStableFunc(out, func(a, b incident.Incident) int {
		if (a.State == incident.StateFiring) != (b.State == incident.StateFiring) {
			if a.State == incident.StateFiring {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func (o ownIncidents) Get(id string) (incident.Incident, bool) {
	for _, tr := range o {
		if i, ok := tr.Get(id); ok {
			return i, true
		}
	}
	return incident.Incident{}, false
}

// tenantUI serves the web UI under tenancy: the pages of a request that
// names tenants read those tenants' data alone (the view restricted to
// them), their own evaluations' incidents and their spans; the platform
// role, naming none, gets the platform's pages. A set of tenants' pages is
// built on its first request and kept (at most maxTenantUIs sets).
type tenantUI struct {
	s        *Server
	opts     ui.Options
	platform *ui.Handler

	mu sync.Mutex
	by map[string]*ui.Handler
}

// maxTenantUIs bounds the tenant sets whose pages are kept.
const maxTenantUIs = 64

// restrictedView is the view restricted to some tenants, with the
// view's engine.
type restrictedView struct {
	storage.Queryable
	engine promql.QueryEngine
}

func (r restrictedView) Engine() promql.QueryEngine { return r.engine }

// of returns the pages for the principal of r; nil and false when it may
// read none.
func (t *tenantUI) of(r *http.Request) (*ui.Handler, bool) {
	p, ok := tenant.PrincipalOf(r.Context())
	if !ok {
		return nil, false
	}
	if len(p.IDs) == 0 {
		return t.platform, p.Role >= tenant.RolePlatform
	}
	key := tenant.JoinIDs(p.IDs)
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.by[key]; ok {
		return h, true
	}
	o := t.opts
	o.Store = restrictedView{tenant.Fixed(t.s.view, p.IDs), t.s.view.Engine()}
	var trs ownIncidents
	for _, id := range p.IDs {
		if ev, ok := t.s.tenantEvals[id]; ok {
			trs = append(trs, ev.tracker)
		}
	}
	o.Incidents = trs
	o.Logger = o.Logger.With("tenants", key)
	h, err := ui.New(o)
	if err != nil {
		t.s.logger.Warn("web UI of tenants", "tenants", key, "err", err)
		return nil, false
	}
	if len(t.by) >= maxTenantUIs {
		for k := range t.by {
			delete(t.by, k)
			break
		}
	}
	t.by[key] = h
	return h, true
}

func (t *tenantUI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := t.of(r)
	if !ok {
		http.Error(w, tenant.ErrNoTenant.Error(), http.StatusUnauthorized)
		return
	}
	h.ServeHTTP(w, r)
}

// api is the UI's JSON answer at path, for the principal of each request.
func (t *tenantUI) api(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := t.of(r)
		if !ok {
			http.Error(w, tenant.ErrNoTenant.Error(), http.StatusUnauthorized)
			return
		}
		hd, ok := h.APIs()[path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		hd.ServeHTTP(w, r)
	})
}
