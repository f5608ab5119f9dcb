package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// Severities of an incident.
const (
	// SeverityPage wakes someone up: user impact.
	SeverityPage = "page"
	// SeverityTicket is for the working day.
	SeverityTicket = "ticket"
)

// States of an incident.
const (
	StateFiring   = "firing"
	StateResolved = "resolved"
)

// KindBlind is the kind of the incident opened when Vigil receives no
// telemetry at all: the silence of a broken monitor is itself an alert.
const KindBlind = diagnose.KindExporterDown

// Observation is one thing wrong at one evaluation: a symptom the engine
// found, a firing rule alert, a finding worth a ticket, or Vigil blind.
type Observation struct {
	// Kind is a symptom kind of DESIGN.md, or exporter_down.
	Kind string
	// Entity is what is affected, with canonical keys.
	Entity diagnose.Entity
	// Severity is SeverityPage or SeverityTicket.
	Severity string
	// Since is the onset the observer saw (zero: the evaluation time).
	Since time.Time
	// Summary says what is wrong in one sentence.
	Summary string
	// Source names the observer: "engine", "rule:<alertname>", "watch".
	Source string
	// Causes are the ranked causes that explain it, best first.
	Causes []diagnose.Cause
}

// Revision is one diagnosis of an incident.
type Revision struct {
	// At is the evaluation time (data clock).
	At time.Time `json:"at"`
	// Headline is the rank-1 cause's summary, or the symptom's.
	Headline string `json:"headline"`
}

// Incident is one symptom on one entity, from first seen to resolved.
type Incident struct {
	// ID is stable for the symptom kind and entity.
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Entity   diagnose.Entity `json:"entity"`
	Severity string          `json:"severity"`
	State    string          `json:"state"`
	// Summary is the symptom's sentence at the latest evaluation.
	Summary string `json:"summary"`
	// Source is the observer that opened it.
	Source string `json:"source"`
	// Since is the symptom's onset; OpenedAt the evaluation that first saw
	// it; LastSeen the latest that did (all on the data clock).
	Since    time.Time  `json:"since"`
	OpenedAt time.Time  `json:"opened_at"`
	LastSeen time.Time  `json:"last_seen"`
	Resolved *time.Time `json:"resolved_at,omitempty"`
	// Causes are the ranked causes of the latest diagnosis.
	Causes []diagnose.Cause `json:"causes"`
	// Revision counts diagnoses that changed the ranked causes; History
	// keeps the latest ones.
	Revision int        `json:"revision"`
	History  []Revision `json:"history"`
	// Notification state, on the wall clock (what Alertmanager keeps).
	StartsAt     time.Time `json:"starts_at"`
	LastSent     time.Time `json:"last_sent,omitzero"`
	SentRevision int       `json:"sent_revision"`
	// ResolvedSent is the wall time the resolution was first sent.
	ResolvedSent time.Time `json:"resolved_sent,omitzero"`
	// EndsAt is the wall time at which the resolution took effect.
	EndsAt time.Time `json:"ends_at,omitzero"`
}

// Firing reports whether the incident is open.
func (i *Incident) Firing() bool { return i.State == StateFiring }

// Options configure a Tracker.
type Options struct {
	// Path is the file that keeps incidents across restarts ("" keeps
	// them in memory only).
	Path string
	// ResolveAfter is how long an incident must go unobserved before it
	// resolves (default 2m of data time), so one quiet evaluation does not
	// resolve and re-page a flapping symptom.
	ResolveAfter time.Duration
	// KeepResolved is how long resolved incidents stay listed (default
	// 7d of data time); at most MaxResolved (default 1000) are kept.
	KeepResolved time.Duration
	MaxResolved  int
	// Logger gets one line per opened, re-diagnosed and resolved incident.
	Logger *slog.Logger
}

const (
	defaultResolveAfter = 2 * time.Minute
	defaultKeepResolved = 7 * 24 * time.Hour
	defaultMaxResolved  = 1000
	maxHistory          = 20
	maxCauses           = 3
)

// Tracker holds the incidents. It is safe for concurrent use.
type Tracker struct {
	opts      Options
	mu        sync.Mutex
	incidents map[string]*Incident
}

// Open returns a tracker with the incidents of opts.Path, if it exists.
func Open(opts Options) (*Tracker, error) {
	if opts.ResolveAfter <= 0 {
		opts.ResolveAfter = defaultResolveAfter
	}
	if opts.KeepResolved <= 0 {
		opts.KeepResolved = defaultKeepResolved
	}
	if opts.MaxResolved <= 0 {
		opts.MaxResolved = defaultMaxResolved
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{opts: opts, incidents: map[string]*Incident{}}
	if opts.Path != "" {
		list, err := load(opts.Path)
		if err != nil {
			return nil, err
		}
		for _, i := range list {
			t.incidents[i.ID] = i
		}
	}
	return t, nil
}

// ID returns the identity of a symptom kind on an entity.
func ID(kind string, e diagnose.Entity) string {
	var b strings.Builder
	b.WriteString(kind)
	for _, k := range sortedKeys(e) {
		fmt.Fprintf(&b, "\x00%s=%s", k, e[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Change is what an Observe did to one incident.
type Change struct {
	// What is "opened", "rediagnosed" or "resolved".
	What     string
	Incident Incident
}

// Observe records the observations of the evaluation at at (data clock):
// new ones open incidents, known ones refresh them (a change of the ranked
// causes is a new revision), and firing incidents not observed for
// ResolveAfter resolve. Two observations of the same identity merge (the
// first one's causes win, so pass the engine's symptoms first). wall is
// the wall-clock time, the StartsAt of new incidents. It returns the
// changes and saves the incidents when anything changed.
func (t *Tracker) Observe(at, wall time.Time, obs []Observation) ([]Change, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var changes []Change
	seen := map[string]bool{}
	dirty := false
	for _, o := range obs {
		id := ID(o.Kind, o.Entity)
		if seen[id] {
			continue
		}
		seen[id] = true
		if c, ok := t.observe(id, at, wall, o); ok {
			changes = append(changes, c)
		}
		dirty = true
	}
	for _, i := range t.sorted() {
		if i.Firing() && !seen[i.ID] && at.Sub(i.LastSeen) >= t.opts.ResolveAfter {
			r := at
			i.State, i.Resolved, i.EndsAt = StateResolved, &r, wall
			changes = append(changes, Change{What: "resolved", Incident: i.clone()})
			t.opts.Logger.Info("incident resolved", "id", i.ID, "kind", i.Kind, "entity", entityString(i.Entity),
				"lasted", r.Sub(i.Since).Round(time.Second))
			dirty = true
		}
	}
	if t.prune(at) {
		dirty = true
	}
	if !dirty {
		return changes, nil
	}
	return changes, t.saveLocked()
}

// observe refreshes or opens the incident id; it reports a change when it
// opened one or the ranked causes changed.
func (t *Tracker) observe(id string, at, wall time.Time, o Observation) (Change, bool) {
	causes := topCauses(o.Causes)
	since := o.Since
	if since.IsZero() || since.After(at) {
		since = at
	}
	i, ok := t.incidents[id]
	if !ok || !i.Firing() {
		sev := o.Severity
		if sev == "" {
			sev = SeverityPage
		}
		i = &Incident{
			ID: id, Kind: o.Kind, Entity: o.Entity, Severity: sev, State: StateFiring, Source: o.Source,
			Since: since, OpenedAt: at, StartsAt: wall, Revision: 1,
		}
		t.incidents[id] = i
		i.Summary, i.LastSeen, i.Causes = o.Summary, at, causes
		i.History = []Revision{{At: at, Headline: headline(i)}}
		t.opts.Logger.Info("incident opened", "id", id, "kind", o.Kind, "entity", entityString(o.Entity),
			"severity", sev, "headline", headline(i))
		return Change{What: "opened", Incident: i.clone()}, true
	}
	// The severity is part of the alert's identity: it stays what it was
	// at opening, so a later page-worthy observation is not a second page.
	i.Summary, i.LastSeen = o.Summary, at
	if diagnosisKey(causes) == diagnosisKey(i.Causes) {
		i.Causes = causes // same ranking; fresher evidence and confidence
		return Change{}, false
	}
	i.Causes = causes
	i.Revision++
	i.History = append(i.History, Revision{At: at, Headline: headline(i)})
	if len(i.History) > maxHistory {
		i.History = slices.Delete(i.History, 0, len(i.History)-maxHistory)
	}
	t.opts.Logger.Info("incident re-diagnosed", "id", id, "kind", i.Kind, "entity", entityString(i.Entity),
		"revision", i.Revision, "headline", headline(i))
	return Change{What: "rediagnosed", Incident: i.clone()}, true
}

// prune drops resolved incidents older than KeepResolved and all but the
// newest MaxResolved resolved ones.
func (t *Tracker) prune(at time.Time) bool {
	var resolved []*Incident
	pruned := false
	for id, i := range t.incidents {
		if i.Firing() {
			continue
		}
		if at.Sub(*i.Resolved) > t.opts.KeepResolved {
			delete(t.incidents, id)
			pruned = true
			continue
		}
		resolved = append(resolved, i)
	}
	if len(resolved) <= t.opts.MaxResolved {
		return pruned
	}
	sort.Slice(resolved, func(a, b int) bool { return resolved[a].Resolved.After(*resolved[b].Resolved) })
	for _, i := range resolved[t.opts.MaxResolved:] {
		delete(t.incidents, i.ID)
	}
	return true
}

// List returns the incidents, firing first, then the newest first.
func (t *Tracker) List() []Incident {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Incident, 0, len(t.incidents))
	for _, i := range t.sorted() {
		out = append(out, i.clone())
	}
	return out
}

// Get returns the incident id.
func (t *Tracker) Get(id string) (Incident, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.incidents[id]
	if !ok {
		return Incident{}, false
	}
	return i.clone(), true
}

// sorted returns the incidents firing first, then by opening time, newest
// first, then by ID.
func (t *Tracker) sorted() []*Incident {
	out := make([]*Incident, 0, len(t.incidents))
	for _, i := range t.incidents {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Firing() != y.Firing() {
			return x.Firing()
		}
		if !x.OpenedAt.Equal(y.OpenedAt) {
			return x.OpenedAt.After(y.OpenedAt)
		}
		return x.ID < y.ID
	})
	return out
}

func (i *Incident) clone() Incident {
	c := *i
	c.Entity = maps(i.Entity)
	c.Causes = slices.Clone(i.Causes)
	c.History = slices.Clone(i.History)
	if i.Resolved != nil {
		r := *i.Resolved
		c.Resolved = &r
	}
	return c
}

func maps(e diagnose.Entity) diagnose.Entity {
	out := make(diagnose.Entity, len(e))
	for k, v := range e {
		out[k] = v
	}
	return out
}

// topCauses keeps the best causes, renumbered from 1.
func topCauses(cs []diagnose.Cause) []diagnose.Cause {
	out := slices.Clone(cs[:min(len(cs), maxCauses)])
	for n := range out {
		out[n].Rank = n + 1
	}
	if out == nil {
		out = []diagnose.Cause{}
	}
	return out
}

// diagnosisKey names a ranking by its causes' kinds and entities: a
// change of it is a re-diagnosis; new evidence for the same ranking is
// not.
func diagnosisKey(cs []diagnose.Cause) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s %s;", c.Kind, entityString(c.Entity))
	}
	return b.String()
}

// headline is the incident's one-line answer: the rank-1 cause's summary,
// or the symptom's.
func headline(i *Incident) string {
	if len(i.Causes) > 0 {
		return i.Causes[0].Summary
	}
	return i.Summary
}

func entityString(e diagnose.Entity) string {
	parts := make([]string, 0, len(e))
	for _, k := range sortedKeys(e) {
		parts = append(parts, k+"="+e[k])
	}
	return strings.Join(parts, " ")
}

func sortedKeys(e diagnose.Entity) []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
