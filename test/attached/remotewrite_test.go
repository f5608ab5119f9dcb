package attached

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// writeV1 sends req to base's remote-write endpoint and requires 204.
func writeV1(t *testing.T, base string, req *prompb.WriteRequest) {
	t.Helper()
	raw, err := proto.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	require.NoError(t, err)
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// scalar evaluates q at at on base and returns its one value, or -1 when
// the answer is empty or an error.
func scalar(t *testing.T, base, q string, at time.Time) float64 {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/query", url.Values{"query": {q}, "time": {strconv.FormatInt(at.Unix(), 10)}})
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]json.RawMessage `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Data.Result) != 1 {
		return -1
	}
	var s string
	if json.Unmarshal(out.Data.Result[0].Value[1], &s) != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// spans posts OTLP/HTTP JSON spans of a gateway calling a model server:
// the span metrics and the service graph Vigil derives from them.
func spans(t *testing.T, otlpURL string, n int, end time.Time) {
	t.Helper()
	var client, server []string
	for i := range n {
		start := end.Add(-time.Duration(n-i) * time.Second)
		tid := fmt.Sprintf("%032x", 0xabc000+i)
		cs, ss := fmt.Sprintf("%016x", 0x10000+i), fmt.Sprintf("%016x", 0x20000+i)
		st, et := strconv.FormatInt(start.UnixNano(), 10), strconv.FormatInt(start.Add(300*time.Millisecond).UnixNano(), 10)
		client = append(client, fmt.Sprintf(`{"traceId":%q,"spanId":%q,"name":"POST /v1/chat","kind":3,"startTimeUnixNano":%q,"endTimeUnixNano":%q}`, tid, cs, st, et))
		server = append(server, fmt.Sprintf(`{"traceId":%q,"spanId":%q,"parentSpanId":%q,"name":"generate","kind":2,"startTimeUnixNano":%q,"endTimeUnixNano":%q}`, tid, ss, cs, st, et))
	}
	res := func(svc string, sp []string) string {
		b, _ := json.Marshal(svc)
		out := `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":` + string(b) + `}}]},"scopeSpans":[{"spans":[`
		for i, s := range sp {
			if i > 0 {
				out += ","
			}
			out += s
		}
		return out + `]}]}`
	}
	body := `{"resourceSpans":[` + res("gateway", client) + "," + res("vllm", server) + `]}`
	resp, err := http.Post(otlpURL+"/v1/traces", "application/json", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestRemoteWriteOut: with a remote_write: section, what Vigil stores —
// series received, and the span metrics and service graph it derives —
// arrives in a real Prometheus (receiver on) and VictoriaMetrics, through
// Prometheus's own queue manager; with Prometheus down for 2 minutes and
// back, nothing written meanwhile is lost.
func TestRemoteWriteOut(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2-minute outage")
	}
	dir := t.TempDir()
	promDir := filepath.Join(dir, "prom")
	require.NoError(t, os.MkdirAll(promDir, 0o755))
	promAddr := peertest.FreeAddr(t)
	prom := backends[0].start(t, promDir, promAddr)
	vm := peertest.StartVictoriaMetrics(t, filepath.Join(dir, "vm"))
	cfg := filepath.Join(dir, "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`self_monitoring:
  enabled: false
spanmetrics:
  flush_interval: 2s
remote_write:
  - url: %s/api/v1/write
    queue_config: {max_backoff: 2s}
  - url: %s/api/v1/write
`, prom.URL, vm.URL)), 0o644))
	otlpAddr := peertest.FreeAddr(t)
	v := peertest.StartVigil(t, "--config", cfg, "--data-dir", filepath.Join(dir, "vigil"), "--otlp-http-listen", otlpAddr)

	// As Prometheus's, the queues send what is written after the server
	// started (its WAL from then on), not history: the samples are live,
	// 100 ms apart from the start on.
	start := time.Now()
	var req prompb.WriteRequest
	for s := range 50 {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "rwout_probe"}, {Name: "i", Value: strconv.Itoa(s)}}}
		for i := range 20 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: start.Add(time.Duration(i) * 100 * time.Millisecond).UnixMilli(), Value: float64(i)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	writeV1(t, v.URL, &req)
	time.Sleep(time.Until(start.Add(2 * time.Second)))
	now := time.Now().Truncate(time.Second).Add(time.Second)
	spans(t, "http://"+otlpAddr, 40, now)

	probe := `count(count_over_time(rwout_probe[10m]))`
	samples := `sum(count_over_time(rwout_probe[10m]))`
	derived := `count({__name__=~"traces_span_metrics_calls_total|traces_service_graph_request_total"})`
	var wantDerived float64
	require.Eventually(t, func() bool {
		wantDerived = scalar(t, v.URL, derived, time.Now())
		return wantDerived > 0
	}, time.Minute, time.Second, "Vigil derived no span metrics")
	for _, be := range []*peertest.Proc{prom, vm} {
		require.Eventually(t, func() bool {
			return scalar(t, be.URL, probe, now) == 50 && scalar(t, be.URL, samples, now) == 1000 &&
				scalar(t, be.URL, derived, time.Now()) == wantDerived
		}, time.Minute, time.Second, "%s: the series Vigil holds did not all arrive: %v series, %v samples, %v derived of %v",
			be.URL, scalar(t, be.URL, probe, now), scalar(t, be.URL, samples, now), scalar(t, be.URL, derived, time.Now()), wantDerived)
	}

	// Prometheus down for 2 minutes while a series goes on being written.
	prom.Kill()
	begin := time.Now().Truncate(time.Second)
	written := 0
	for at := begin; time.Since(begin) < 2*time.Minute; at = at.Add(time.Second) {
		writeV1(t, v.URL, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
			Labels:  []prompb.Label{{Name: "__name__", Value: "rwout_live"}},
			Samples: []prompb.Sample{{Timestamp: at.UnixMilli(), Value: float64(written)}},
		}}})
		written++
		time.Sleep(time.Until(at.Add(time.Second)))
	}
	end := time.Now()
	prom = backends[0].start(t, promDir, promAddr)
	live := fmt.Sprintf(`count_over_time(rwout_live[%ds])`, int(end.Sub(begin).Seconds())+5)
	require.Equal(t, float64(written), scalar(t, v.URL, live, end), "Vigil itself")
	require.Eventually(t, func() bool { return scalar(t, prom.URL, live, end) == float64(written) },
		time.Minute, time.Second, "samples lost over the outage: Prometheus holds %v of %d", scalar(t, prom.URL, live, end), written)
	require.Equal(t, 50.0, scalar(t, prom.URL, probe, now), "what arrived before the outage survived it")
	require.NoError(t, v.Stop())
	require.NoError(t, prom.Stop())
	require.NoError(t, vm.Stop())
}
