package rulebench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/slo"
	"github.com/vigil-obs/vigil/internal/store"
)

// absentPresets are the presets whose vocabularies the data set lacks on
// purpose (Triton; KServe and Ray Serve): their rules evaluate to nothing
// on both sides, as they would on a vLLM-only cluster.
var absentPresets = []string{slo.PresetRequestLatency, slo.PresetTritonLatency}

// quickEnd is the end of the quick data set.
var quickEnd = time.Date(2026, 11, 12, 12, 0, 0, 0, time.UTC)

// openQuick writes the quick data set, reads it back as `vigil import`
// does and opens a store on it.
func openQuick(t *testing.T) (*dataset, *fileimport.TempStore) {
	t.Helper()
	d := newDataset(quickShape, quickEnd)
	var buf bytes.Buffer
	st, err := d.write(&buf)
	require.NoError(t, err)
	f, err := fileimport.Read("quick.om", bytes.NewReader(buf.Bytes()), fileimport.DefaultOptions(quickEnd))
	require.NoError(t, err)
	require.Equal(t, fileimport.FormatOpenMetrics, f.Format)
	require.Equal(t, st.series, f.Series, "series the writer counted and the reader found")
	require.Equal(t, st.samples, f.Samples)
	require.Zero(t, f.Duplicates)
	require.Equal(t, quickEnd.UnixMilli(), f.MaxT, "the newest scrape is at the end")
	ts, err := fileimport.OpenTemp(t.Context(), []*fileimport.File{f}, func() time.Time { return quickEnd }, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	return d, ts
}

// query evaluates an instant query at quickEnd.
func query(t *testing.T, s store.Store, q string) promql.Vector {
	t.Helper()
	v, _, err := store.Query(t.Context(), s, q, quickEnd)
	require.NoError(t, err, q)
	vec, ok := v.(promql.Vector)
	require.True(t, ok, "%s: %T", q, v)
	return vec
}

// TestDataSetFeedsPresets checks, on a small data set of the same shape
// as the benchmark's, that the data feeds every preset it is meant to: the
// store holds metrics for every SLO but the vocabularies left out, each
// SLO's first recording rule gives series (and nothing for those left
// out), the labels come out as the presets' canonical keys, and the
// injected faults read as faults.
func TestDataSetFeedsPresets(t *testing.T) {
	d, ts := openQuick(t)
	spec := slo.Presets()
	warnings, err := slo.CheckMetrics(t.Context(), spec, slo.StoreLookup(ts, d.start, d.end))
	require.NoError(t, err)
	var missing []string
	for _, w := range warnings {
		missing = append(missing, w.SLO)
	}
	require.ElementsMatch(t, absentPresets, missing, "SLOs without data: %v", warnings)

	files, err := slo.Files(spec)
	require.NoError(t, err)
	for _, f := range files {
		if f.Groups[0].Rules[0].Record == "" {
			continue // the composite and the watchdog: alerts over recorded series
		}
		t.Run(f.Name, func(t *testing.T) {
			// The SLI group's rules read the data; at least one of them
			// (say the 1h error ratio, when no Job finished in the last
			// 5m) gives series.
			series := 0
			for _, r := range f.Groups[0].Rules {
				series += len(query(t, ts, r.Expr))
			}
			for _, name := range absentPresets {
				if f.Name == "vigil-slo-"+name {
					require.Zero(t, series)
					return
				}
			}
			require.NotZero(t, series, "%s: no rule of %s gives series", f.Name, f.Groups[0].Name)
		})
	}

	// The labels the presets group by come out of the exporters' labels.
	nvlink := query(t, ts, files[slices.IndexFunc(files, func(f slo.File) bool { return f.Name == "vigil-slo-nvlink-bandwidth" })].Groups[0].Rules[0].Expr)
	degraded := 0
	for _, s := range nvlink {
		if s.Metric.Get("node") == hostname(d.degradedNode()) && s.Metric.Get("gpu") == "3" {
			degraded++
			require.Equal(t, "ml-train", s.Metric.Get("namespace"), "the pod's namespace, not the exporter's")
			require.Less(t, s.F, 1000.0, "the degraded GPU moves 1%% of its peers' bandwidth")
		}
	}
	require.Equal(t, 1, degraded)

	// The TTFT fault burns; a model without a TTFT or queue fault does not.
	burning, healthy := d.models[faultTTFT%len(d.models)], d.models[0]
	for _, c := range []struct {
		m        modelInfo
		min, max float64
	}{{burning, 0.5, 1}, {healthy, 0, 0.05}} {
		vec := query(t, ts, `1 - sum(rate(vllm:time_to_first_token_seconds_bucket{le="1.0", model_name="`+c.m.name+`"}[5m]))
			/ sum(rate(vllm:time_to_first_token_seconds_count{model_name="`+c.m.name+`"}[5m]))`)
		require.Len(t, vec, 1)
		require.True(t, vec[0].F >= c.min && vec[0].F <= c.max, "%s: TTFT error ratio %v", c.m.name, vec[0].F)
	}

	// Jobs fail in research only.
	failed := query(t, ts, `count by (exported_namespace) (kube_job_failed{condition="true"} == 1)`)
	require.Len(t, failed, 1)
	require.Equal(t, failingNS, failed[0].Metric.Get("exported_namespace"))
}

// TestRuleFilesLoadInPromtool checks that the rule files Prometheus is
// given (what `vigil rules generate` writes) pass promtool's check and
// that every expression parses.
func TestRuleFilesLoadInPromtool(t *testing.T) {
	files, err := slo.Files(slo.Presets())
	require.NoError(t, err)
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		data, err := slo.Render(f, slo.FormatPrometheus)
		require.NoError(t, err)
		p := filepath.Join(dir, f.FileName(slo.FormatPrometheus))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		paths = append(paths, p)
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				_, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
				require.NoError(t, err, "%s: %s", g.Name, r.Expr)
			}
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (make deps installs it)")
	}
	out, err := exec.CommandContext(t.Context(), promtool, append([]string{"check", "rules"}, paths...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS")
}
