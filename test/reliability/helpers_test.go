package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/peertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The content types of the two Remote-Write versions, as senders send them.
const (
	contentTypeV1 = "application/x-protobuf"
	contentTypeV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
)

// server is a running `vigil serve` and an HTTP client for it.
type server struct {
	*peertest.Proc
	client *http.Client
}

// startVigil runs the binary on a fresh data directory with config
// (vigil.yaml text; empty means the defaults).
func startVigil(t *testing.T, config string) *server {
	t.Helper()
	return startVigilArgs(t, config)
}

// requireUp requires the server to answer /-/healthy and its log to hold no
// panic.
func (v *server) requireUp(t *testing.T) {
	t.Helper()
	resp, err := v.client.Get(v.URL + "/-/healthy")
	require.NoError(t, err, "the server no longer answers:\n%s", v.Output())
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, v.Output(), "panic", "the server's log")
}

// do sends a request and returns the response with its body read.
func (v *server) do(t *testing.T, method, path string, body io.Reader, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, v.URL+path, body)
	require.NoError(t, err)
	for k, vals := range header {
		req.Header[k] = vals
	}
	resp, err := v.client.Do(req)
	require.NoError(t, err, "%s %s: no answer; the server's log:\n%s", method, path, v.Output())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, strings.TrimSpace(string(b))
}

// write posts a protobuf body (snappy-compressed here) to /api/v1/write
// under contentType, with the headers Prometheus sends, and returns the
// response and its text.
func (v *server) write(t *testing.T, msg proto.Message, contentType string) (*http.Response, string) {
	t.Helper()
	raw, err := proto.Marshal(msg)
	require.NoError(t, err)
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("Content-Encoding", "snappy")
	h.Set("User-Agent", "Prometheus/3.5.0")
	if contentType == contentTypeV2 {
		h.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	} else {
		h.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	return v.do(t, http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)), h)
}

// mustWriteV1 writes req as Remote-Write 1.0 and requires 204.
func (v *server) mustWriteV1(t *testing.T, req *prompb.WriteRequest) {
	t.Helper()
	resp, msg := v.write(t, req, contentTypeV1)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, msg)
}

// sample is one stored sample as the query API returns it.
type sample struct {
	T int64
	V string
}

// rangeOf returns the samples of the one series a range selector selects
// at at, in order (none when it selects none).
func (v *server) rangeOf(t *testing.T, selector string, at time.Time) []sample {
	t.Helper()
	q := url.Values{"query": {selector}, "time": {at.Format(time.RFC3339Nano)}}
	resp, body := v.do(t, http.MethodGet, "/api/v1/query?"+q.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var out struct {
		Data struct {
			Result []struct {
				Values [][2]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	if len(out.Data.Result) == 0 {
		return nil
	}
	require.Len(t, out.Data.Result, 1, body)
	var got []sample
	for _, p := range out.Data.Result[0].Values {
		var ts float64
		var val string
		require.NoError(t, json.Unmarshal(p[0], &ts))
		require.NoError(t, json.Unmarshal(p[1], &val))
		got = append(got, sample{T: int64(ts*1000 + 0.5), V: val})
	}
	return got
}

// labelsOf builds prompb labels from name/value pairs after the metric name.
func labelsOf(name string, kv ...string) []prompb.Label {
	out := []prompb.Label{{Name: "__name__", Value: name}}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

// within gives ctx a deadline: a request that hangs fails the test rather
// than the run.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// writeHour writes an hour of 15 s samples of 400 series of metric name,
// ending at now: data for heavy queries.
func (v *server) writeHour(t *testing.T, name string, now time.Time) {
	t.Helper()
	for part := range 4 {
		var req prompb.WriteRequest
		for s := range 100 {
			ts := prompb.TimeSeries{Labels: labelsOf(name, "series", strconv.Itoa(part*100+s))}
			for i := range 240 {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: now.Add(time.Duration(i-239) * 15 * time.Second).UnixMilli(), Value: float64(i * s)})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		v.mustWriteV1(t, &req)
	}
}
