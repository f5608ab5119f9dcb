package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/peertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a running Prometheus-compatible server (`vigil serve`, or
// Prometheus) and an HTTP client for its API.
type server struct {
	*peertest.Proc
	client *http.Client
}

// startVigil runs the binary on dir/data with config (vigil.yaml text,
// written into dir; empty means no file, the defaults). A second call on
// the same dir reopens the same store.
func startVigil(t *testing.T, dir, config string) *server {
	t.Helper()
	args := []string{"--data-dir", filepath.Join(dir, "data")}
	if config != "" {
		cfg := filepath.Join(dir, "vigil.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
		args = append(args, "--config", cfg)
	}
	return &server{Proc: peertest.StartVigil(t, args...), client: newClient(t)}
}

// newClient returns an HTTP client whose idle connections are closed when
// the test ends.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// marshal encodes a Remote-Write 1.0 request and snappy-compresses it.
func marshal(req *prompb.WriteRequest) ([]byte, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, b), nil
}

// encode is marshal for the test goroutine.
func encode(t testing.TB, req *prompb.WriteRequest) []byte {
	t.Helper()
	b, err := marshal(req)
	require.NoError(t, err)
	return b
}

// post sends body to /api/v1/write as Remote-Write 1.0 with the headers
// Prometheus sends; header overrides them ("" deletes one). It returns the
// status and the answer's text, trimmed.
func (v *server) post(ctx context.Context, body []byte, header map[string]string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.URL+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "vigil-ingest-test")
	for k, val := range header {
		if val == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, val)
		}
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(msg)), err
}

// write posts a Remote-Write 1.0 request.
func (v *server) write(ctx context.Context, t testing.TB, req *prompb.WriteRequest) (int, string, error) {
	return v.post(ctx, encode(t, req), nil)
}

// mustWrite posts req and requires 204.
func (v *server) mustWrite(t *testing.T, req *prompb.WriteRequest) {
	t.Helper()
	code, msg, err := v.write(t.Context(), t, req)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code, msg)
}

// point is one sample of a query answer: T in milliseconds, Raw the value as
// the API wrote it.
type point struct {
	T   int64
	Raw string
}

// value parses Raw.
func (p point) value(t testing.TB) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(p.Raw, 64)
	require.NoError(t, err, "value %q", p.Raw)
	return f
}

// series is one series of a vector or matrix answer.
type series struct {
	Metric map[string]string
	Points []point
}

// tryQuery runs an instant query at at through /api/v1/query.
func (v *server) tryQuery(ctx context.Context, expr string, at time.Time) ([]series, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string   `json:"metric"`
			Value  []json.RawMessage   `json:"value"`
			Values [][]json.RawMessage `json:"values"`
		} `json:"result"`
	}
	form := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	if err := v.api(ctx, http.MethodPost, "/api/v1/query", form, &data); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	out := make([]series, 0, len(data.Result))
	for _, r := range data.Result {
		s := series{Metric: r.Metric}
		if data.ResultType == "vector" {
			r.Values = [][]json.RawMessage{r.Value}
		}
		for _, p := range r.Values {
			var sec float64
			var raw string
			if len(p) != 2 || json.Unmarshal(p[0], &sec) != nil || json.Unmarshal(p[1], &raw) != nil {
				return nil, fmt.Errorf("query %s: point %s is not [seconds, \"value\"]", expr, p)
			}
			s.Points = append(s.Points, point{T: int64(math.Round(sec * 1000)), Raw: raw})
		}
		out = append(out, s)
	}
	return out, nil
}

// query runs an instant query and requires it to succeed.
func (v *server) query(t testing.TB, expr string, at time.Time) []series {
	t.Helper()
	res, err := v.tryQuery(context.Background(), expr, at)
	require.NoError(t, err)
	return res
}

// scalar runs an instant query that must give one sample and returns it.
func (v *server) scalar(t testing.TB, expr string, at time.Time) float64 {
	t.Helper()
	res := v.query(t, expr, at)
	require.Len(t, res, 1, "%s: %v", expr, res)
	require.Len(t, res[0].Points, 1)
	return res[0].Points[0].value(t)
}

// api calls a JSON endpoint of the Prometheus API and decodes its data.
func (v *server) api(ctx context.Context, method, path string, form url.Values, data any) error {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else if len(form) > 0 {
		path += "?" + form.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, v.URL+path, body)
	if err != nil {
		return err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var ans struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return fmt.Errorf("%s: status %d, answer %.300q: %w", path, resp.StatusCode, b, err)
	}
	if ans.Status != "success" {
		return fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, ans.Error)
	}
	d := json.NewDecoder(bytes.NewReader(ans.Data))
	d.UseNumber()
	return d.Decode(data)
}

// labelValues returns /api/v1/label/NAME/values.
func (v *server) labelValues(t testing.TB, name string) []string {
	t.Helper()
	var vals []string
	require.NoError(t, v.api(context.Background(), http.MethodGet, "/api/v1/label/"+name+"/values", nil, &vals))
	return vals
}

// requireReady checks /-/ready.
func (v *server) requireReady(t testing.TB) {
	t.Helper()
	resp, err := v.client.Get(v.URL + "/-/ready")
	require.NoError(t, err, "vigil after the last request:\n%s", v.Output())
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// scrapeMetrics reads the /metrics of the server at url and returns the
// samples of the counter or gauge name, each with its labels.
func scrapeMetrics(t testing.TB, client *http.Client, url, name string) []metricSample {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	fam, ok := fams[name]
	if !ok {
		return nil
	}
	var out []metricSample
	for _, m := range fam.GetMetric() {
		ms := metricSample{labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			ms.labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			ms.value = m.GetCounter().GetValue()
		case m.Gauge != nil:
			ms.value = m.GetGauge().GetValue()
		case m.Untyped != nil:
			ms.value = m.GetUntyped().GetValue()
		}
		out = append(out, ms)
	}
	return out
}

// metricSample is one sample of /metrics.
type metricSample struct {
	labels map[string]string
	value  float64
}

// metric sums the samples of the counter or gauge name on the /metrics of
// the server at url whose labels include match; 0 when there is none.
func metric(t testing.TB, client *http.Client, url, name string, match map[string]string) float64 {
	t.Helper()
	sum := 0.0
next:
	for _, ms := range scrapeMetrics(t, client, url, name) {
		for k, want := range match {
			if ms.labels[k] != want {
				continue next
			}
		}
		sum += ms.value
	}
	return sum
}

// metric reads one of the server's own metrics.
func (v *server) metric(t testing.TB, name string, match map[string]string) float64 {
	t.Helper()
	return metric(t, v.client, v.URL, name, match)
}

// metricBy sums the samples of name by the value of label, all from one
// read of /metrics.
func (v *server) metricBy(t testing.TB, name, label string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, ms := range scrapeMetrics(t, v.client, v.URL, name) {
		out[ms.labels[label]] += ms.value
	}
	return out
}

// waitFor polls cond every 100 ms until it holds, failing the test after
// timeout with what it waited for and the last state describe returns.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			state := ""
			if describe != nil {
				state = describe()
			}
			t.Fatalf("%s: not true after %s\n%s", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// labelsOf builds a series' labels from a metric name and label pairs.
func labelsOf(name string, kv ...string) []prompb.Label {
	out := []prompb.Label{{Name: model.MetricNameLabel, Value: name}}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}
