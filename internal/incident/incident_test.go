package incident

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

var t0 = time.Date(2026, 11, 12, 2, 47, 30, 0, time.UTC)

func stall(causes ...diagnose.Cause) Observation {
	return Observation{
		Kind: diagnose.SymptomTrainingStall, Entity: diagnose.Entity{"namespace": "ml-train", "workload": "llm-pretrain"},
		Severity: SeverityPage, Since: t0, Summary: "ml-train/llm-pretrain stalled", Source: "engine", Causes: causes,
	}
}

func cause(kind, node string, conf float64) diagnose.Cause {
	return diagnose.Cause{Kind: kind, Entity: diagnose.Entity{"node": node}, Confidence: conf, Summary: node + " " + kind,
		Action: "cordon " + node, Evidence: []diagnose.Evidence{{Signal: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Summary: "1% of peers"}}}
}

func TestIncidentLifecycle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "incidents.json")
	tr, err := Open(Options{Path: path, ResolveAfter: time.Minute})
	require.NoError(t, err)
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const resend = time.Minute

	// First sight: opened, due at once, with the identity labels only.
	ch, err := tr.Observe(t0, wall, []Observation{stall()})
	require.NoError(t, err)
	require.Len(t, ch, 1)
	require.Equal(t, "opened", ch[0].What)
	due := tr.Due(wall, resend, "http://vigil:9700/")
	require.Len(t, due, 1)
	a := due[0]
	require.Equal(t, map[string]string{"alertname": "TrainingStall", "severity": "page", "symptom": "training_stall",
		"namespace": "ml-train", "workload": "llm-pretrain"}, a.Labels)
	require.Equal(t, wall, a.StartsAt)
	require.Equal(t, wall.Add(4*resend), a.EndsAt)
	require.Equal(t, "http://vigil:9700/incidents/"+a.ID, a.GeneratorURL, "the pager's link lands on the incident's page")
	require.Equal(t, "http://vigil:9700/incidents/"+a.ID, a.Annotations["incident_url"])
	require.Equal(t, "http://vigil:9700/api/v1/incidents/"+a.ID, a.Annotations["incident_api"], "and its JSON")
	require.Contains(t, a.Annotations["description"], "No probable cause yet")
	require.NoError(t, tr.MarkSent(wall, due))
	require.Empty(t, tr.Due(wall.Add(30*time.Second), resend, ""), "sent 30s ago")

	// The diagnosis arrives: a revision, due again at once, same labels.
	ch, err = tr.Observe(t0.Add(30*time.Second), wall.Add(time.Second), []Observation{stall(cause("nvlink_degraded", "gpu-node-06", 0.93))})
	require.NoError(t, err)
	require.Len(t, ch, 1)
	require.Equal(t, "rediagnosed", ch[0].What)
	due = tr.Due(wall.Add(2*time.Second), resend, "")
	require.Len(t, due, 1)
	require.Equal(t, a.Labels, due[0].Labels)
	require.Equal(t, "nvlink_degraded node=gpu-node-06", due[0].Annotations["cause"])
	require.Equal(t, "cordon gpu-node-06", due[0].Annotations["action"])
	require.Contains(t, due[0].Annotations["evidence"], "1% of peers")
	require.Equal(t, wall, due[0].StartsAt, "startsAt stays at the first page")
	require.NoError(t, tr.MarkSent(wall.Add(2*time.Second), due))

	// Same ranking with fresher confidence: no revision.
	ch, err = tr.Observe(t0.Add(60*time.Second), wall.Add(3*time.Second), []Observation{stall(cause("nvlink_degraded", "gpu-node-06", 0.95))})
	require.NoError(t, err)
	require.Empty(t, ch)
	require.Empty(t, tr.Due(wall.Add(4*time.Second), resend, ""))
	// Re-sent every interval.
	require.Len(t, tr.Due(wall.Add(62*time.Second), resend, ""), 1)

	// A restart keeps it, with its notification state.
	tr2, err := Open(Options{Path: path, ResolveAfter: time.Minute})
	require.NoError(t, err)
	list := tr2.List()
	require.Len(t, list, 1)
	require.Equal(t, 2, list[0].Revision)
	require.Equal(t, 2, list[0].SentRevision)
	require.Empty(t, tr2.Due(wall.Add(4*time.Second), resend, ""))

	// Unobserved for less than ResolveAfter: still firing; then resolved.
	ch, err = tr2.Observe(t0.Add(90*time.Second), wall.Add(5*time.Second), nil)
	require.NoError(t, err)
	require.Empty(t, ch)
	ch, err = tr2.Observe(t0.Add(120*time.Second), wall.Add(6*time.Second), nil)
	require.NoError(t, err)
	require.Len(t, ch, 1)
	require.Equal(t, "resolved", ch[0].What)
	due = tr2.Due(wall.Add(7*time.Second), resend, "")
	require.Len(t, due, 1)
	require.Equal(t, wall.Add(6*time.Second), due[0].EndsAt, "a resolve ends at the resolution")
	require.NoError(t, tr2.MarkSent(wall.Add(7*time.Second), due))
	require.Empty(t, tr2.Due(wall.Add(8*time.Second), resend, ""))
	require.Len(t, tr2.Due(wall.Add(7*time.Second+resend), resend, ""), 1, "resolutions are re-sent")
	require.Empty(t, tr2.Due(wall.Add(7*time.Second+ResolvedRetention), resend, ""), "for ResolvedRetention only")

	// It comes back: a new incident with the same identity, a new start.
	ch, err = tr2.Observe(t0.Add(10*time.Minute), wall.Add(time.Hour), []Observation{stall()})
	require.NoError(t, err)
	require.Equal(t, "opened", ch[0].What)
	due = tr2.Due(wall.Add(time.Hour), resend, "")
	require.Len(t, due, 1)
	require.Equal(t, a.Labels, due[0].Labels)
	require.Equal(t, wall.Add(time.Hour), due[0].StartsAt)
}

func TestNeverPagedIsNotResolved(t *testing.T) {
	tr, err := Open(Options{ResolveAfter: time.Minute})
	require.NoError(t, err)
	_, err = tr.Observe(t0, t0, []Observation{stall()})
	require.NoError(t, err)
	_, err = tr.Observe(t0.Add(time.Hour), t0, nil)
	require.NoError(t, err)
	require.Equal(t, StateResolved, tr.List()[0].State)
	require.Empty(t, tr.Due(t0, time.Minute, ""), "nothing was sent, nothing to resolve")
}

func TestDuplicateObservationsMerge(t *testing.T) {
	tr, err := Open(Options{})
	require.NoError(t, err)
	rule := stall()
	rule.Source, rule.Causes = "rule:x", nil
	ch, err := tr.Observe(t0, t0, []Observation{stall(cause("nvlink_degraded", "n6", 0.9)), rule})
	require.NoError(t, err)
	require.Len(t, ch, 1)
	require.Len(t, tr.List(), 1)
	require.Equal(t, "engine", tr.List()[0].Source)
	require.Len(t, tr.List()[0].Causes, 1)
}

func TestSeverityIsFixedAtOpening(t *testing.T) {
	tr, err := Open(Options{})
	require.NoError(t, err)
	o := stall()
	o.Severity = SeverityTicket
	_, err = tr.Observe(t0, t0, []Observation{o})
	require.NoError(t, err)
	_, err = tr.Observe(t0.Add(time.Minute), t0, []Observation{stall()})
	require.NoError(t, err)
	require.Equal(t, SeverityTicket, tr.List()[0].Severity)
}

func TestPrune(t *testing.T) {
	tr, err := Open(Options{ResolveAfter: time.Second, MaxResolved: 2, KeepResolved: time.Hour})
	require.NoError(t, err)
	for n := range 4 {
		o := stall()
		o.Entity = diagnose.Entity{"namespace": "ns", "workload": string(rune('a' + n))}
		at := t0.Add(time.Duration(n) * time.Minute)
		_, err := tr.Observe(at, at, []Observation{o})
		require.NoError(t, err)
	}
	_, err = tr.Observe(t0.Add(10*time.Minute), t0, nil)
	require.NoError(t, err)
	require.Len(t, tr.List(), 2)
	_, err = tr.Observe(t0.Add(3*time.Hour), t0, nil)
	require.NoError(t, err)
	require.Empty(t, tr.List())
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage":    "{not json",
		"version":    `{"version": 9, "incidents": []}`,
		"no id":      `{"version": 1, "incidents": [{"state": "firing"}]}`,
		"bad state":  `{"version": 1, "incidents": [{"id": "x", "state": "odd"}]}`,
		"resolved":   `{"version": 1, "incidents": [{"id": "x", "state": "resolved"}]}`,
		"null entry": `{"version": 1, "incidents": [null]}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "f.json")
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			_, err := Open(Options{Path: p})
			require.ErrorContains(t, err, "read incidents")
		})
	}
}

func TestAlertName(t *testing.T) {
	f := func(kind, want string) {
		t.Helper()
		require.Equal(t, want, AlertName(kind))
	}
	f("training_stall", "TrainingStall")
	f("slo_burn", "SLOBurn")
	f("ttft_high", "TTFTHigh")
	f("exporter_down", "ExporterDown")
	f("nvlink_degraded", "NVLinkDegraded")
}

func TestIDIsStable(t *testing.T) {
	a := ID("training_stall", diagnose.Entity{"namespace": "a", "workload": "b"})
	require.Equal(t, a, ID("training_stall", diagnose.Entity{"workload": "b", "namespace": "a"}))
	require.NotEqual(t, a, ID("training_stall", diagnose.Entity{"namespace": "a", "workload": "c"}))
	require.NotEqual(t, a, ID("slo_burn", diagnose.Entity{"namespace": "a", "workload": "b"}))
}
