package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	apiv1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/vigil-obs/vigil/internal/envelope"
	"github.com/vigil-obs/vigil/internal/incident"
)

// Incidents is what the API reads of the incident tracker.
type Incidents interface {
	// List returns the incidents, firing first.
	List() []incident.Incident
	// Get returns one incident.
	Get(id string) (incident.Incident, bool)
}

var _ Incidents = (*incident.Tracker)(nil)

// ContextIncidents is Incidents that depend on who asks (tenancy: a
// tenant's own incidents, or the platform's).
type ContextIncidents interface {
	Incidents
	ForContext(ctx context.Context) Incidents
}

// apiAlert is one entry of /api/v1/alerts, in Prometheus's format.
type apiAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    *time.Time        `json:"activeAt,omitempty"`
	Value       string            `json:"value"`
}

// serveIncidents answers /api/v1/incidents (all, or ?state=firing) and
// /api/v1/incidents/{id}.
func serveIncidents(all Incidents) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		inc := all
		if ci, ok := all.(ContextIncidents); ok {
			inc = ci.ForContext(r.Context())
		}
		if r.Method != http.MethodGet {
			envelope.WriteError(w, http.StatusMethodNotAllowed, "bad_data", errors.New("only GET"))
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/api/v1/incidents")
		id = strings.Trim(id, "/")
		if id != "" {
			i, ok := inc.Get(id)
			if !ok {
				envelope.WriteError(w, http.StatusNotFound, "not_found", errors.New("no incident "+strconv.Quote(id)))
				return
			}
			envelope.WriteData(w, i)
			return
		}
		state := r.URL.Query().Get("state")
		if state != "" && state != incident.StateFiring && state != incident.StateResolved {
			envelope.WriteError(w, http.StatusBadRequest, "bad_data", errors.New("state must be firing or resolved, not "+strconv.Quote(state)))
			return
		}
		out := []incident.Incident{}
		for _, i := range inc.List() {
			if state == "" || i.State == state {
				out = append(out, i)
			}
		}
		envelope.WriteData(w, map[string]any{"incidents": out})
	}
}

// serveAlerts answers /api/v1/alerts: the active alerts of the alerting
// rules, as Prometheus lists them, and the firing incidents (what Vigil
// pages with), each with the labels and annotations Alertmanager gets.
func serveAlerts(rulesOf func(context.Context) apiv1.RulesRetriever, all Incidents) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		inc := all
		if ci, ok := all.(ContextIncidents); ok {
			inc = ci.ForContext(r.Context())
		}
		out := []apiAlert{}
		if rr := rulesOf(r.Context()); rr != nil {
			for _, rule := range rr.AlertingRules() {
				for _, a := range rule.ActiveAlerts() {
					at := a.ActiveAt
					out = append(out, apiAlert{
						Labels: a.Labels.Map(), Annotations: a.Annotations.Map(), State: a.State.String(),
						ActiveAt: &at, Value: strconv.FormatFloat(a.Value, 'e', -1, 64),
					})
				}
			}
		}
		if inc != nil {
			for _, a := range incident.FiringAlerts(inc.List()) {
				at := a.StartsAt
				out = append(out, apiAlert{Labels: a.Labels, Annotations: a.Annotations, State: "firing", ActiveAt: &at, Value: "1"})
			}
		}
		envelope.WriteData(w, map[string]any{"alerts": out})
	}
}
