package page

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/notifier"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/alert"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/watch"
)

// amAlert is an alert as Alertmanager's API v2 (and amtool -o json) shows it.
type amAlert struct {
	Fingerprint string            `json:"fingerprint"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
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

// active returns Alertmanager's active alerts (nil when it is down).
func active(am *peertest.Alertmanager) []amAlert {
	resp, err := http.Get(am.URL + "/api/v2/alerts?active=true&silenced=false&inhibited=false")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out []amAlert
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return nil
	}
	return out
}

// amtool returns what `amtool alert query` shows for the matchers.
func amtool(t *testing.T, am *peertest.Alertmanager, matchers ...string) []amAlert {
	t.Helper()
	out := peertest.Run(t, "amtool", append([]string{"alert", "query", "--alertmanager.url=" + am.URL, "-o", "json"}, matchers...)...)
	var alerts []amAlert
	require.NoError(t, json.Unmarshal([]byte(out), &alerts), out)
	return alerts
}

// recorder forwards to the notifier and remembers what each cycle sent.
type recorder struct {
	next watch.Sender
	mu   sync.Mutex
	sent []*notifier.Alert
}

func (r *recorder) Send(alerts ...*notifier.Alert) {
	r.mu.Lock()
	for _, a := range alerts {
		c := *a
		r.sent = append(r.sent, &c)
	}
	r.mu.Unlock()
	r.next.Send(alerts...)
}

func (r *recorder) take() []*notifier.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

// vigil is the continuous path of `vigil serve` over one store: incidents
// kept in a file, the watcher, and a notifier to Alertmanager.
type vigil struct {
	w    *watch.Watcher
	tr   *incident.Tracker
	rec  *recorder
	stop func()
}

func startVigil(t *testing.T, st *store.Embedded, dir string, am *peertest.Alertmanager, resend time.Duration) *vigil {
	t.Helper()
	eng, err := diagnose.New(diagnose.Options{})
	require.NoError(t, err)
	tr, err := incident.Open(incident.Options{Path: filepath.Join(dir, "incidents.json")})
	require.NoError(t, err)
	cfg := alert.Default()
	cfg.Alertmanagers = []string{am.URL}
	cfg.Timeout = 2e9
	n, err := alert.New(cfg, nil, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Run(ctx)
	}()
	rec := &recorder{next: n}
	w, err := watch.New(watch.Options{Source: st, Engine: eng, Tracker: tr, Sender: rec, ExternalURL: "http://vigil.test:9700", ResendInterval: resend})
	require.NoError(t, err)
	v := &vigil{w: w, tr: tr, rec: rec, stop: func() { cancel(); <-done }}
	t.Cleanup(v.stop)
	return v
}

// delivered waits (up to 5 s of wall time, simulated time standing still)
// until every alert sent is in Alertmanager with the annotations sent.
func delivered(am *peertest.Alertmanager, sent []*notifier.Alert) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := map[string]string{}
		for _, a := range active(am) {
			got[labelKey(a.Labels)] = a.Annotations["revision"] + "|" + a.Annotations["cause"]
		}
		ok := true
		for _, s := range sent {
			if !s.EndsAt.IsZero() && !s.EndsAt.After(time.Now()) {
				continue // a resolution: not active any more
			}
			if got[labelKey(s.Labels.Map())] != s.Annotations.Get("revision")+"|"+s.Annotations.Get("cause") {
				ok = false
			}
		}
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func labelKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// stream simulates scenario (seed, d) into a fresh store and calls cycle
// every 30 s of simulated time after a 10-minute warm-up.
func stream(t *testing.T, scenario string, seed uint64, d time.Duration, setup func(st *store.Embedded, truth []sim.Fault), cycle func(ctx context.Context, at time.Time)) {
	t.Helper()
	sc, err := sim.ParseScenario(scenario)
	require.NoError(t, err)
	s, err := sim.New(sim.Config{Seed: seed, Duration: d}, sc)
	require.NoError(t, err)
	clock := sim.NewClock(s.Config().Start)
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.MaxExemplars = 0
	st, err := store.OpenEmbedded(cfg, clock.Now, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	setup(st, s.Truth())
	start, next := s.Config().Start, time.Time{}
	err = s.Run(t.Context(), st, sim.RunOptions{Clock: clock, OnScrape: func(ctx context.Context, r sim.Scrape) error {
		if r.At.Sub(start) < 10*time.Minute || r.At.Before(next) {
			return nil
		}
		next = r.At.Add(30 * time.Second)
		cycle(ctx, r.At)
		return nil
	}})
	require.NoError(t, err)
}

// causeOf is the cause annotation that names a fault.
func causeOf(f sim.Fault) string {
	return incident.CauseOf(diagnose.Cause{Kind: f.Kind, Entity: diagnose.Entity(f.Entity)})
}

// hardware are the GPU hardware scenarios of DESIGN.md's first layer.
var hardware = []string{"nvlink_degraded", "gpu_xid_error", "gpu_lost", "gpu_thermal_throttle",
	"gpu_power_throttle", "gpu_memory_errors", "pcie_degraded"}

// TestTimeToPage streams each hardware scenario with a real Alertmanager
// and measures, in simulated time after the onset, when Alertmanager
// first holds an alert whose rank-1 cause names the fault (a page or a
// ticket), and when it first holds a page that does.
func TestTimeToPage(t *testing.T) {
	am := startAlertmanager(t)
	type row struct {
		scenario      string
		alert, page   time.Duration
		gotA, gotPage bool
	}
	var rows []row
	for _, scenario := range hardware {
		t.Run(scenario, func(t *testing.T) {
			var v *vigil
			r := row{scenario: scenario}
			var onset time.Time
			var want string
			stream(t, scenario, 1, 25*time.Minute, func(st *store.Embedded, truth []sim.Fault) {
				require.Len(t, truth, 1)
				onset, want = truth[0].Onset, causeOf(truth[0])
				v = startVigil(t, st, t.TempDir(), am, time.Minute)
			}, func(ctx context.Context, at time.Time) {
				require.NoError(t, v.w.Cycle(ctx, at))
				sent := v.rec.take()
				if len(sent) == 0 {
					return
				}
				require.True(t, delivered(am, sent), "alerts sent at %s not in Alertmanager", at)
				for _, a := range active(am) {
					if a.Annotations["cause"] != want || at.Before(onset) {
						continue
					}
					if !r.gotA {
						r.alert, r.gotA = at.Sub(onset), true
					}
					if a.Labels["severity"] == incident.SeverityPage && !r.gotPage {
						r.page, r.gotPage = at.Sub(onset), true
					}
				}
			})
			require.True(t, r.gotA, "no alert in Alertmanager named %s", want)
			rows = append(rows, r)
			v.stop()
		})
	}
	var alerts, pages []time.Duration
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %12s %12s\n", "scenario", "first alert", "first page")
	for _, r := range rows {
		page := "no page"
		if r.gotPage {
			page = r.page.String()
			pages = append(pages, r.page)
		}
		alerts = append(alerts, r.alert)
		fmt.Fprintf(&b, "%-22s %12s %12s\n", r.scenario, r.alert, page)
	}
	t.Logf("time from onset to Alertmanager holding the right rank-1 cause (simulated time):\n%s", b.String())
	medA, worstA := medianWorst(alerts)
	medP, worstP := medianWorst(pages)
	t.Logf("any alert: median %s worst %s; pages (%d of %d scenarios page): median %s worst %s", medA, worstA, len(pages), len(rows), medP, worstP)
	require.LessOrEqual(t, medA, 90*time.Second)
	require.LessOrEqual(t, worstA, 120*time.Second)
}

func medianWorst(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// TestOneAlertThroughRestarts pages for the NVLink scenario, then stops
// Alertmanager, restarts Vigil (incidents from its file) while it is down,
// and starts Alertmanager again: amtool shows exactly one active alert for
// the incident, with its first startsAt, once Alertmanager is back.
func TestOneAlertThroughRestarts(t *testing.T) {
	am := startAlertmanager(t)
	const resend = 500 * time.Millisecond // wall clock: cycles are fast here
	var v *vigil
	var st *store.Embedded
	dir := t.TempDir()
	var want string
	var paged time.Time
	var first amAlert
	phase := 0
	cyclesDown := 0
	stream(t, "nvlink_degraded", 1, 30*time.Minute, func(s *store.Embedded, truth []sim.Fault) {
		st, want = s, causeOf(truth[0])
		v = startVigil(t, st, dir, am, resend)
	}, func(ctx context.Context, at time.Time) {
		require.NoError(t, v.w.Cycle(ctx, at))
		sent := v.rec.take()
		switch phase {
		case 0: // until the page with the right cause is in Alertmanager
			if len(sent) == 0 || !delivered(am, sent) {
				return
			}
			got := amtool(t, am, "alertname=TrainingStall")
			if len(got) == 1 && got[0].Annotations["cause"] == want {
				first, paged, phase = got[0], at, 1
				require.NoError(t, am.Stop())
			}
		case 1: // Alertmanager down: sends fail; then Vigil restarts
			cyclesDown++
			if cyclesDown < 3 {
				time.Sleep(resend) // let re-sends come due and fail
				return
			}
			v.stop()
			v = startVigil(t, st, dir, am, resend)
			am.Restart(t)
			phase = 2
		case 2: // back: the next re-send brings it back, once
			time.Sleep(resend)
			phase = 3
		}
	})
	require.False(t, paged.IsZero(), "never paged with %s", want)
	require.Equal(t, 3, phase, "the run ended before the restarts were done")
	var got []amAlert
	deadline := time.Now().Add(15 * time.Second)
	for {
		got = amtool(t, am, "alertname=TrainingStall")
		if len(got) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Len(t, got, 1, "amtool shows %+v", got)
	require.Equal(t, first.Fingerprint, got[0].Fingerprint, "the same identity")
	require.True(t, first.StartsAt.Equal(got[0].StartsAt), "startsAt kept: %s then %s", first.StartsAt, got[0].StartsAt)
	require.Equal(t, want, got[0].Annotations["cause"])
	all := amtool(t, am)
	pages := 0
	for _, a := range all {
		if a.Labels["severity"] == incident.SeverityPage {
			pages++
		}
	}
	require.Equal(t, 1, pages, "one page in Alertmanager: %+v", all)
}
