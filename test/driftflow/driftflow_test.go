package driftflow

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/slo"
)

// The models, one per way to Vigil.
const (
	modelPushgateway = "fraud-pgw"
	modelPush        = "fraud-push"
)

// featureDriftAlert returns the preset's FeatureDriftHigh rule as the
// generator writes it.
func featureDriftAlert(t *testing.T) rulefmt.Rule {
	t.Helper()
	groups, err := slo.Groups(slo.Presets())
	require.NoError(t, err)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "FeatureDriftHigh" {
				return r
			}
		}
	}
	t.Fatal("the SLO presets have no FeatureDriftHigh alert")
	return rulefmt.Rule{}
}

// vigilConfig has `vigil serve` scrape the Pushgateway every second with
// honor_labels, as users wire a Pushgateway, and evaluate every second.
func vigilConfig(t *testing.T, dir, pushgateway string) string {
	t.Helper()
	cfg := fmt.Sprintf(`storage:
  data_dir: %s
evaluation:
  interval: 1s
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: [%q]
`, filepath.Join(dir, "data"), pushgateway)
	path := filepath.Join(dir, "vigil.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// TestDriftFlow runs the drift flow through the Pushgateway and through
// Vigil's push endpoint into a running Vigil, then replays what Vigil
// stored in accelerated time (see the package comment).
func TestDriftFlow(t *testing.T) {
	if _, err := exec.LookPath("prometheus-pushgateway"); err != nil {
		t.Skip("prometheus-pushgateway is not installed (Debian package prometheus-pushgateway)")
	}
	bin := peertest.Vigil(t)
	dir := t.TempDir()
	base, stable, shifted := filepath.Join(dir, "baseline.csv"), filepath.Join(dir, "stable.csv"), filepath.Join(dir, "shifted.csv")
	writeSample(t, base, 20000, 1, 0)
	writeSample(t, stable, 20000, 2, 0)
	writeSample(t, shifted, 20000, 3, 1)

	pgw := peertest.StartPushgateway(t)
	v := peertest.StartVigil(t, "--config", vigilConfig(t, dir, pgw.Addr))
	waitFor(t, time.Minute, "Vigil scrapes the Pushgateway", func() bool {
		up := query(t, v.URL, `up{job="pushgateway"} == 1`)
		return len(up) == 1
	})
	targets := map[string]string{modelPushgateway: pgw.URL, modelPush: v.URL}
	models := []string{modelPushgateway, modelPush}

	// A run on an unshifted sample: every score under PSI's 0.1.
	before := map[string][]series{}
	for _, m := range models {
		scores := runDrift(t, bin, base, stable, targets[m], m)
		for f, s := range scores {
			require.Less(t, s, 0.1, "%s: unshifted %s", m, f)
		}
		before[m] = pushed(t, v.URL, m, scores)
	}

	// The run on the shifted sample.
	shiftAt := time.Now().Truncate(time.Second)
	after, want := map[string][]series{}, map[string]float64{}
	for _, m := range models {
		scores := runDrift(t, bin, base, shifted, targets[m], m)
		require.Greater(t, scores[featShifted], 0.25, "%s: the shifted feature is over the alert's threshold", m)
		for _, f := range featStable {
			require.Less(t, scores[f], 0.1, "%s: %s did not shift", m, f)
		}
		want[m] = scores[featShifted]
		after[m] = pushed(t, v.URL, m, scores)
	}

	t.Run("alert condition", func(t *testing.T) { alertCondition(t, v.URL, want) })
	t.Run("ticket", func(t *testing.T) { serverTicket(t, v.URL, models) })
	t.Run("diagnose", func(t *testing.T) { diagnoseFinding(t, bin, v.URL, want, shiftAt) })
	t.Run("accelerated", func(t *testing.T) {
		var b, a []series
		for _, m := range models {
			b, a = append(b, before[m]...), append(a, after[m]...)
		}
		accelerated(t, b, a, want)
	})
}

// alertCondition: the generated FeatureDriftHigh expression holds in Vigil
// for the shifted feature of each model and for nothing else, and the
// server's own evaluation has the alert pending (its 15 minutes are not up)
// for exactly those.
func alertCondition(t *testing.T, base string, want map[string]float64) {
	rule := featureDriftAlert(t)
	require.NotZero(t, rule.For, "the preset waits before it fires")
	key := func(l map[string]string) string { return l["model"] + "/" + l["feature"] }
	var wantKeys []string
	for m := range want {
		wantKeys = append(wantKeys, m+"/"+featShifted)
	}
	slices.Sort(wantKeys)
	// The recording rule behind the expression runs every second.
	var holds []series
	waitFor(t, time.Minute, "the alert's expression holds for the shifted features: "+rule.Expr, func() bool {
		holds = query(t, base, rule.Expr)
		return len(holds) == len(want)
	})
	var got []string
	for _, s := range holds {
		got = append(got, key(s.Labels))
		require.Equal(t, want[s.Labels["model"]], s.Value, "the score `vigil drift` pushed: %v", s.Labels)
	}
	slices.Sort(got)
	require.Equal(t, wantKeys, got)

	type alert struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	}
	var pending []string
	waitFor(t, 30*time.Second, "FeatureDriftHigh pending for the shifted features", func() bool {
		var data struct {
			Alerts []alert `json:"alerts"`
		}
		apiData(t, base, "/api/v1/alerts", &data)
		pending = pending[:0]
		for _, a := range data.Alerts {
			if a.Labels["alertname"] != rule.Alert {
				continue
			}
			require.Equal(t, "pending", a.State, "%s cannot fire before %s: %v", rule.Alert, rule.For, a.Labels)
			require.Equal(t, "ticket", a.Labels["severity"])
			pending = append(pending, key(a.Labels))
		}
		slices.Sort(pending)
		return slices.Equal(wantKeys, pending)
	})
}

// serverTicket: the server's continuous evaluation opens a model_drift
// ticket for each model.
func serverTicket(t *testing.T, base string, models []string) {
	type inc struct {
		Kind     string            `json:"kind"`
		Entity   map[string]string `json:"entity"`
		Severity string            `json:"severity"`
		State    string            `json:"state"`
	}
	var open []string
	waitFor(t, 2*time.Minute, "a model_drift ticket per model in /api/v1/incidents", func() bool {
		var data struct {
			Incidents []inc `json:"incidents"`
		}
		apiData(t, base, "/api/v1/incidents?state=firing", &data)
		open = open[:0]
		for _, i := range data.Incidents {
			if i.Kind == "model_drift" {
				require.Equal(t, "ticket", i.Severity, "drift with no symptom is a ticket")
				open = append(open, i.Entity["model"])
			}
		}
		slices.Sort(open)
		return slices.Equal(models, open)
	})
}

// diagnoseFinding: `vigil diagnose --server` reports a model_drift finding
// per model whose evidence names the feature, the method, the score and
// its onset.
func diagnoseFinding(t *testing.T, bin, base string, want map[string]float64, shiftAt time.Time) {
	type finding struct {
		Kind       string            `json:"kind"`
		Entity     map[string]string `json:"entity"`
		Confidence float64           `json:"confidence"`
		Since      *time.Time        `json:"since"`
		Evidence   []struct {
			Signal  string `json:"signal"`
			Query   string `json:"query"`
			Summary string `json:"summary"`
		} `json:"evidence"`
	}
	var rep struct {
		At       time.Time `json:"at"`
		Healthy  bool      `json:"healthy"`
		Findings []finding `json:"findings"`
	}
	drift := func() map[string]finding {
		out := map[string]finding{}
		for _, f := range rep.Findings {
			if f.Kind == "model_drift" {
				out[f.Entity["model"]] = f
			}
		}
		return out
	}
	// The finding needs the score over its threshold at two steps (30 s).
	waitFor(t, 2*time.Minute, "model_drift findings from vigil diagnose --server", func() bool {
		out, err := exec.Command(bin, "diagnose", "--server", base, "--json").Output()
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(out, &rep), string(out))
		return len(drift()) == len(want)
	})
	require.False(t, rep.Healthy)
	for m, score := range want {
		f := drift()[m]
		require.GreaterOrEqual(t, f.Confidence, 0.5, m)
		require.NotNil(t, f.Since, m)
		require.False(t, f.Since.Before(shiftAt), "%s: onset %s is before the shifted push at %s", m, f.Since, shiftAt)
		require.False(t, f.Since.After(rep.At), m)
		require.Len(t, f.Evidence, 1, "%s: only the shifted feature is evidence: %+v", m, f.Evidence)
		e := f.Evidence[0]
		require.Equal(t, "vigil_feature_drift", e.Signal)
		require.Equal(t, fmt.Sprintf(`vigil_feature_drift{model=%q, feature=%q, method="psi"}`, m, featShifted), e.Query)
		head := fmt.Sprintf("feature %s: psi %.3f (drift at 0.25) from ", featShifted, score)
		require.True(t, e.Summary == head+f.Since.UTC().Format(time.TimeOnly) || e.Summary == head+f.Since.Local().Format(time.TimeOnly),
			"%s: %q names the feature, the method, the score %.3f and the onset %s", m, e.Summary, score, f.Since)
	}
}
