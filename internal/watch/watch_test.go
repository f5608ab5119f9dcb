package watch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/notifier"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sender records what the watcher sends.
type sender struct {
	mu   sync.Mutex
	sent []*notifier.Alert
}

func (s *sender) Send(alerts ...*notifier.Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, alerts...)
}

func (s *sender) all() []*notifier.Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*notifier.Alert(nil), s.sent...)
}

// stream simulates scenario into a fresh store and calls cycle every 30s
// of simulated time after a 10-minute warm-up.
func stream(t *testing.T, scenario string, d time.Duration, cycle func(ctx context.Context, st *store.Embedded, at time.Time)) (*store.Embedded, []sim.Fault) {
	t.Helper()
	sc, err := sim.ParseScenario(scenario)
	require.NoError(t, err)
	s, err := sim.New(sim.Config{Seed: 3, Duration: d}, sc)
	require.NoError(t, err)
	clock := sim.NewClock(s.Config().Start)
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.MaxExemplars = 0
	st, err := store.OpenEmbedded(cfg, clock.Now, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	start, next := s.Config().Start, time.Time{}
	err = s.Run(t.Context(), st, sim.RunOptions{Clock: clock, OnScrape: func(ctx context.Context, r sim.Scrape) error {
		if r.At.Sub(start) < 10*time.Minute || r.At.Before(next) {
			return nil
		}
		next = r.At.Add(30 * time.Second)
		cycle(ctx, st, r.At)
		return nil
	}})
	require.NoError(t, err)
	return st, s.Truth()
}

func TestNVLinkPagesOnceWithItsCause(t *testing.T) {
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	tr, err := incident.Open(incident.Options{Path: t.TempDir() + "/incidents.json"})
	require.NoError(t, err)
	snd := &sender{}
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var w *Watcher
	var firstRight time.Time
	var firstCause string
	_, truth := stream(t, "nvlink_degraded", 30*time.Minute, func(ctx context.Context, st *store.Embedded, at time.Time) {
		if w == nil {
			w, err = New(Options{Source: st, Engine: eng, Tracker: tr, Sender: snd, Wall: func() time.Time { return wall }})
			require.NoError(t, err)
		}
		wall = wall.Add(time.Second)
		require.NoError(t, w.Cycle(ctx, at))
		for _, a := range snd.all() {
			if firstRight.IsZero() && a.Labels.Get("symptom") == "training_stall" &&
				strings.HasPrefix(a.Annotations.Get("cause"), "nvlink_degraded ") {
				firstRight, firstCause = at, a.Annotations.Get("cause")
			}
		}
	})
	require.Len(t, truth, 1)
	require.Equal(t, "nvlink_degraded "+entityString(truth[0].Entity), firstCause)
	require.False(t, firstRight.IsZero(), "no alert carried the NVLink cause; sent: %v", snd.all())
	ttp := firstRight.Sub(truth[0].Onset)
	t.Logf("time to page with the right rank-1 cause: %s", ttp)
	require.LessOrEqual(t, ttp, 2*time.Minute)

	// One identity for the stall, however often it was re-diagnosed.
	ids := map[string]bool{}
	for _, a := range snd.all() {
		if a.Labels.Get("symptom") == "training_stall" {
			ids[a.Labels.String()] = true
			require.True(t, a.EndsAt.After(a.StartsAt))
		}
	}
	require.Len(t, ids, 1, "identities: %v", ids)
	var firing []incident.Incident
	for _, i := range tr.List() {
		if i.Firing() && i.Severity == incident.SeverityPage {
			firing = append(firing, i)
		}
	}
	require.Len(t, firing, 1, "%+v", firing)
	require.Equal(t, "training_stall", firing[0].Kind)
	rep, at := w.Last()
	require.NotNil(t, rep)
	require.False(t, at.IsZero())
}

func TestHealthyStaysQuiet(t *testing.T) {
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	tr, err := incident.Open(incident.Options{})
	require.NoError(t, err)
	snd := &sender{}
	var w *Watcher
	stream(t, "healthy", 20*time.Minute, func(ctx context.Context, st *store.Embedded, at time.Time) {
		if w == nil {
			w, err = New(Options{Source: st, Engine: eng, Tracker: tr, Sender: snd})
			require.NoError(t, err)
		}
		require.NoError(t, w.Cycle(ctx, at))
	})
	require.Empty(t, snd.all())
	require.Empty(t, tr.List())
}

const testRules = `
- name: test
  rules:
  - record: test:up:sum
    expr: sum(up)
  - alert: VigilWatchdog
    expr: vector(1)
    labels: {severity: none}
  - alert: QueueBurning
    expr: sum by (namespace, model_name) (vllm:num_requests_waiting) >= 0
    for: 1m
    labels: {severity: page, vigil_symptom: queue_growing, slo: queue}
    annotations: {summary: "queue of {{ $labels.model_name }} is growing"}
  - alert: Ticket
    expr: vector(1)
    labels: {severity: ticket}
`

func TestRulesBecomeIncidentsOrAlerts(t *testing.T) {
	var groups []rulefmt.RuleGroup
	require.NoError(t, yaml.Unmarshal([]byte(testRules), &groups))
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	tr, err := incident.Open(incident.Options{})
	require.NoError(t, err)
	snd := &sender{}
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var w *Watcher
	var last time.Time
	stream(t, "healthy", 14*time.Minute, func(ctx context.Context, st *store.Embedded, at time.Time) {
		if w == nil {
			w, err = New(Options{Source: st, Engine: eng, Tracker: tr, Sender: snd, Groups: groups,
				Wall: func() time.Time { return wall }})
			require.NoError(t, err)
		}
		require.NoError(t, w.Cycle(ctx, at))
		last = at
	})
	require.Len(t, w.RuleGroups(), 1)
	require.Len(t, w.AlertingRules(), 3)

	// The page alert became one incident per model, with the symptom kind
	// of its label; not sent as a bare rule alert.
	var queue []incident.Incident
	for _, i := range tr.List() {
		if i.Kind == "queue_growing" {
			queue = append(queue, i)
		}
	}
	require.NotEmpty(t, queue)
	require.Equal(t, "rule:QueueBurning", queue[0].Source)
	require.Contains(t, queue[0].Entity, "model")
	require.Contains(t, queue[0].Entity, "namespace")
	names := map[string]int{}
	for _, a := range snd.all() {
		names[a.Labels.Get("alertname")]++
		if a.Labels.Get("alertname") == "VigilWatchdog" {
			// Firing since the first cycle: on the wall clock, up to the
			// run's simulated length before the (frozen) wall time.
			require.False(t, a.StartsAt.After(wall), "rule alerts are moved onto the wall clock")
			require.True(t, a.StartsAt.After(wall.Add(-5*time.Minute)), "rule alerts are moved onto the wall clock")
			require.True(t, a.EndsAt.After(wall))
		}
	}
	require.NotZero(t, names["VigilWatchdog"])
	require.NotZero(t, names["Ticket"])
	require.NotZero(t, names["QueueGrowing"])
	require.Zero(t, names["QueueBurning"])

	// The recording rule wrote into the store.
	q, err := w.opts.Source.Querier(last.Add(-time.Minute).UnixMilli(), last.UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "test:up:sum"))
	require.True(t, ss.Next(), "no test:up:sum series")
	require.NoError(t, ss.Err())
}

func entityString(e map[string]string) string {
	var parts []string
	for k, v := range e {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func TestCausesFor(t *testing.T) {
	rep := &diagnose.Report{
		Symptoms: []diagnose.Symptom{{Kind: "training_stall", Entity: diagnose.Entity{"namespace": "ml-train", "workload": "llm"}}},
		Causes: []diagnose.Cause{
			{Kind: "nvlink_degraded", Entity: diagnose.Entity{"node": "n6", "gpu": "3"}, Explains: []int{0}},
			{Kind: "kv_cache_exhausted", Entity: diagnose.Entity{"namespace": "inference", "model": "m"}},
		},
	}
	f := func(e diagnose.Entity, want ...string) {
		t.Helper()
		var got []string
		for _, c := range causesFor(rep, e) {
			got = append(got, c.Kind)
		}
		require.Equal(t, want, got)
	}
	f(diagnose.Entity{"namespace": "ml-train", "node": "n6"}, "nvlink_degraded")
	f(diagnose.Entity{"namespace": "inference", "model": "m"}, "kv_cache_exhausted")
	f(diagnose.Entity{"namespace": "inference", "model": "other"})
	f(diagnose.Entity{"namespace": "research"})
}

func TestRuleEntityDropsDevices(t *testing.T) {
	e := ruleEntity(labels.FromStrings("alertname", "X", "namespace", "ml-train", "Hostname", "n6", "gpu", "3", "model_name", "m", "severity", "page"))
	require.Equal(t, diagnose.Entity{"namespace": "ml-train", "node": "n6", "model": "m"}, e)
}

// TestOnePagePerCause: pages whose rank-1 cause is the same fault become
// one (the engine's, or the one already open), with the other's summary;
// tickets, pages of other causes and pages without a cause are kept.
func TestOnePagePerCause(t *testing.T) {
	nv := diagnose.Cause{Kind: "nvlink_degraded", Entity: diagnose.Entity{"node": "n6", "gpu": "3"}}
	stall := incident.Observation{Kind: "training_stall", Entity: diagnose.Entity{"namespace": "ml", "workload": "llm"},
		Severity: incident.SeverityPage, Summary: "llm stalled", Source: "engine", Causes: []diagnose.Cause{nv}}
	rule := incident.Observation{Kind: "training_slowdown", Entity: diagnose.Entity{"node": "n6"},
		Severity: incident.SeverityPage, Summary: "NVLink low on n6", Source: "rule:NVLinkBandwidthLow", Causes: []diagnose.Cause{nv}}
	other := incident.Observation{Kind: "ttft_high", Entity: diagnose.Entity{"model": "m"}, Severity: incident.SeverityPage,
		Summary: "slow", Causes: []diagnose.Cause{{Kind: "kv_cache_exhausted", Entity: diagnose.Entity{"model": "m"}}}}
	bare := incident.Observation{Kind: "slo_burn", Entity: diagnose.Entity{"model": "x"}, Severity: incident.SeverityPage, Summary: "burn"}
	tk := incident.Observation{Kind: "nvlink_degraded", Entity: nv.Entity, Severity: incident.SeverityTicket, Causes: []diagnose.Cause{nv}}

	none := func(string) bool { return false }
	got := onePagePerCause([]incident.Observation{stall, tk, rule, other, bare}, none)
	require.Len(t, got, 4)
	require.Equal(t, "training_stall", got[0].Kind)
	require.Equal(t, "llm stalled; also NVLink low on n6", got[0].Summary)
	require.Equal(t, []string{"nvlink_degraded", "ttft_high", "slo_burn"}, []string{got[1].Kind, got[2].Kind, got[3].Kind})

	// The rule's page is open already: it stays the page.
	ruleOpen := func(id string) bool { return id == incident.ID(rule.Kind, rule.Entity) }
	got = onePagePerCause([]incident.Observation{stall, rule}, ruleOpen)
	require.Len(t, got, 1)
	require.Equal(t, "training_slowdown", got[0].Kind)
	require.Equal(t, "NVLink low on n6; also llm stalled", got[0].Summary)

	// A rule that fires once per GPU link adds its first summary and how
	// many more it had, not eight of them.
	var many []incident.Observation
	many = append(many, stall)
	for g := range 8 {
		r := rule
		r.Entity = diagnose.Entity{"node": "n6", "gpu": fmt.Sprint(g)}
		r.Summary = fmt.Sprintf("NVLink low on n6/%d", g)
		many = append(many, r)
	}
	got = onePagePerCause(many, none)
	require.Len(t, got, 1)
	require.Equal(t, "llm stalled; also NVLink low on n6/0 (and 7 more from rule:NVLinkBandwidthLow)", got[0].Summary)
}
