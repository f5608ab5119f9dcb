package driftflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The features of the samples: amount shifts, age and tenure do not.
const (
	featShifted = "amount"
	jobDrift    = "vigil-drift" // the job `vigil drift --push` pushes as
)

var featStable = []string{"age", "tenure"}

// writeSample writes rows of the three features; shift moves amount by
// that many standard deviations.
func writeSample(t *testing.T, path string, rows int, seed uint64, shift float64) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(seed, 11))
	fmt.Fprintln(w, "amount,age,tenure")
	for range rows {
		amount := 120 + 30*(rng.NormFloat64()+shift)
		age := math.Round(40 + 12*rng.NormFloat64())
		tenure := math.Round(240*rng.ExpFloat64()) / 10
		fmt.Fprintf(w, "%.2f,%g,%g\n", amount, age, tenure)
	}
	require.NoError(t, w.Flush())
}

// driftResult is one feature of `vigil drift --json`.
type driftResult struct {
	Feature string  `json:"feature"`
	Method  string  `json:"method"`
	Score   float64 `json:"score"`
	Drift   bool    `json:"drift"`
}

// runDrift runs `vigil drift` on two samples with PSI, pushing the scores
// for model to pushURL, and returns the score of each feature.
func runDrift(t *testing.T, bin, baseline, current, pushURL, model string) map[string]float64 {
	t.Helper()
	cmd := exec.Command(bin, "drift", "--baseline", baseline, "--current", current, "--method", "psi",
		"--push", pushURL, "--model", model, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "vigil drift: %s", stderr.String())
	var rep struct {
		Features []driftResult `json:"features"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	scores := map[string]float64{}
	for _, r := range rep.Features {
		require.Equal(t, "psi", r.Method)
		scores[r.Feature] = r.Score
	}
	require.Len(t, scores, 3)
	return scores
}

// series is one series of an instant vector.
type series struct {
	Labels map[string]string
	Value  float64
}

// query evaluates expr now through a Prometheus-compatible API.
func query(t *testing.T, base, expr string) []series {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "%s: %s", expr, body.Error)
	out := make([]series, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		out = append(out, series{Labels: r.Metric, Value: v})
	}
	return out
}

// apiData GETs a Vigil API path and decodes its data into v.
func apiData(t *testing.T, base, path string, v any) {
	t.Helper()
	resp, err := http.Get(base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	body := struct {
		Data any `json:"data"`
	}{Data: v}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
}

// waitFor polls cond every half second until it holds or limit passes,
// then fails with what.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// pushed waits until the server holds model's scores — the values `vigil
// drift` printed, bit for bit — and returns those series.
func pushed(t *testing.T, base, model string, scores map[string]float64) []series {
	t.Helper()
	var got []series
	waitFor(t, time.Minute, fmt.Sprintf("the scores of %s in Vigil: %v", model, scores), func() bool {
		got = query(t, base, fmt.Sprintf(`vigil_feature_drift{model=%q}`, model))
		if len(got) != len(scores) {
			return false
		}
		for _, s := range got {
			if want, ok := scores[s.Labels["feature"]]; !ok || s.Value != want {
				return false
			}
		}
		return true
	})
	for _, s := range got {
		require.Equal(t, jobDrift, s.Labels["job"], "the pushed job label is kept: %v", s.Labels)
		require.Equal(t, "psi", s.Labels["method"])
		require.NotContains(t, s.Labels, "exported_job")
	}
	return got
}
