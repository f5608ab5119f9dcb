package alert

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// These tests run against Debian's Alertmanager 0.25 and its amtool.

// amAlert is an alert as Alertmanager's API v2 (and amtool -o json) shows it.
type amAlert struct {
	Fingerprint string            `json:"fingerprint"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

func startAlertmanager(t *testing.T) *peertest.Alertmanager {
	t.Helper()
	for _, bin := range []string{"prometheus-alertmanager", "amtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (Debian package prometheus-alertmanager)", bin)
		}
	}
	return peertest.StartAlertmanager(t)
}

// activeAlerts returns the active alerts of /api/v2/alerts.
func activeAlerts(t *testing.T, am *peertest.Alertmanager) []amAlert {
	t.Helper()
	resp, err := http.Get(am.URL + "/api/v2/alerts?active=true&silenced=false&inhibited=false")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out []amAlert
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// amtoolAlerts returns what `amtool alert query` shows (active alerts).
func amtoolAlerts(t *testing.T, am *peertest.Alertmanager, matchers ...string) []amAlert {
	t.Helper()
	args := append([]string{"alert", "query", "--alertmanager.url=" + am.URL, "-o", "json"}, matchers...)
	out := peertest.Run(t, "amtool", args...)
	var alerts []amAlert
	require.NoError(t, json.Unmarshal([]byte(out), &alerts), out)
	return alerts
}

func amConfig(am *peertest.Alertmanager) Config {
	cfg := Default()
	cfg.Alertmanagers = []string{am.URL}
	return cfg
}

// waitOne waits until Alertmanager shows exactly one active alert that
// satisfies ok, and returns it.
func waitOne(t *testing.T, am *peertest.Alertmanager, ok func(amAlert) bool, msg string) amAlert {
	t.Helper()
	var got []amAlert
	eventually(t, func() bool {
		got = activeAlerts(t, am)
		return len(got) == 1 && got[0].Status.State == "active" && ok(got[0])
	}, "%s; Alertmanager shows %+v", msg, &got)
	return got[0]
}

func anyAlert(amAlert) bool { return true }

// TestAlertmanagerLifecycle sends an incident's alert, re-sends it, and
// resolves it: one active alert whose startsAt never moves, then none.
func TestAlertmanagerLifecycle(t *testing.T) {
	am := startAlertmanager(t)
	h := newHarness(t, amConfig(am))
	h.run(t)
	spec := stallSpec("first")
	spec.StartsAt = time.Now().Add(-time.Minute).Truncate(time.Millisecond) // Alertmanager keeps ms
	first := h.n.Alert(spec, time.Now())
	h.n.Send(first)

	got := waitOne(t, am, anyAlert, "the alert arrives")
	require.Equal(t, Fingerprint(first), got.Fingerprint)
	require.Equal(t, spec.Labels, got.Labels)
	require.True(t, spec.StartsAt.Equal(got.StartsAt), "startsAt %s, want %s", got.StartsAt, spec.StartsAt)
	require.True(t, got.EndsAt.After(time.Now()), "a firing alert ends in the future")
	viaAmtool := amtoolAlerts(t, am, "alertname=training_stall")
	require.Len(t, viaAmtool, 1, "amtool shows one alert")
	require.Equal(t, got.Fingerprint, viaAmtool[0].Fingerprint)

	firstEnds := got.EndsAt
	for range 3 { // the re-sends of an alert that keeps firing
		time.Sleep(5 * time.Millisecond)
		h.n.Send(h.n.Alert(spec, time.Now()))
	}
	got = waitOne(t, am, func(a amAlert) bool { return a.EndsAt.After(firstEnds) }, "re-sends move endsAt")
	require.Equal(t, Fingerprint(first), got.Fingerprint)
	require.True(t, spec.StartsAt.Equal(got.StartsAt), "startsAt stays put: %s, want %s", got.StartsAt, spec.StartsAt)

	spec.ResolvedAt = time.Now()
	h.n.Send(h.n.Alert(spec, time.Now()))
	eventually(t, func() bool { return len(activeAlerts(t, am)) == 0 }, "the resolve makes it inactive")
	require.Empty(t, amtoolAlerts(t, am))
	require.Equal(t, 5.0, h.metric(t, "vigil_notifications_sent_total", am.URL+"/api/v2/alerts"))
	require.Equal(t, 0.0, h.metric(t, "vigil_notifications_failed_total", am.URL+"/api/v2/alerts"))
}

// TestAlertmanagerLabelIdentity sends the same identity labels twice with
// other annotations (a re-diagnosis): one alert, the newest annotations.
func TestAlertmanagerLabelIdentity(t *testing.T) {
	am := startAlertmanager(t)
	h := newHarness(t, amConfig(am))
	h.run(t)
	spec := stallSpec("nvlink_degraded on gpu-node-06")
	spec.StartsAt = time.Now().Truncate(time.Millisecond)
	h.n.Send(h.n.Alert(spec, time.Now()))
	waitOne(t, am, anyAlert, "the first diagnosis arrives")

	spec.Annotations = map[string]string{"summary": "gpu_xid_error on gpu-node-06", "action": "drain gpu-node-06"}
	h.n.Send(h.n.Alert(spec, time.Now()))
	got := waitOne(t, am, func(a amAlert) bool { return a.Annotations["summary"] == "gpu_xid_error on gpu-node-06" },
		"the re-diagnosis replaces the annotations of the same alert")
	require.Equal(t, spec.Annotations, got.Annotations)
	require.Len(t, amtoolAlerts(t, am), 1)
}

// TestAlertmanagerRestart stops Alertmanager while an incident fires:
// sends fail and are counted, the queue stays bounded, nothing crashes,
// and the first re-send after the restart brings back exactly one alert
// with its original startsAt.
func TestAlertmanagerRestart(t *testing.T) {
	am := startAlertmanager(t)
	cfg := amConfig(am)
	cfg.QueueCapacity = 5
	h := newHarness(t, cfg)
	h.run(t)
	recv := am.URL + "/api/v2/alerts"
	spec := stallSpec("evidence from the cluster")
	spec.StartsAt = time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	h.n.Send(h.n.Alert(spec, time.Now()))
	waitOne(t, am, anyAlert, "the alert arrives")

	require.NoError(t, am.Stop())
	h.n.Send(h.n.Alert(spec, time.Now()))
	eventually(t, func() bool { return h.metric(t, "vigil_notifications_failed_total", recv) >= 1 }, "the failed send is counted")
	var burst []*Alert
	for i := range 20 {
		s := stallSpec("other")
		s.Labels["workload"] = string(rune('a' + i))
		burst = append(burst, h.n.Alert(s, time.Now()))
	}
	h.n.Send(burst...)
	require.LessOrEqual(t, h.metric(t, "vigil_notifications_queue_length", recv), 5.0, "the queue is bounded")
	eventually(t, func() bool {
		return h.metric(t, "vigil_notifications_dropped_total", recv) == 21 && h.metric(t, "vigil_notifications_queue_length", recv) == 0
	}, "every alert sent while it is down is dropped, by the full queue or the failed send")

	am.Restart(t)
	require.Empty(t, activeAlerts(t, am), "Alertmanager keeps no alerts across a restart")
	h.n.Send(h.n.Alert(spec, time.Now())) // the next re-send
	got := waitOne(t, am, anyAlert, "the re-send brings the alert back")
	require.Equal(t, spec.Labels, got.Labels)
	require.True(t, spec.StartsAt.Equal(got.StartsAt), "startsAt %s, want %s", got.StartsAt, spec.StartsAt)
	viaAmtool := amtoolAlerts(t, am, "alertname=training_stall")
	require.Len(t, viaAmtool, 1, "amtool shows exactly one active alert for the incident")
	require.Equal(t, got.Fingerprint, viaAmtool[0].Fingerprint)
	require.Equal(t, 6.0, h.metric(t, "vigil_notifications_failed_total", recv), "the re-send and the 5 queued alerts failed")
	require.Contains(t, h.logs.String(), "Error sending alerts")
	require.NotContains(t, h.logs.String(), "evidence from the cluster", "annotations are never logged")
}
