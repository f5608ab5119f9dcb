package slo

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

func exampleSpec(t *testing.T) *Spec {
	t.Helper()
	spec, err := ParseFile(filepath.Join("..", "..", "examples", "slo.yaml"))
	require.NoError(t, err)
	return spec
}

// TestGolden renders the presets and the example spec in both formats:
// testdata/golden holds the expected files (go test -update rewrites them).
func TestGolden(t *testing.T) {
	for name, spec := range map[string]*Spec{"presets": Presets(), "example": exampleSpec(t)} {
		files, err := Files(spec)
		require.NoError(t, err)
		for _, format := range []Format{FormatPrometheus, FormatPrometheusRule} {
			for _, f := range files {
				b, err := Render(f, format)
				require.NoError(t, err)
				again, err := Render(f, format)
				require.NoError(t, err)
				require.Equal(t, b, again, "rendering is deterministic")
				golden(t, filepath.Join("testdata", "golden", name, string(format), f.FileName(format)), b)
			}
		}
	}
}

// TestRuleLabels checks the labels other parts rely on, on every rule of
// the presets and the example.
func TestRuleLabels(t *testing.T) {
	for name, spec := range map[string]*Spec{"presets": Presets(), "example": exampleSpec(t)} {
		t.Run(name, func(t *testing.T) {
			files, err := Files(spec)
			require.NoError(t, err)
			names := map[string]bool{}
			for _, s := range spec.SLOs {
				names[s.Name] = true
			}
			for _, c := range spec.Composites {
				names[c.Name] = true
			}
			var alerts int
			for _, f := range files {
				for _, g := range f.Groups {
					require.True(t, strings.HasPrefix(g.Name, f.Name), "group %s in file %s", g.Name, f.Name)
					for _, r := range g.Rules {
						if r.Record != "" {
							checkRecord(t, r, names)
							continue
						}
						alerts++
						checkAlert(t, r, names)
					}
				}
			}
			require.Positive(t, alerts)
			require.Equal(t, "vigil-watchdog", files[len(files)-1].Name)
		})
	}
}

func checkRecord(t *testing.T, r rulefmt.Rule, slos map[string]bool) {
	t.Helper()
	require.True(t, model.LegacyValidation.IsValidMetricName(r.Record), r.Record)
	require.Empty(t, r.Annotations)
	if !strings.HasPrefix(r.Record, "slo:") {
		require.Empty(t, r.Labels, "%s: a record of its own has no slo labels", r.Record)
		return
	}
	require.True(t, slos[r.Labels[LabelSLO]], "%s has slo=%q", r.Record, r.Labels[LabelSLO])
	if strings.HasPrefix(r.Record, recordErrorRatio) {
		require.Equal(t, "slo:sli_error:ratio_rate"+r.Labels[LabelWindow], r.Record)
	}
	if r.Record != recordValue {
		require.NotEmpty(t, r.Labels[LabelWindow], "%s has slo_window", r.Record)
	}
}

func checkAlert(t *testing.T, r rulefmt.Rule, slos map[string]bool) {
	t.Helper()
	require.NotEmpty(t, r.Annotations["summary"], r.Alert)
	require.NotEmpty(t, r.Annotations["description"], r.Alert)
	require.NotContains(t, r.Annotations, "runbook_url")
	if r.Alert == WatchdogAlert {
		require.Equal(t, map[string]string{LabelSeverity: "none"}, r.Labels)
		require.Equal(t, "vector(1)", r.Expr)
		return
	}
	require.Contains(t, []string{"page", "ticket"}, r.Labels[LabelSeverity], r.Alert)
	require.True(t, slos[r.Labels[LabelSLO]], "%s has slo=%q", r.Alert, r.Labels[LabelSLO])
	require.Contains(t, Symptoms(), r.Labels[LabelSymptom], r.Alert)
}

// TestRenderedPrometheusStrict parses every rendered rule file as Prometheus
// does (rulefmt, unknown fields rejected, templates and expressions checked).
func TestRenderedPrometheusStrict(t *testing.T) {
	files, err := Files(Presets())
	require.NoError(t, err)
	for _, f := range files {
		b, err := Render(f, FormatPrometheus)
		require.NoError(t, err)
		got, errs := rulefmt.Parse(b, false, model.LegacyValidation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		require.Empty(t, errs, f.Name)
		require.Equal(t, f.Groups, got.Groups, f.Name)
	}
}

func TestGroups(t *testing.T) {
	files, err := Files(Presets())
	require.NoError(t, err)
	groups, err := Groups(Presets())
	require.NoError(t, err)
	var want []string
	for _, f := range files {
		for _, g := range f.Groups {
			want = append(want, g.Name)
		}
	}
	var got []string
	for _, g := range groups {
		got = append(got, g.Name)
	}
	require.Equal(t, want, got)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "group names are unique")

	_, err = Groups(&Spec{})
	require.ErrorIs(t, err, ErrInvalid)
}

// TestPresetExpressions pins what the issue asks of the presets.
func TestPresetExpressions(t *testing.T) {
	files, err := Files(Presets())
	require.NoError(t, err)
	rules := map[string]rulefmt.Rule{}
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				key := r.Alert + r.Record + "/" + r.Labels[LabelSLO] + "/" + r.Labels[LabelSeverity]
				rules[key] = r
			}
		}
	}
	itl := rules["slo:sli_error:ratio_rate5m/llm-inter-token-latency/"].Expr
	require.Contains(t, itl, `vllm:inter_token_latency_seconds_bucket{le=~"0\\.1"}`)
	require.Contains(t, itl, `vllm:time_per_output_token_seconds_bucket{le=~"0\\.1"}`)
	require.Contains(t, itl, `sum by (namespace, model) (label_replace(`)
	ray := rules["slo:sli_error:ratio_rate5m/model-server-request-latency/"].Expr
	require.Contains(t, ray, `ray_serve_http_request_latency_ms_bucket{le=~"100|100\\.0"}`, "100 ms in a millisecond histogram")
	sm := rules["slo:sli:value/gpu-sm-utilisation/"].Expr
	require.Contains(t, sm, "DCGM_FI_PROF_SM_ACTIVE")
	require.Contains(t, sm, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
	require.NotContains(t, sm, "DCGM_FI_DEV_GPU_UTIL")
	require.Contains(t, rules["GpuSmUtilisationLow/gpu-sm-utilisation/ticket"].Expr, "< 0.7")
	require.Contains(t, rules["GpuSmUtilisationHigh/gpu-sm-utilisation/ticket"].Expr, "> 0.85")
	acc := rules["ModelAccuracyLow/model-accuracy/page"]
	require.Equal(t, `slo:sli:value{slo="model-accuracy"} < 0.95`, acc.Expr)
	require.Equal(t, model.Duration(30*60e9), acc.For, "a threshold alert with for")
	drift := rules["slo:sli:value/feature-drift/"].Expr
	require.Equal(t, `max by (model, feature) (last_over_time(vigil_feature_drift{method="psi"}[7d]))`, drift)
	queue := rules[QueueDepthRecord+"//"]
	require.Contains(t, queue.Expr, "sum by (namespace, model) (label_replace(vllm:num_requests_waiting,")
	nv := rules["NvlinkBandwidthBelowPeers/nvlink-bandwidth/page"].Expr
	require.Contains(t, nv, "quantile by (namespace) (0.5,")
	require.NotContains(t, rules["slo:sli:value/nvlink-bandwidth/"].Expr, "rate(", "NVLink bandwidth is a gauge")
	jobs := rules["slo:sli_error:ratio_rate1h/training-job-success/"].Expr
	require.Contains(t, jobs, `kube_job_failed{condition="true"}`)
	require.Contains(t, jobs, `kube_job_status_succeeded`)
	require.Equal(t, "job_failed", rules["TrainingJobSuccessErrorBudgetBurn/training-job-success/page"].Labels[LabelSymptom])
	comp := rules["InferenceQueueGrowing/inference-queue-growing/page"]
	require.Equal(t, "queue_growing", comp.Labels[LabelSymptom])
	require.Contains(t, comp.Expr, "deriv(vigil:inference_queue_depth:sum[15m]) > 0")
	require.Contains(t, comp.Expr, "and on (namespace, model)")
}

func TestLeRegexp(t *testing.T) {
	f := func(v float64, want string) {
		t.Helper()
		require.Equal(t, want, leRegexp(v))
	}
	f(0.1, `0\.1`)
	f(1, `1|1\.0`)
	f(2.5, `2\.5`)
	f(100, `100|100\.0`)
	f(1e6, `1000000|1000000\.0|1e\+06`)
	f(0.00001, `0\.00001|1e-05`)
}

func TestRenamed(t *testing.T) {
	f := func(rename map[string][]string, want string) {
		t.Helper()
		require.Equal(t, want, Source{Rename: rename}.renamed("m"))
	}
	f(nil, "m")
	f(map[string][]string{"model": {"model"}}, "m")
	f(map[string][]string{"model": {"model_name"}}, `label_replace(m, "model", "$1", "model_name", "(.+)")`)
	f(map[string][]string{"node": {"Hostname", "hostname"}},
		`label_replace(label_join(m, "vigil_rename_node", ";", "Hostname", "hostname"), "node", "$1", "vigil_rename_node", ";*([^;]+).*")`)
	f(map[string][]string{"node": {"host"}, "model": {"model_name"}},
		`label_replace(label_replace(m, "model", "$1", "model_name", "(.+)"), "node", "$1", "host", "(.+)")`)
}

// TestCheckExpr accepts what Prometheus 2.42 reads, nothing newer.
func TestCheckExpr(t *testing.T) {
	p := newParser()
	ok := func(expr string) {
		t.Helper()
		require.NoError(t, checkExpr(p, expr))
	}
	bad := func(expr, msg string) {
		t.Helper()
		err := checkExpr(p, expr)
		require.Error(t, err)
		require.Contains(t, err.Error(), msg)
	}
	ok(`histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`)
	ok(`last_over_time(x[7d]) and on (a) deriv(y[15m]) > 0 or vector(1)`)
	ok(`label_join(x, "t", ";", "a", "b")`)
	bad(`info(up)`, `unknown function with name "info"`)
	bad(`double_exponential_smoothing(x[5m], 0.5, 0.5)`, "unknown function")
	bad(`{"gen_ai.server.request.duration"}`, "needs quoting")
	bad(`x{"service.name"="a"}`, "needs quoting")
	bad(`sum by ("service.name") (x)`, "needs quoting")
	bad(`limitk(2, x)`, "")
	bad(`sum(rate(x[5m])`, "unclosed")
}

// TestSourcesAlternatives: several sources are joined with or, a single
// source is not wrapped.
func TestSourcesAlternatives(t *testing.T) {
	s := &SLO{Name: "q", By: []string{"namespace"}, SLI: SLI{Gauge: &GaugeSLI{Metric: "a", Below: ptr(1.0)}}}
	g := generator{spec: &Spec{SLOs: []SLO{*s}}, p: newParser()}
	require.Equal(t, "max by (namespace) (a)", g.valueRule(s).Expr)
	s.SLI.Gauge = &GaugeSLI{Sources: []Source{{Metric: "a"}, {Metric: "b", Matchers: `x="y"`, Scale: 1e-3}}, Aggregate: "sum", Function: "avg", Over: hour, Below: ptr(1.0)}
	require.Equal(t, "(\n  sum by (namespace) (avg_over_time(a[1h]))\n)\nor\n(\n  sum by (namespace) (avg_over_time(b{x=\"y\"}[1h])) * 0.001\n)", g.valueRule(s).Expr)
}
