package slo

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden and the expected errors in testdata/bad/*.err")

// golden compares got with a golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./internal/slo -update")
	require.Equal(t, string(want), string(got), "stale golden file %s: run go test ./internal/slo -update", path)
}

// TestParseBad reads each testdata/bad spec: every problem is reported with
// its file, line and field, as testdata/bad/NAME.err says.
func TestParseBad(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	for _, path := range specs {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			spec, err := ParseFile(path)
			require.Error(t, err)
			require.Nil(t, spec)
			require.ErrorIs(t, err, ErrInvalid)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, path, fe.File)
			golden(t, strings.TrimSuffix(path, ".yaml")+".err", []byte(err.Error()+"\n"))
		})
	}
}

// TestParseObjectiveLine is the example, exactly.
func TestParseObjectiveLine(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad", "objective-101.yaml"))
	require.NoError(t, err)
	_, err = Parse("slo.yaml", data)
	require.EqualError(t, err, "slo.yaml:12: slos[1].objective: 101 is not a percentage in (0, 100)")
}

func TestParseErrorsAreFieldErrors(t *testing.T) {
	_, err := ParseFile(filepath.Join("testdata", "bad", "reserved-label.yaml"))
	require.Error(t, err)
	errs := unjoinAll(err)
	require.Greater(t, len(errs), 5, "every problem is reported, not only the first")
	for _, e := range errs {
		var fe *FieldError
		require.True(t, errors.As(e, &fe), "%v", e)
		require.Positive(t, fe.Line, "%v", e)
		require.NotEmpty(t, fe.Field, "%v", e)
	}
}

func unjoinAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestParseMissingFile(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "none.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NotErrorIs(t, err, ErrInvalid)
}

// TestParseExample reads examples/slo.yaml, the documented spec.
func TestParseExample(t *testing.T) {
	spec, err := ParseFile(filepath.Join("..", "..", "examples", "slo.yaml"))
	require.NoError(t, err)
	var kinds []Kind
	for i := range spec.SLOs {
		kinds = append(kinds, spec.SLOs[i].Kind())
	}
	require.ElementsMatch(t, []Kind{KindLatency, KindRatio, KindGauge, KindGauge, KindPeer}, kinds)
	require.Len(t, spec.Composites, 1)
	// Scalars where lists go: rename model: model_name.
	require.Equal(t, []string{"model_name"}, spec.SLOs[0].SLI.Latency.Sources[1].Rename["model"])
	require.Empty(t, ValidateBuckets(spec, KnownBuckets()))
	_, err = Files(spec)
	require.NoError(t, err)
}

func TestPresetsValid(t *testing.T) {
	p := Presets()
	require.NoError(t, p.Validate())
	require.Empty(t, ValidateBuckets(p, KnownBuckets()))
	var names []string
	for _, s := range p.SLOs {
		names = append(names, s.Name)
	}
	require.ElementsMatch(t, []string{PresetInterTokenLatency, PresetTTFT, PresetRequestLatency, PresetTritonLatency,
		PresetQueueDepth, PresetModelAccuracy, PresetFeatureDrift, PresetGPUSMUtilisation, PresetTrainingJobSuccess,
		PresetNVLinkBandwidth}, names)
	itl := p.slo(PresetInterTokenLatency)
	var metrics []string
	for _, s := range itl.sources() {
		metrics = append(metrics, s.Metric)
	}
	require.Subset(t, metrics, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"})
	require.Equal(t, "vllm:inter_token_latency_seconds", metrics[0], "the current vLLM name first")
	sm := p.slo(PresetGPUSMUtilisation)
	require.Equal(t, SeverityTicket, sm.Severity, "an efficiency ticket, never a page")
	require.Equal(t, "DCGM_FI_PROF_SM_ACTIVE", sm.sources()[0].Metric)
	for _, src := range sm.sources() {
		require.NotEqual(t, "DCGM_FI_DEV_GPU_UTIL", src.Metric)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	f := func(fe FieldError, want string) {
		t.Helper()
		require.Equal(t, want, fe.Error())
	}
	f(FieldError{File: "slo.yaml", Line: 3, Field: "slos[0].name", Msg: "bad"}, "slo.yaml:3: slos[0].name: bad")
	f(FieldError{File: "slo.yaml", Msg: "empty"}, "slo.yaml: empty")
	f(FieldError{Field: "slos", Msg: "no SLOs"}, "slos: no SLOs")
	f(FieldError{Line: 7, Msg: "syntax"}, "7: syntax")
}
