package ui

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
)

// incidentRow is one line of /incidents.
type incidentRow struct {
	ID, Href, Severity, State, Kind, Entity string
	Since                                   time.Time
	Age                                     string
	// Cause is the rank-1 cause's summary and Confidence its confidence;
	// empty when the diagnosis named none.
	Cause      string
	Confidence float64
	// Notified says whether the latest diagnosis went to Alertmanager.
	Notified string
}

// incidentsView is the data of /incidents.
type incidentsView struct {
	// Off says the evaluation is off: there are no incidents to list.
	Off            bool
	Open, Resolved []incidentRow
	// Window describes the ?from=&to= filter, if any.
	Window string
	JSON   string
}

// incidentsPage lists the open incidents and the recent resolved ones
// that overlap the ?from=&to= window (all of them without one).
func (h *Handler) incidentsPage(_ context.Context, r *request) (any, error) {
	v := incidentsView{JSON: "/api/v1/incidents"}
	if h.opts.Incidents == nil {
		v.Off = true
		return v, nil
	}
	w := r.rng
	if w.set() {
		w = w.window(timeRange{From: time.Unix(0, 0), To: r.now.Add(time.Hour)})
		v.Window = fmtTime(w.From) + " to " + fmtTime(w.To)
	}
	for _, i := range h.opts.Incidents.List() {
		if w.set() && !overlaps(i, w) {
			continue
		}
		row := incidentRow{
			ID: i.ID, Href: r.link("/incidents/" + url.PathEscape(i.ID)), Severity: i.Severity, State: i.State,
			Kind: i.Kind, Entity: entityText(i.Entity), Since: i.Since, Age: age(r.now, i.Since),
			Notified: notified(i),
		}
		if len(i.Causes) > 0 {
			row.Cause, row.Confidence = i.Causes[0].Summary, i.Causes[0].Confidence
		}
		if i.Firing() {
			v.Open = append(v.Open, row)
		} else {
			v.Resolved = append(v.Resolved, row)
		}
	}
	return v, nil
}

// overlaps reports whether i was open at some time in w.
func overlaps(i incident.Incident, w timeRange) bool {
	end := i.LastSeen
	if i.Resolved != nil {
		end = *i.Resolved
	}
	return !i.Since.After(w.To) && !end.Before(w.From)
}

// notified says what Alertmanager was told of the incident: Vigil knows
// what it handed to the notifier, not what a person acknowledged.
func notified(i incident.Incident) string {
	switch {
	case i.LastSent.IsZero():
		return "not sent"
	case !i.Firing() && !i.ResolvedSent.IsZero():
		return "resolution sent"
	case i.SentRevision < i.Revision:
		return fmt.Sprintf("sent (revision %d of %d)", i.SentRevision, i.Revision)
	}
	return "sent"
}

// entityText renders an entity as sorted key=value pairs.
func entityText(e diagnose.Entity) string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for n, k := range keys {
		parts[n] = k + "=" + e[k]
	}
	return strings.Join(parts, " ")
}

// age says how long before now t was, in the largest whole unit.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return ""
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// incidentView is the data of /incidents/{id}.
type incidentView struct {
	incident.Incident
	EntityText string
	Age        string
	Window     timeRange
	Causes     []causeView
	Timeline   []timelineEntry
	Notified   string
	JSON       string
}

// causeView is one ranked cause with its evidence plotted.
type causeView struct {
	diagnose.Cause
	EntityText string
	Percent    int
	Evidence   []evidenceView
}

// evidenceView is one piece of evidence and the plot that proves it.
type evidenceView struct {
	diagnose.Evidence
	Plot *plotView
}

// timelineEntry is one event of an incident, on the data clock.
type timelineEntry struct {
	At   time.Time
	What string
}

// incidentPage shows one incident: the symptom and onset, the ranked
// causes with their evidence plotted over the window, and the timeline.
func (h *Handler) incidentPage(ctx context.Context, r *request) (any, error) {
	id := r.http.PathValue("id")
	if h.opts.Incidents == nil {
		return nil, notFound("There is no incident %q: the evaluation is off, so Vigil tracks no incidents.", id)
	}
	i, ok := h.opts.Incidents.Get(id)
	if !ok {
		return nil, notFound("There is no incident %q. It may have resolved and been pruned; /incidents lists those Vigil keeps.", id)
	}
	r.view.Title = fmt.Sprintf("%s %s", i.Kind, entityText(i.Entity))
	v := incidentView{
		Incident: i, EntityText: entityText(i.Entity), Age: age(r.now, i.Since),
		Window: r.rng.window(defaultWindow(i, r.now)), Notified: notified(i),
		JSON: "/api/v1/incidents/" + url.PathEscape(i.ID), Timeline: timeline(i),
	}
	var jobs []plotJob
	for _, c := range i.Causes {
		cv := causeView{Cause: c, EntityText: entityText(c.Entity), Percent: int(c.Confidence*100 + 0.5)}
		onset := i.Since
		if c.Since != nil {
			onset = *c.Since
		}
		for _, e := range c.Evidence {
			ev := evidenceView{Evidence: e}
			if e.Query != "" {
				ev.Plot = &plotView{}
				jobs = append(jobs, plotJob{query: e.Query, entity: c.Entity, onset: onset, out: ev.Plot})
			}
			cv.Evidence = append(cv.Evidence, ev)
		}
		v.Causes = append(v.Causes, cv)
	}
	h.plotAll(ctx, jobs, v.Window)
	return v, nil
}

// defaultWindow is an incident's window: from half an hour before the
// onset to five minutes after it was last seen (or resolved), or to now
// if that is sooner.
func defaultWindow(i incident.Incident, now time.Time) timeRange {
	end := i.LastSeen
	if i.Resolved != nil {
		end = *i.Resolved
	}
	from := i.Since
	for _, c := range i.Causes {
		if c.Since != nil && c.Since.Before(from) {
			from = *c.Since
		}
	}
	w := timeRange{From: from.Add(-30 * time.Minute), To: end.Add(5 * time.Minute)}
	if !now.Before(end) && now.Before(w.To) {
		w.To = now
	}
	return w
}

// timeline returns the incident's events on the data clock, in order:
// the onset, each kept diagnosis, the resolution.
func timeline(i incident.Incident) []timelineEntry {
	out := []timelineEntry{{At: i.Since, What: "onset of " + i.Kind}}
	for n, rev := range i.History {
		what := "diagnosed: " + rev.Headline
		if n > 0 {
			what = "re-diagnosed: " + rev.Headline
		}
		out = append(out, timelineEntry{At: rev.At, What: what})
	}
	if len(i.History) == 0 {
		out = append(out, timelineEntry{At: i.OpenedAt, What: "opened"})
	}
	if i.Resolved != nil {
		out = append(out, timelineEntry{At: *i.Resolved, What: "resolved"})
	} else {
		out = append(out, timelineEntry{At: i.LastSeen, What: "last seen (still firing)"})
	}
	slices.SortStableFunc(out, func(a, b timelineEntry) int { return a.At.Compare(b.At) })
	return out
}
