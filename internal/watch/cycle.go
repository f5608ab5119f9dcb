package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"net/url"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/rules"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
)

// Labels of generated rules the watcher reads (internal/slo writes them).
const (
	labelSeverity = "severity"
	labelSymptom  = "vigil_symptom"
)

// Cycle evaluates once at at (data clock): the rule groups, the
// diagnosis, the incidents, and the notifications due at the wall clock's
// now. Cycles do not overlap.
func (w *Watcher) Cycle(ctx context.Context, at time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	began := time.Now()
	wall := w.opts.Wall()
	w.offset = wall.Sub(at)
	if w.opts.Probe != nil {
		if err := w.opts.Probe(ctx); err != nil {
			return w.sourceDown(at, wall, err)
		}
		w.metrics.sourceUp.Set(1)
	}
	for _, task := range w.opts.Tasks {
		if err := task(ctx, at); err != nil {
			w.metrics.taskFailures.Inc()
			w.opts.Logger.Warn("evaluation task failed", "err", err)
		}
	}
	for _, g := range w.groups {
		// As the rule manager's own loop does: the evaluation, and the
		// group's duration, last evaluation and iteration metrics.
		rules.DefaultEvalIterationFunc(ctx, g, at)
	}
	if !w.restored {
		// As Prometheus's rule manager does after its first evaluation:
		// alerts that were pending or firing before a restart keep their
		// `for` progress (from the ALERTS_FOR_STATE series).
		for _, g := range w.groups {
			g.RestoreForState(at)
		}
		w.restored = true
	}
	rep, err := w.opts.Engine.Diagnose(ctx, w.opts.Source, at)
	var obs []incident.Observation
	switch {
	case errors.Is(err, diagnose.ErrNoData):
		if w.sawData {
			obs = append(obs, blind(at))
		}
		rep = nil
		w.metrics.blind.Set(1)
	case err != nil:
		w.metrics.failures.Inc()
		return fmt.Errorf("diagnose at %s: %w", at.Format(time.RFC3339), err)
	default:
		w.sawData = true
		if w.opts.Annotate != nil {
			w.opts.Annotate(ctx, at, rep)
		}
		obs = append(obs, fromReport(rep, w.opts.FindingConfidence, w.ticketFiring)...)
		blindNow := 0.0
		if rep.Blind() {
			blindNow = 1
		}
		w.metrics.blind.Set(blindNow)
	}
	obs = append(obs, w.fromRules(rep)...)
	obs = onePagePerCause(obs, func(id string) bool {
		i, ok := w.opts.Tracker.Get(id)
		return ok && i.Firing()
	})
	if rep != nil && rep.Blind() {
		obs = append(obs, w.holdOpen()...)
	}
	if err := w.observe(at, wall, obs); err != nil {
		return err
	}
	w.lastRep, w.lastAt = rep, at
	if err := w.notify(wall); err != nil {
		return err
	}
	w.metrics.cycles.Inc()
	w.metrics.duration.Observe(time.Since(began).Seconds())
	w.metrics.last.Set(float64(at.UnixMilli()) / 1000)
	return nil
}

// sourceDown is the cycle of a source that does not answer: nothing is
// evaluated, the firing incidents are held open (neither resolved nor
// re-paged), and Vigil pages that it is blind, with why.
func (w *Watcher) sourceDown(at, wall time.Time, cause error) error {
	w.metrics.sourceUp.Set(0)
	w.metrics.skipped.Inc()
	w.metrics.blind.Set(1)
	w.opts.Logger.Warn("the source did not answer: cycle skipped, incidents held open", "at", at.Format(time.RFC3339), "err", cause)
	obs := []incident.Observation{{
		Kind: incident.KindBlind, Entity: diagnose.Entity{}, Severity: incident.SeverityPage, Since: at,
		Summary: "Vigil cannot read its source: " + cause.Error() + "; nothing is evaluated until it answers, and open incidents are held",
		Source:  "watch",
	}}
	for _, o := range w.holdOpen() {
		if o.Kind != incident.KindBlind {
			obs = append(obs, o)
		}
	}
	if err := w.observe(at, wall, obs); err != nil {
		return err
	}
	return w.notify(wall)
}

// observe hands the cycle's observations to the tracker and reports the
// changes (metrics, OnChange).
func (w *Watcher) observe(at, wall time.Time, obs []incident.Observation) error {
	changes, err := w.opts.Tracker.Observe(at, wall, obs)
	if err != nil {
		w.metrics.failures.Inc()
		return err
	}
	for _, c := range changes {
		w.metrics.changes.WithLabelValues(c.What).Inc()
		if w.opts.OnChange != nil {
			w.opts.OnChange(c)
		}
	}
	return nil
}

// onePagePerCause keeps one page per rank-1 cause: a fault that shows as
// several symptoms — the engine's stall of a job and a rule's NVLink alert
// on its node, a node down under a training job and a model server —
// pages once, the others' summaries added to it. The page kept is the one
// whose incident is already open (so a second observer does not re-page
// it), else the first (the engine's come before the rules'). An observer
// that adds several (a rule that fires once per GPU link) adds its first
// summary and how many more it had. Tickets and pages without a cause
// stay as they are.
func onePagePerCause(obs []incident.Observation, firing func(id string) bool) []incident.Observation {
	type also struct {
		source, summary string
		more            int
	}
	out := make([]incident.Observation, 0, len(obs))
	base := map[int]string{} // each merged page's own summary
	added := map[int][]also{}
	byCause := map[string]int{}
	for _, o := range obs {
		if o.Severity != incident.SeverityPage || len(o.Causes) == 0 {
			out = append(out, o)
			continue
		}
		k := incident.ID(o.Causes[0].Kind, o.Causes[0].Entity)
		i, seen := byCause[k]
		if !seen {
			byCause[k] = len(out)
			out = append(out, o)
			continue
		}
		if _, ok := base[i]; !ok {
			base[i] = out[i].Summary
		}
		kept, other := out[i], o
		if !firing(incident.ID(kept.Kind, kept.Entity)) && firing(incident.ID(o.Kind, o.Entity)) {
			// The other page is open already: it stays the page, and the
			// one kept so far is added to it.
			kept, other = o, out[i]
			other.Summary = base[i]
			base[i] = kept.Summary
		}
		list := added[i]
		j := slices.IndexFunc(list, func(a also) bool { return a.source == other.Source && other.Source != "" })
		if j >= 0 {
			list[j].more++
		} else {
			list = append(list, also{source: other.Source, summary: other.Summary})
		}
		added[i] = list
		out[i] = kept
	}
	for i, list := range added {
		sum := base[i]
		for _, a := range list {
			sum += "; also " + a.summary
			if a.more > 0 {
				sum += fmt.Sprintf(" (and %d more from %s)", a.more, a.source)
			}
		}
		out[i].Summary = sum
	}
	return out
}

// holdOpen re-observes the firing incidents, as they are. A blind
// diagnosis (data, but none in a vocabulary Vigil knows: a relabelling
// or a wrong target) is no verdict: it neither pages nor resolves what is
// open on its silence. Those incidents resolve once Vigil sees again and
// no longer observes them.
func (w *Watcher) holdOpen() []incident.Observation {
	var out []incident.Observation
	for _, i := range w.opts.Tracker.List() {
		if !i.Firing() {
			continue
		}
		out = append(out, incident.Observation{
			Kind: i.Kind, Entity: i.Entity, Severity: i.Severity, Since: i.Since,
			Summary: i.Summary, Source: i.Source, Causes: i.Causes,
		})
	}
	return out
}

// blind is the observation of a Vigil that receives nothing any more.
func blind(at time.Time) incident.Observation {
	return incident.Observation{
		Kind: incident.KindBlind, Entity: diagnose.Entity{}, Severity: incident.SeverityPage, Since: at,
		Summary: "Vigil receives no telemetry: no sample arrived in the diagnosis window; every target may be down or unreachable",
		Source:  "watch",
	}
}

// ticketFiring reports whether the ticket for a cause kind on an entity is
// open.
func (w *Watcher) ticketFiring(kind string, e diagnose.Entity) bool {
	i, ok := w.opts.Tracker.Get(incident.ID(kind, e))
	return ok && i.Firing()
}

// fromReport turns the engine's symptoms into page observations with the
// causes that explain them, and confident findings (problems with no
// symptom yet: a degrading part, Vigil blind to a node) into tickets. A
// finding that becomes the cause of a symptom keeps its ticket open: the
// part is still broken, now with user impact (which pages).
func fromReport(rep *diagnose.Report, findingConfidence float64, open func(string, diagnose.Entity) bool) []incident.Observation {
	var out []incident.Observation
	for n, s := range rep.Symptoms {
		if !s.Current() {
			continue // history: it ended before the cycle and pages nobody
		}
		var causes []diagnose.Cause
		for _, c := range rep.Causes {
			if slices.Contains(c.Explains, n) {
				causes = append(causes, c)
			}
		}
		out = append(out, incident.Observation{
			Kind: s.Kind, Entity: s.Entity, Severity: incident.SeverityPage, Since: s.Since,
			Summary: s.Summary, Source: "engine", Causes: causes,
		})
	}
	for _, f := range rep.Findings {
		if f.Confidence < findingConfidence {
			continue
		}
		out = append(out, ticket(f))
	}
	for _, c := range rep.Causes {
		if c.Confidence >= findingConfidence && open(c.Kind, c.Entity) {
			out = append(out, ticket(c))
		}
	}
	return out
}

// ticket is the observation of a cause or finding on its own.
func ticket(f diagnose.Cause) incident.Observation {
	{
		var since time.Time
		if f.Since != nil {
			since = *f.Since
		}
		return incident.Observation{
			Kind: f.Kind, Entity: f.Entity, Severity: incident.SeverityTicket, Since: since,
			Summary: f.Summary, Source: "engine", Causes: []diagnose.Cause{f},
		}
	}
}

// fromRules turns firing page-severity rule alerts (burning SLOs, the
// composite user-impact alerts) into observations: their symptom kind is
// the vigil_symptom label (slo_burn by default), their entity the
// canonical labels, their causes the diagnosis's.
func (w *Watcher) fromRules(rep *diagnose.Report) []incident.Observation {
	var out []incident.Observation
	for _, r := range w.AlertingRules() {
		for _, a := range r.ActiveAlerts() {
			if a.State != rules.StateFiring || a.Labels.Get(labelSeverity) != incident.SeverityPage {
				continue
			}
			kind := a.Labels.Get(labelSymptom)
			if kind == "" {
				kind = diagnose.SymptomSLOBurn
			}
			e := ruleEntity(a.Labels)
			summary := a.Annotations.Get("summary")
			if summary == "" {
				summary = r.Name() + " is firing"
			}
			o := incident.Observation{
				Kind: kind, Entity: e, Severity: incident.SeverityPage, Since: a.FiredAt,
				Summary: summary, Source: "rule:" + r.Name(),
			}
			if rep != nil {
				o.Causes = causesFor(rep, e)
			}
			out = append(out, o)
		}
	}
	return out
}

// labelKeys maps the labels rule alerts carry to canonical entity keys:
// the keys themselves, and the aliases a rule keeps when it aggregates
// raw exporter series (vLLM's model_name, dcgm-exporter's Hostname).
var labelKeys = func() map[string]string {
	m := map[string]string{
		"model_name": catalog.KeyModel, "Hostname": catalog.KeyNode, "hostname": catalog.KeyNode,
		"exported_namespace": catalog.KeyNamespace, "exported_pod": catalog.KeyPod,
	}
	for _, k := range catalog.EntityKeys() {
		m[k] = k
	}
	return m
}()

// causesFor returns the causes of rep that explain a symptom on an entity
// that agrees with e (the same value for every key both name, and at least
// one key in common), or that touch e themselves: a burning inference SLO
// gets the causes of that deployment's symptoms, not a training job's.
func causesFor(rep *diagnose.Report, e diagnose.Entity) []diagnose.Cause {
	var out []diagnose.Cause
	for _, c := range rep.Causes {
		ok := agree(c.Entity, e)
		for _, n := range c.Explains {
			if n >= 0 && n < len(rep.Symptoms) && agree(rep.Symptoms[n].Entity, e) {
				ok = true
			}
		}
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// agree reports whether two entities name the same thing as far as both
// say: equal on every key both have, with at least one.
func agree(a, b diagnose.Entity) bool {
	common := 0
	for k, v := range a {
		if w, ok := b[k]; ok {
			if v != w {
				return false
			}
			common++
		}
	}
	return common > 0
}

// perDevice are the entity keys a page leaves out: a node's fault shows on
// each of its GPUs, and one page per GPU would be eight pages for one
// fault. The GPU is named in the causes.
var perDevice = map[string]bool{catalog.KeyGPU: true, catalog.KeyUUID: true, catalog.KeyGPUInstance: true}

// ruleEntity is the entity a rule alert's labels name, without the device
// keys; a canonical key wins over an alias of it.
func ruleEntity(ls labels.Labels) diagnose.Entity {
	e := diagnose.Entity{}
	ls.Range(func(l labels.Label) {
		if k, ok := labelKeys[l.Name]; ok && l.Value != "" && !perDevice[k] {
			if _, taken := e[k]; !taken || k == l.Name {
				e[k] = l.Value
			}
		}
	})
	return e
}

// notify hands the due incident alerts to the sender.
func (w *Watcher) notify(wall time.Time) error {
	if w.opts.Sender == nil {
		return nil
	}
	due := w.opts.Tracker.Due(wall, w.opts.ResendInterval, w.opts.ExternalURL)
	if len(due) == 0 {
		return nil
	}
	out := make([]*notifier.Alert, 0, len(due))
	for _, a := range due {
		out = append(out, &notifier.Alert{
			Labels: labels.FromMap(a.Labels), Annotations: labels.FromMap(a.Annotations),
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, GeneratorURL: a.GeneratorURL,
		})
	}
	w.opts.Sender.Send(out...)
	return w.opts.Tracker.MarkSent(wall, due)
}

// notifyRules sends the rule alerts that are not incidents (tickets, the
// watchdog) as Prometheus does, with their times moved onto the wall clock.
// Page alerts go out as incidents, with their diagnosis.
func (w *Watcher) notifyRules(_ context.Context, expr string, alerts ...*rules.Alert) {
	if w.opts.Sender == nil {
		return
	}
	var out []*notifier.Alert
	for _, a := range alerts {
		if a.Labels.Get(labelSeverity) == incident.SeverityPage {
			continue
		}
		n := &notifier.Alert{
			Labels: a.Labels.Copy(), Annotations: a.Annotations.Copy(),
			StartsAt:     a.FiredAt.Add(w.offset),
			GeneratorURL: w.opts.ExternalURL + "/graph?g0.expr=" + url.QueryEscape(expr),
		}
		if !a.ResolvedAt.IsZero() {
			n.EndsAt = a.ResolvedAt.Add(w.offset)
		} else {
			n.EndsAt = a.ValidUntil.Add(w.offset)
		}
		out = append(out, n)
	}
	if len(out) > 0 {
		w.opts.Sender.Send(out...)
	}
}
