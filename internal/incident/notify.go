package incident

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// ResolvedRetention is how long a resolution keeps being re-sent, as
// Prometheus's rule manager does (so an Alertmanager that was down when it
// happened still learns of it).
const ResolvedRetention = 15 * time.Minute

// Alert is one incident as Alertmanager sees it: identity labels (the
// symptom and its entity only), annotations with the diagnosis, and
// wall-clock times.
type Alert struct {
	Labels      map[string]string
	Annotations map[string]string
	StartsAt    time.Time
	EndsAt      time.Time
	// GeneratorURL links to the incident.
	GeneratorURL string
	// ID is the incident's, for MarkSent.
	ID string
	// Revision is the diagnosis the alert carries, for MarkSent.
	Revision int
}

// Due returns the alerts to send at wall-clock time wall: incidents never
// sent, re-diagnosed since they were sent, or last sent resend ago or
// more; resolutions not yet sent, and re-sent every resend for
// ResolvedRetention. A firing alert's EndsAt is 4 resends ahead (what
// Prometheus does, so two lost sends do not resolve it); a resolved one's
// is the time it resolved. externalURL prefixes the incident link. Call
// MarkSent with what was handed to the notifier.
func (t *Tracker) Due(wall time.Time, resend time.Duration, externalURL string) []Alert {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Alert
	for _, i := range t.sorted() {
		if !i.due(wall, resend) {
			continue
		}
		a := Alert{
			Labels: i.labels(), Annotations: i.annotations(externalURL),
			StartsAt: i.StartsAt, GeneratorURL: incidentURL(externalURL, i.ID),
			ID: i.ID, Revision: i.Revision,
		}
		if i.Firing() {
			a.EndsAt = wall.Add(4 * resend)
		} else {
			a.EndsAt = i.EndsAt
		}
		out = append(out, a)
	}
	return out
}

func (i *Incident) due(wall time.Time, resend time.Duration) bool {
	if i.Firing() {
		return i.LastSent.IsZero() || i.SentRevision != i.Revision || wall.Sub(i.LastSent) >= resend
	}
	if i.ResolvedSent.IsZero() {
		return !i.LastSent.IsZero() // never paged: nothing to resolve
	}
	return wall.Sub(i.ResolvedSent) < ResolvedRetention && wall.Sub(i.LastSent) >= resend
}

// MarkSent records that alerts were handed to the notifier at wall.
func (t *Tracker) MarkSent(wall time.Time, alerts []Alert) error {
	if len(alerts) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range alerts {
		i, ok := t.incidents[a.ID]
		if !ok {
			continue
		}
		i.LastSent = wall
		if i.Firing() {
			i.SentRevision = max(i.SentRevision, a.Revision)
		} else if i.ResolvedSent.IsZero() {
			i.ResolvedSent = wall
		}
	}
	return t.saveLocked()
}

// labels are the identity of the incident's alert: alertname (the kind in
// CamelCase), severity, symptom and the entity — nothing a re-diagnosis
// changes.
func (i *Incident) labels() map[string]string {
	l := map[string]string{
		"alertname": AlertName(i.Kind),
		"severity":  i.Severity,
		"symptom":   i.Kind,
	}
	for k, v := range i.Entity {
		if _, taken := l[k]; !taken {
			l[k] = v
		}
	}
	return l
}

// AlertName is the alertname of an incident of kind: training_stall →
// TrainingStall, slo_burn → SLOBurn.
func AlertName(kind string) string {
	var b strings.Builder
	for _, w := range strings.Split(kind, "_") {
		switch w {
		case "slo", "gpu", "xid", "ttft", "oom", "kv":
			b.WriteString(strings.ToUpper(w))
		case "pcie":
			b.WriteString("PCIe")
		case "nvlink":
			b.WriteString("NVLink")
		default:
			r := []rune(w)
			if len(r) > 0 {
				r[0] = unicode.ToUpper(r[0])
			}
			b.WriteString(string(r))
		}
	}
	return b.String()
}

// annotations carry the diagnosis: the headline, the ranked causes, the
// rank-1 cause's evidence and action, and the incident's link.
func (i *Incident) annotations(externalURL string) map[string]string {
	a := map[string]string{
		"summary":      headline(i),
		"symptom":      i.Summary,
		"since":        i.Since.UTC().Format(time.RFC3339),
		"incident_id":  i.ID,
		"incident_url": incidentURL(externalURL, i.ID),
		"incident_api": strings.TrimSuffix(externalURL, "/") + "/api/v1/incidents/" + i.ID,
		"revision":     fmt.Sprint(i.Revision),
	}
	if len(i.Causes) == 0 {
		a["description"] = i.Summary + "\nNo probable cause yet; the diagnosis runs again every evaluation."
		return a
	}
	top := i.Causes[0]
	a["cause"] = top.Kind + " " + entityString(top.Entity)
	a["confidence"] = fmt.Sprintf("%.2f", top.Confidence)
	if top.Action != "" {
		a["action"] = top.Action
	}
	var causes, evidence []string
	for _, c := range i.Causes {
		causes = append(causes, fmt.Sprintf("%d. %s %s (confidence %.2f): %s", c.Rank, c.Kind, entityString(c.Entity), c.Confidence, c.Summary))
	}
	for _, ev := range top.Evidence {
		evidence = append(evidence, ev.Signal+": "+ev.Summary)
	}
	a["causes"] = strings.Join(causes, "\n")
	if len(evidence) > 0 {
		a["evidence"] = strings.Join(evidence, "\n")
	}
	a["description"] = i.Summary + "\n" + a["causes"]
	return a
}

// incidentURL is the incident's page in the web UI, where the pager's
// link lands (the alert's generatorURL and its incident_url); its JSON is
// the incident_api annotation.
func incidentURL(base, id string) string {
	return strings.TrimSuffix(base, "/") + "/incidents/" + id
}

// CauseOf returns the "kind entity" string the cause annotation carries.
func CauseOf(c diagnose.Cause) string { return c.Kind + " " + entityString(c.Entity) }

// FiringAlerts returns the alerts of the firing incidents among list, as
// they were last sent (labels, annotations, startsAt), without links.
func FiringAlerts(list []Incident) []Alert {
	var out []Alert
	for n := range list {
		i := &list[n]
		if !i.Firing() {
			continue
		}
		out = append(out, Alert{Labels: i.labels(), Annotations: i.annotations(""), StartsAt: i.StartsAt, ID: i.ID, Revision: i.Revision})
	}
	return out
}
