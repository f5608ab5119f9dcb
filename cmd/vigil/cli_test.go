package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/envelope"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/slo"
)

// TestUnknownFlagNamesItsCommand: an unknown flag names the command it was
// given to and where its flags are listed; exit 2, one line.
func TestUnknownFlagNamesItsCommand(t *testing.T) {
	f := func(want string, args ...string) {
		t.Helper()
		r := runVigil(t, "", args...)
		requireUsage(t, r, want)
		require.Equal(t, "vigil: "+want+"\n", r.stderr)
	}
	f("diagnose: unknown flag: --foo (see 'vigil diagnose --help')", "diagnose", "--foo")
	f("rules generate: unknown flag: --spec (see 'vigil rules generate --help')", "rules", "generate", "--spec", "x")
	f("dashboards: flag needs an argument: --out (see 'vigil dashboards --help')", "dashboards", "--out")
	f("unknown flag: --frob (see 'vigil --help')", "--frob")
}

// TestEveryCommandHasExamples: every command's help has examples that run
// it.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return
		}
		require.NotEmpty(t, c.Example, "%s has no Example", c.CommandPath())
		require.Contains(t, c.Example, c.CommandPath(), "%s: its examples run it", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&env{}))
	r := runVigil(t, "", "incidents", "--help")
	require.NoError(t, r.err)
	require.Contains(t, r.stdout, "Examples:\n  vigil incidents\n")
}

// TestShellCompletion: cobra's completion command writes each shell's
// script, and the values of scenarios, suites, methods, formats and
// incident ids complete.
func TestShellCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "# bash completion V2 for vigil", "zsh": "#compdef vigil", "fish": "complete -c vigil"} {
		r := runVigil(t, "", "completion", shell)
		require.NoError(t, r.err, r.stderr)
		require.Contains(t, r.stdout, want, shell)
	}
	srv := fakeIncidents(t)
	f := func(want, notWant string, args ...string) {
		t.Helper()
		r := runVigil(t, "", append([]string{cobra.ShellCompRequestCmd}, args...)...)
		require.NoError(t, r.err, r.stderr)
		require.Contains(t, r.stdout, want+"\n", "%v", args)
		if notWant != "" {
			require.NotContains(t, r.stdout, notWant, "%v", args)
		}
		require.Contains(t, r.stdout, ":4\n", "no file names: ShellCompDirectiveNoFileComp")
	}
	f("nvlink_degraded/subtle", "healthy", "demo", "nvl")
	f("metric_anomaly/latency", "", "demo", "")
	f("gpu_xid_error/109", "nvlink", "simulate", "--scenario", "gpu_x")
	f("robust", "", "eval", "--suite", "")
	f("petshop", "", "eval", "--suite", "")
	f("wasserstein", "", "drift", "--method", "")
	f("prometheusrule", "", "rules", "generate", "--format", "")
	f("openmetrics", "", "import", "--format", "")
	f("resolved", "", "incidents", "--state", "")
	f("server-only", "", "simulate", "--spans", "")
	f("tenant", "", "cost", "--by", "t")
	f("warn", "", "--log-level", "")
	f("training_stall-1\tpage training_stall namespace=ml-train workload=llm-pretrain", "", "incidents", "--server", srv.URL, "")
	// A server that does not answer completes nothing, and says nothing.
	r := runVigil(t, "", cobra.ShellCompRequestCmd, "incidents", "--server", "http://127.0.0.1:1", "")
	require.NoError(t, r.err)
	require.Equal(t, ":4\n", r.stdout)
}

// TestColour: colour only on a terminal, and never with --no-color or a
// non-empty NO_COLOR.
func TestColour(t *testing.T) {
	f := func(terminal, noColor bool, noColorEnv string, want bool) {
		t.Helper()
		e := &env{noColor: noColor, terminal: func(any) bool { return terminal },
			environ: func(k string) string {
				if k == "NO_COLOR" {
					return noColorEnv
				}
				return ""
			}}
		require.Equal(t, want, e.colour(os.Stdout))
	}
	f(true, false, "", true)
	f(false, false, "", false)
	f(true, true, "", false)
	f(true, false, "1", false)
	f(true, false, "0", false) // any value but the empty one
	// --no-color is a global flag every command takes.
	for _, args := range [][]string{{"--no-color", "version"}, {"version", "--no-color"}, {"diagnose", "--no-color", "--help"}} {
		r := runVigil(t, "", args...)
		require.NoError(t, r.err, "%v: %s", args, r.stderr)
	}
	r := runVigil(t, "", "diagnose", "--help")
	require.Contains(t, r.stdout, "--no-color")
}

// anIncident is the incident fakeIncidents serves.
func anIncident() incident.Incident {
	at := time.Date(2026, 11, 12, 2, 47, 30, 0, time.UTC)
	since := at.Add(-30 * time.Second)
	return incident.Incident{
		ID: "training_stall-1", Kind: "training_stall", Severity: incident.SeverityPage, State: incident.StateFiring,
		Entity:  diagnose.Entity{"namespace": "ml-train", "workload": "llm-pretrain"},
		Summary: "ml-train/llm-pretrain stalled", Source: "diagnose",
		Since: at, OpenedAt: at.Add(30 * time.Second), LastSeen: at.Add(5 * time.Minute), Revision: 2,
		Causes: []diagnose.Cause{{Rank: 1, Kind: "nvlink_degraded", Entity: diagnose.Entity{"node": "gpu-node-06", "gpu": "3"},
			Confidence: 0.98, Since: &since, Summary: "gpu-node-06 NVLink degradation (XID 74)",
			Evidence: []diagnose.Evidence{{Signal: "DCGM_FI_DEV_XID_ERRORS", Query: "DCGM_FI_DEV_XID_ERRORS{Hostname=\"gpu-node-06\"}\n  > 0", Summary: "XID 74 on GPU 3"}},
			Action:   "drain gpu-node-06"}},
		History:  []incident.Revision{{At: at.Add(30 * time.Second), Headline: "gpu-node-06 NVLink degradation (XID 74)"}},
		StartsAt: at.Add(30 * time.Second), LastSent: at.Add(time.Minute), SentRevision: 2,
	}
}

// fakeIncidents answers /api/v1/incidents and /api/v1/incidents/{id} as
// Vigil's API does (its envelope), with one incident.
func fakeIncidents(t *testing.T) *httptest.Server {
	t.Helper()
	i := anIncident()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/incidents", func(w http.ResponseWriter, _ *http.Request) {
		envelope.WriteData(w, map[string]any{"incidents": []incident.Incident{i}})
	})
	mux.HandleFunc("GET /api/v1/incidents/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != i.ID {
			envelope.WriteError(w, http.StatusNotFound, "not_found", errors.New("no incident "+r.PathValue("id")))
			return
		}
		envelope.WriteData(w, i)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestIncidentsDescribe: `vigil incidents ID` shows one incident in full;
// --json prints it as one object; an unknown ID is bad input.
func TestIncidentsDescribe(t *testing.T) {
	srv := fakeIncidents(t)
	r := runVigil(t, "", "incidents", "training_stall-1", "--server", srv.URL)
	require.NoError(t, r.err, r.stderr)
	require.Empty(t, r.stderr)
	for _, want := range []string{
		"ID:        training_stall-1\n",
		"Kind:      training_stall\n",
		"Entity:    namespace=ml-train workload=llm-pretrain\n",
		"Severity:  page\n",
		"State:     firing\n",
		"Since:     2026-11-12 02:47:30 UTC\n",
		"Revision:  2\n",
		"Causes:\n  1. nvlink_degraded  gpu=3 node=gpu-node-06  confidence 0.98  since 2026-11-12 02:47:00 UTC\n     gpu-node-06 NVLink degradation (XID 74)\n",
		"     evidence: DCGM_FI_DEV_XID_ERRORS: XID 74 on GPU 3\n       query: DCGM_FI_DEV_XID_ERRORS{Hostname=\"gpu-node-06\"} > 0\n",
		"     action: drain gpu-node-06\n",
		"History:\n  2026-11-12 02:48:00 UTC  gpu-node-06 NVLink degradation (XID 74)\n",
		"Notifications:\n  Starts at: 2026-11-12 02:48:00 UTC\n  Last sent: 2026-11-12 02:48:30 UTC (revision 2)\n",
	} {
		require.Contains(t, r.stdout, want)
	}
	require.NotContains(t, r.stdout, "Resolved:")

	r = runVigil(t, "", "incidents", "training_stall-1", "--server", srv.URL, "--json")
	require.NoError(t, r.err, r.stderr)
	got := decodeOne[incident.Incident](t, r.stdout)
	require.Equal(t, "training_stall-1", got.ID)
	require.Equal(t, "nvlink_degraded", got.Causes[0].Kind)

	requireUsage(t, runVigil(t, "", "incidents", "nope", "--server", srv.URL), `has no incident "nope" (vigil incidents lists them)`)
	requireUsage(t, runVigil(t, "", "incidents", "training_stall-1", "--state", "firing", "--server", srv.URL), "--state lists incidents; it does not go with an ID")
	requireUsage(t, runVigil(t, "", "incidents", "a", "b"), "accepts at most 1 arg(s), received 2")
	r = runVigil(t, "", "incidents", "training_stall-1", "--server", "http://127.0.0.1:1")
	require.Equal(t, 1, r.code)
	requireOneLine(t, r, "incidents:")
}

// TestRulesGenerateObjectMeta: --namespace and --label k=v go into the
// PrometheusRule objects' metadata, which decode strictly; everything
// else is as internal/slo renders it.
func TestRulesGenerateObjectMeta(t *testing.T) {
	dir := t.TempDir()
	r := runVigil(t, "", "rules", "generate", "--format", "prometheusrule", "--namespace", "monitoring",
		"--label", "release=kube-prometheus-stack", "--label", "app.kubernetes.io/part-of=ml-platform", "--out", dir)
	require.NoError(t, r.err, r.stderr)
	files, err := slo.Files(slo.Presets())
	require.NoError(t, err)
	require.Len(t, strings.Fields(r.stdout), len(files))
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(dir, file.FileName(slo.FormatPrometheusRule)))
		require.NoError(t, err)
		var pr monitoringv1.PrometheusRule
		require.NoError(t, yaml.UnmarshalStrict(b, &pr), file.Name)
		require.Equal(t, "monitoring", pr.Namespace)
		require.Equal(t, map[string]string{"release": "kube-prometheus-stack", "app.kubernetes.io/part-of": "ml-platform",
			"app.kubernetes.io/managed-by": "vigil"}, pr.Labels, "a label given replaces Vigil's own of the same key")
		plain, err := slo.Render(file, slo.FormatPrometheusRule)
		require.NoError(t, err)
		got := string(b)
		for _, l := range []string{"  namespace: monitoring\n", "    release: kube-prometheus-stack\n"} {
			require.Equal(t, 1, strings.Count(got, l), file.Name)
			got = strings.Replace(got, l, "", 1)
		}
		got = strings.Replace(got, "part-of: ml-platform", "part-of: vigil", 1)
		require.Equal(t, string(plain), got, "%s: the rest as internal/slo renders it", file.Name)
	}
	f := func(want string, args ...string) {
		t.Helper()
		requireUsage(t, runVigil(t, "", append([]string{"rules", "generate", "--out", t.TempDir()}, args...)...), want)
	}
	f("--namespace and --label go with --format prometheusrule", "--namespace", "monitoring")
	f("--namespace and --label go with --format prometheusrule", "--format", "prometheus", "--label", "release=x")
	f(`--label "release" is not key=value`, "--format", "prometheusrule", "--label", "release")
	f(`--label "bad key=x": key:`, "--format", "prometheusrule", "--label", "bad key=x")
	f(`--label "release=not valid": value:`, "--format", "prometheusrule", "--label", "release=not valid")
	f("--label release is given twice", "--format", "prometheusrule", "--label", "release=a", "--label", "release=b")
	f(`--namespace "Monitoring":`, "--format", "prometheusrule", "--namespace", "Monitoring")
}
