package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/store"
)

// driftRow is one row of the Parquet fixtures.
type driftRow struct {
	Latency float64  `parquet:"latency"`
	Tokens  int64    `parquet:"tokens"`
	Region  string   `parquet:"region"`
	Score   *float64 `parquet:"score,optional"`
}

func writeParquet(t *testing.T, path string, rows []driftRow) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[driftRow](f, parquet.MaxRowsPerRowGroup(7))
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
}

func driftRows(n int, shift float64) []driftRow {
	rows := make([]driftRow, n)
	for i := range rows {
		s := float64(i%5) + shift
		rows[i] = driftRow{Latency: float64(i%17) + shift, Tokens: int64(i % 9), Region: []string{"eu", "us", "ap"}[i%3]}
		if i%4 != 0 {
			rows[i].Score = &s
		}
	}
	return rows
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// driftJSON is `vigil drift --json`'s object.
type driftJSON struct {
	Features []map[string]any `json:"features"`
	Drifted  int              `json:"drifted"`
	Total    int              `json:"total"`
}

func decodeDrift(t *testing.T, r result) driftJSON {
	t.Helper()
	require.NoError(t, r.err, r.stderr)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var out driftJSON
	require.NoError(t, dec.Decode(&out))
	require.False(t, dec.More(), "exactly one JSON object on stdout")
	return out
}

func TestDriftCSV(t *testing.T) {
	dir := t.TempDir()
	ref := writeFile(t, dir, "ref.csv", "x,color,id\n3,red,1\n2,blue,2\n2,blue,3\n")
	cur := writeFile(t, dir, "cur.csv", "x,color\n1,red\n2,red\n3,\n")
	out := decodeDrift(t, runVigil(t, "", "drift", "--baseline", ref, "--current", cur, "--categorical", "x", "--method", "psi", "--json"))
	require.Equal(t, 2, out.Total)
	x := out.Features[0]
	require.Equal(t, "x", x["feature"])
	require.Equal(t, "psi", x["method"])
	require.InDelta(t, 2.93, x["score"], 0.01)
	require.Equal(t, true, x["drift"])
	require.NotContains(t, x, "p_value", "psi has no p-value")
	c := out.Features[1]
	require.Equal(t, "color", c["feature"])
	require.EqualValues(t, 1, c["missing_current"])
	require.EqualValues(t, 3, c["reference_rows"])
	for _, k := range []string{"threshold", "reference_rows", "current_rows", "missing_reference", "missing_current"} {
		require.Contains(t, x, k)
	}

	r := runVigil(t, "", "drift", "--baseline", ref, "--current", cur, "--features", "x", "--method", "ks")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stdout, "FEATURE")
	require.Regexp(t, `x\s+numeric\s+ks\s+0\.3333\s+1\s+0\.05\s+no`, r.stdout)
	require.Contains(t, r.stdout, "0 of 1 features drifted\n")
	require.Empty(t, r.stderr)

	// Gzip-compressed CSV is found by its magic bytes.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte("x,color\n1,red\n2,red\n3,\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	curGz := writeFile(t, dir, "cur.csv.gz", gz.String())
	outGz := decodeDrift(t, runVigil(t, "", "drift", "--baseline", ref, "--current", curGz, "--categorical", "x", "--method", "psi", "--json"))
	require.Equal(t, out, outGz)
}

func TestDriftParquet(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.parquet")
	writeParquet(t, ref, driftRows(2000, 0))
	cur := filepath.Join(dir, "cur.bin") // found by its PAR1 magic bytes
	writeParquet(t, cur, driftRows(1500, 4))
	out := decodeDrift(t, runVigil(t, "", "drift", "--baseline", ref, "--current", cur, "--json"))
	require.Equal(t, 4, out.Total)
	byName := map[string]map[string]any{}
	for _, f := range out.Features {
		byName[f["feature"].(string)] = f
	}
	require.Equal(t, "wasserstein", byName["latency"]["method"], "numeric above 1000 rows")
	require.Equal(t, true, byName["latency"]["drift"])
	require.Equal(t, "js", byName["region"]["method"], "categorical above 1000 rows")
	require.Equal(t, "categorical", byName["region"]["type"])
	require.Equal(t, false, byName["region"]["drift"])
	require.Equal(t, "wasserstein", byName["tokens"]["method"], "9 distinct values: numeric")
	require.Equal(t, false, byName["tokens"]["drift"])
	require.EqualValues(t, 500, byName["score"]["missing_reference"], "Parquet nulls are missing values")
	require.EqualValues(t, 375, byName["score"]["missing_current"])
	require.EqualValues(t, 2, out.Drifted)

	// The same as CSV gives the same scores.
	csvOf := func(rows []driftRow) string {
		var b strings.Builder
		b.WriteString("latency,tokens,region,score\n")
		for _, r := range rows {
			s := ""
			if r.Score != nil {
				s = fmt.Sprint(*r.Score)
			}
			fmt.Fprintf(&b, "%v,%v,%s,%s\n", r.Latency, r.Tokens, r.Region, s)
		}
		return b.String()
	}
	refCSV := writeFile(t, dir, "ref.csv", csvOf(driftRows(2000, 0)))
	curCSV := writeFile(t, dir, "cur.csv", csvOf(driftRows(1500, 4)))
	out2 := decodeDrift(t, runVigil(t, "", "drift", "--baseline", refCSV, "--current", curCSV, "--json"))
	for i := range out.Features {
		require.InDelta(t, out.Features[i]["score"], out2.Features[i]["score"], 1e-12, out.Features[i]["feature"])
	}
}

func TestDriftBadInput(t *testing.T) {
	dir := t.TempDir()
	ref := writeFile(t, dir, "ref.csv", "x,c\n1,a\n2,b\n")
	f := func(name, contains string, args ...string) {
		t.Run(name, func(t *testing.T) {
			requireUsage(t, runVigil(t, "", append([]string{"drift"}, args...)...), contains)
		})
	}
	f("no baseline", "drift: --baseline FILE is required", "--current", ref)
	f("no current", "drift: --current FILE is required", "--baseline", ref)
	f("unknown method", `drift: --method: unknown method "tvd"`, "--baseline", ref, "--current", ref, "--method", "tvd")
	f("missing file", "no such file or directory", "--baseline", ref, "--current", filepath.Join(dir, "nope.csv"))
	f("schema mismatch", `drift: feature "c" is not a column of the current file`, "--baseline", ref, "--current", writeFile(t, dir, "only-x.csv", "x\n1\n"), "--features", "x,c")
	f("empty file", "drift: current: read", "--baseline", ref, "--current", writeFile(t, dir, "empty.csv", ""))
	f("no rows", "drift: current: no rows", "--baseline", ref, "--current", writeFile(t, dir, "head.csv", "x,c\n"))
	f("all NaN", `feature "x" has no values (all missing)`, "--baseline", writeFile(t, dir, "nan.csv", "x\nNaN\n\"\"\n"), "--current", ref)
	f("non-numeric", `row 2: feature "x": value "oops" is not a number`, "--baseline", ref, "--current", writeFile(t, dir, "oops.csv", "x,c\n1,a\noops,b\n"))
	f("ks on categorical", "method ks needs numbers", "--baseline", ref, "--current", ref, "--features", "c", "--method", "ks")
	f("bad bins", `unknown bin rule "scott"`, "--baseline", ref, "--current", ref, "--bins", "scott")
	f("bad parquet", "parquet", "--baseline", writeFile(t, dir, "bad.parquet", "PAR1 not really"), "--current", ref)
}

// TestDriftPush: --push sends the scores as vigil_feature_drift gauges to
// Vigil's Pushgateway-compatible endpoint, where they are stored with the
// job and model of the group; --push without --model is bad usage.
func TestDriftPush(t *testing.T) {
	dir := t.TempDir()
	ref := writeFile(t, dir, "ref.csv", "x,color\n3,red\n2,blue\n2,blue\n")
	cur := writeFile(t, dir, "cur.csv", "x,color\n1,red\n2,red\n3,red\n")

	now := time.Now()
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(filepath.Join(dir, "data")), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	defer st.Close()
	h, err := push.New(push.Options{Appendable: st, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	r := runVigil(t, "", "drift", "--baseline", ref, "--current", cur, "--categorical", "x", "--method", "psi",
		"--push", srv.URL, "--model", "fraud-v2")
	require.NoError(t, r.err, r.stderr)
	res, _, err := store.Query(t.Context(), st, `vigil_feature_drift`, now)
	require.NoError(t, err)
	vec, ok := res.(promql.Vector)
	require.True(t, ok)
	require.Len(t, vec, 2)
	for _, s := range vec {
		require.Equal(t, "vigil-drift", s.Metric.Get("job"))
		require.Equal(t, "fraud-v2", s.Metric.Get("model"))
		require.Equal(t, "psi", s.Metric.Get("method"))
		if s.Metric.Get("feature") == "x" {
			require.InDelta(t, 2.93, s.F, 0.01)
		}
	}
	requireUsage(t, runVigil(t, "", "drift", "--baseline", ref, "--current", cur, "--push", srv.URL), "--push needs --model")
}

// promptHistogram writes 90 minutes of a prompt-length histogram for two
// models at 15 s; model "a"'s prompts grow in the last 15 minutes.
func promptHistogram(t *testing.T, dir string) (string, time.Time) {
	t.Helper()
	start := time.Date(2026, 11, 12, 1, 0, 0, 0, time.UTC)
	end := start.Add(90 * time.Minute)
	les := []string{"128", "512", "2048", "+Inf"}
	var b strings.Builder
	b.WriteString("# TYPE vllm:request_prompt_tokens histogram\n")
	type key struct{ model, le string }
	cum := map[key]float64{}
	for ts := start; !ts.After(end); ts = ts.Add(15 * time.Second) {
		for _, model := range []string{"a", "b"} {
			// Per scrape: 10 short, 6 medium, 2 long prompts; model a's
			// shift to 2 short, 6 medium, 10 long.
			add := []float64{10, 6, 2, 0}
			if model == "a" && ts.After(end.Add(-15*time.Minute)) {
				add = []float64{2, 6, 10, 0}
			}
			run := 0.0
			for i, le := range les {
				run += add[i]
				cum[key{model, le}] += run
			}
		}
		for _, model := range []string{"a", "b"} {
			for _, le := range les {
				fmt.Fprintf(&b, "vllm:request_prompt_tokens_bucket{model_name=%q,le=%q} %g %d\n", model, le, cum[key{model, le}], ts.Unix())
			}
		}
	}
	b.WriteString("# EOF\n")
	return writeFile(t, dir, "prompts.om", b.String()), end
}

// TestDriftMetric: --metric compares a histogram's last window with the
// one before it in a store, one feature per --by value.
func TestDriftMetric(t *testing.T) {
	path, end := promptHistogram(t, t.TempDir())
	out := decodeDrift(t, runVigil(t, "", "drift", "--metric", "vllm:request_prompt_tokens", "--input", path,
		"--by", "model_name", "--json"))
	require.Equal(t, 2, out.Total)
	require.Equal(t, 1, out.Drifted)
	a, b := out.Features[0], out.Features[1]
	require.Equal(t, `vllm:request_prompt_tokens{model_name="a"}`, a["feature"])
	require.Equal(t, "psi", a["method"])
	require.Equal(t, true, a["drift"])
	require.Greater(t, a["score"], 0.25)
	require.Equal(t, false, b["drift"])
	require.Less(t, b["score"], 0.01)

	// Before the shift, nothing drifted; chisquare has a p-value.
	out = decodeDrift(t, runVigil(t, "", "drift", "--metric", "vllm:request_prompt_tokens", "--input", path,
		"--by", "model_name", "--at", end.Add(-20*time.Minute).Format(time.RFC3339), "--method", "chisquare", "--json"))
	require.Zero(t, out.Drifted)
	require.Contains(t, out.Features[0], "p_value")

	requireUsage(t, runVigil(t, "", "drift", "--metric", "vllm:request_prompt_tokens", "--input", path, "--method", "ks"), "needs the values")
	requireUsage(t, runVigil(t, "", "drift", "--metric", "nope", "--input", path), "no series of nope_bucket")
	requireUsage(t, runVigil(t, "", "drift", "--metric", "vllm:request_prompt_tokens"), "exactly one of --input")
	requireUsage(t, runVigil(t, "", "drift", "--input", path), "go with --metric")
	requireUsage(t, runVigil(t, "", "drift", "--metric", "x", "--input", path, "--by", "le"), "--by")
}
