package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"
)

const contentTypeV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"

// tenant is a well-behaved client whose series must stay intact whatever
// the others send.
type tenant struct {
	name string
	// samples maps a series' "series" label to its raw samples, as written.
	samples map[string][]point
}

// writeTenant writes n series of 30 samples, 10 s apart, ending at end.
func writeTenant(t *testing.T, srv *server, name string, n int, end time.Time) *tenant {
	t.Helper()
	tn := &tenant{name: name, samples: map[string][]point{}}
	req := &prompb.WriteRequest{}
	for s := range n {
		id := strconv.Itoa(s)
		ts := prompb.TimeSeries{Labels: labelsOf("tenant_requests_total", "tenant", name, "series", id)}
		for j := range 30 {
			p := point{T: end.Add(time.Duration(j-29) * 10 * time.Second).UnixMilli(), Raw: strconv.Itoa(1000*s + j*j)}
			v, _ := strconv.ParseFloat(p.Raw, 64)
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.T, Value: v})
			tn.samples[id] = append(tn.samples[id], p)
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	srv.mustWrite(t, req)
	return tn
}

// requireIntact requires the tenant's series to hold exactly what was written.
func (tn *tenant) requireIntact(t *testing.T, srv *server) {
	t.Helper()
	res := srv.query(t, fmt.Sprintf(`tenant_requests_total{tenant=%q}[1h]`, tn.name), time.Now())
	require.Len(t, res, len(tn.samples), "tenant %s: series", tn.name)
	for _, s := range res {
		require.Equal(t, tn.samples[s.Metric["series"]], s.Points, "tenant %s series %s", tn.name, s.Metric["series"])
	}
}

// TestBadInput sends what broken, hostile or careless remote-write clients
// send to the running binary with its default limits. Each request gets
// the documented status and a one-line reason naming the limit or the
// problem; a rejected series does not take the good series of its request
// down with it; and after each request the server is ready, answers
// queries, and another tenant's series are intact. Values Prometheus allows
// — NaN, ±Inf, identical duplicates, samples inside the out-of-order
// window — are stored exactly. The rejections are counted by reason on
// /metrics.
func TestBadInput(t *testing.T) {
	start := time.Now()
	srv := startVigil(t, t.TempDir(), "")
	now := time.Now()
	ms := now.UnixMilli()
	other := writeTenant(t, srv, "b", 10, now)

	// Request-level rejections (nothing of the request is read).
	rnd := rand.New(rand.NewPCG(1, 2))
	incompressible := make([]byte, 16<<20+1)
	for i := range incompressible {
		incompressible[i] = byte(rnd.Uint32())
	}
	manySamples := prompb.TimeSeries{Labels: labelsOf("ingest_many")}
	for i := range 500_001 {
		manySamples.Samples = append(manySamples.Samples, prompb.Sample{Timestamp: ms - 500_001 + int64(i), Value: float64(i)})
	}
	garbage := []byte("\xff\xff\xff\xff not a protobuf message")
	wantRequests := map[string]float64{}
	reqCase := func(name, method string, body []byte, header map[string]string, code int, reason string, msg ...string) {
		t.Run(name, func(t *testing.T) {
			got, answer := srv.send(t, method, body, header)
			require.Equal(t, code, got, answer)
			requireOneLine(t, answer, msg...)
			wantRequests[reason]++
			srv.requireReady(t)
			other.requireIntact(t, srv)
		})
	}
	reqCase("bad snappy", http.MethodPost, []byte("this is not snappy"), nil, 400, "bad_snappy", "not snappy")
	reqCase("bad protobuf 1.0", http.MethodPost, snappy.Encode(nil, garbage), nil, 400, "bad_protobuf", "decode remote write 1.0 request")
	reqCase("bad protobuf 2.0", http.MethodPost, snappy.Encode(nil, garbage), map[string]string{"Content-Type": contentTypeV2}, 400, "bad_protobuf", "decode remote write 2.0 request")
	reqCase("wrong content type", http.MethodPost, encode(t, &prompb.WriteRequest{}), map[string]string{"Content-Type": "application/json"}, 415, "unsupported_content_type", "content type", "application/json")
	reqCase("wrong encoding", http.MethodPost, encode(t, &prompb.WriteRequest{}), map[string]string{"Content-Encoding": "gzip"}, 415, "unsupported_encoding", `"gzip"`, "snappy")
	reqCase("wrong method", http.MethodGet, nil, nil, 405, "method_not_allowed", "POST")
	reqCase("oversize body", http.MethodPost, incompressible, nil, 413, "body_too_large", "max_request_body_bytes=16777216")
	// A snappy block starts with its decoded length: claim 100 MiB.
	reqCase("oversize decoded body", http.MethodPost, append(binary.AppendUvarint(nil, 100<<20), 0, 0, 0), nil, 413, "decoded_too_large", "max_decoded_body_bytes=67108864")
	reqCase("too many samples", http.MethodPost, encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{manySamples}}), nil, 413, "samples_per_request", "500001 samples", "max_samples_per_request=500000")

	// Series-level rejections: the good series of the same request is stored.
	wantSamples := map[string]float64{}
	seriesCase := func(name string, bad prompb.TimeSeries, reason string, msg ...string) {
		t.Run(name, func(t *testing.T) {
			good := prompb.TimeSeries{Labels: labelsOf("ingest_good", "case", name), Samples: []prompb.Sample{{Timestamp: ms, Value: 42}}}
			code, answer, err := srv.write(t.Context(), t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good, bad}})
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, answer)
			requireOneLine(t, answer, append([]string{"stored 1 samples, rejected 1", reason}, msg...)...)
			wantSamples[reason]++
			require.Equal(t, 42.0, srv.scalar(t, fmt.Sprintf(`ingest_good{case=%q}`, name), now), "the good series of the request")
			srv.requireReady(t)
			other.requireIntact(t, srv)
		})
	}
	one := []prompb.Sample{{Timestamp: ms, Value: 1}}
	manyLabels := labelsOf("ingest_bad")
	for i := range 256 {
		manyLabels = append(manyLabels, prompb.Label{Name: fmt.Sprintf("l%03d", i), Value: "v"})
	}
	seriesCase("too many labels", prompb.TimeSeries{Labels: manyLabels, Samples: one}, "label_count", "257 labels", "max_labels_per_series=256")
	seriesCase("huge label name", prompb.TimeSeries{Labels: labelsOf("ingest_bad", strings.Repeat("n", 100<<10), "v"), Samples: one}, "label_name_length", "102400 bytes", "max_label_name_length=1024")
	seriesCase("huge label value", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "pod", strings.Repeat("v", 1<<20)), Samples: one}, "label_value_length", "1048576 bytes", "max_label_value_length=16384")
	seriesCase("label name not UTF-8", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "\xff\xfe", "v"), Samples: one}, "invalid_labels", "invalid label name")
	seriesCase("empty label name", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "", "v"), Samples: one}, "invalid_labels", "invalid label name")
	seriesCase("label value not UTF-8", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "pod", "\xc3\x28"), Samples: one}, "invalid_labels", "not UTF-8")
	seriesCase("metric name not UTF-8", prompb.TimeSeries{Labels: labelsOf("ingest_\xff"), Samples: one}, "invalid_labels", "not UTF-8")
	seriesCase("no metric name", prompb.TimeSeries{Labels: []prompb.Label{{Name: "pod", Value: "p"}}, Samples: one}, "invalid_labels", "without a metric name")
	seriesCase("label twice", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "pod", "a", "pod", "b"), Samples: one}, "invalid_labels", `"pod" twice`)
	seriesCase("older than the out-of-order window", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "case", "old"), Samples: []prompb.Sample{{Timestamp: now.Add(-48 * time.Hour).UnixMilli(), Value: 1}}}, "too_old", "too old sample")
	seriesCase("far future", prompb.TimeSeries{Labels: labelsOf("ingest_bad", "case", "future"), Samples: []prompb.Sample{{Timestamp: now.Add(time.Hour).UnixMilli(), Value: 1}}}, "out_of_bounds", "in the future")

	t.Run("label references out of range in 2.0", func(t *testing.T) {
		body, err := proto.Marshal(&writev2.Request{
			Symbols: []string{"", "__name__", "ingest_v2"},
			Timeseries: []writev2.TimeSeries{
				{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 7, Timestamp: ms}}},
				{LabelsRefs: []uint32{1, 99}, Samples: []writev2.Sample{{Value: 8, Timestamp: ms}}},
			},
		})
		require.NoError(t, err)
		code, answer := srv.send(t, http.MethodPost, snappy.Encode(nil, body), map[string]string{"Content-Type": contentTypeV2})
		require.Equal(t, http.StatusBadRequest, code, answer)
		requireOneLine(t, answer, "stored 1 samples, rejected 1", "invalid_labels")
		wantSamples["invalid_labels"]++
		require.Equal(t, 7.0, srv.scalar(t, `ingest_v2`, now))
		srv.requireReady(t)
		other.requireIntact(t, srv)
	})

	// What Prometheus accepts is stored exactly.
	t.Run("NaN and infinities", func(t *testing.T) {
		req := &prompb.WriteRequest{}
		for kind, v := range map[string]float64{"nan": math.NaN(), "plus": math.Inf(1), "minus": math.Inf(-1)} {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: labelsOf("ingest_special", "kind", kind), Samples: []prompb.Sample{{Timestamp: ms, Value: v}}})
		}
		srv.mustWrite(t, req)
		got := map[string][]point{}
		for _, s := range srv.query(t, `ingest_special[1m]`, now) {
			got[s.Metric["kind"]] = s.Points
		}
		require.Equal(t, map[string][]point{
			"nan":   {{T: ms, Raw: "NaN"}},
			"plus":  {{T: ms, Raw: "+Inf"}},
			"minus": {{T: ms, Raw: "-Inf"}},
		}, got)
		other.requireIntact(t, srv)
	})
	t.Run("duplicate samples", func(t *testing.T) {
		s := prompb.TimeSeries{Labels: labelsOf("ingest_dup"), Samples: []prompb.Sample{{Timestamp: ms, Value: 1.5}}}
		srv.mustWrite(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}})
		srv.mustWrite(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}}) // a retried request
		s.Samples = []prompb.Sample{{Timestamp: ms, Value: 2.5}}
		code, answer, err := srv.write(t.Context(), t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code, answer)
		requireOneLine(t, answer, "duplicate_timestamp", "duplicate sample for timestamp")
		wantSamples["duplicate_timestamp"]++
		require.Equal(t, []series{{Metric: map[string]string{"__name__": "ingest_dup"}, Points: []point{{T: ms, Raw: "1.5"}}}},
			srv.query(t, `ingest_dup[1m]`, now), "the first value stays")
		other.requireIntact(t, srv)
	})
	t.Run("out of order inside the window", func(t *testing.T) {
		lbl := labelsOf("ingest_ooo")
		srv.mustWrite(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: lbl, Samples: []prompb.Sample{{Timestamp: ms, Value: 2}}}}})
		older := now.Add(-3 * time.Hour).UnixMilli()
		srv.mustWrite(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: lbl, Samples: []prompb.Sample{{Timestamp: older, Value: 1}}}}})
		require.Equal(t, []series{{Metric: map[string]string{"__name__": "ingest_ooo"}, Points: []point{{T: older, Raw: "1"}, {T: ms, Raw: "2"}}}},
			srv.query(t, `ingest_ooo[4h]`, now))
		other.requireIntact(t, srv)
	})
	t.Run("overloaded", func(t *testing.T) {
		srv.overload(t, 64)
		wantRequests["overloaded"]++
		other.requireIntact(t, srv)
	})

	for reason, n := range wantRequests {
		require.Equal(t, n, srv.metric(t, "vigil_remote_write_rejected_requests_total", map[string]string{"reason": reason}), reason)
	}
	for reason, n := range wantSamples {
		require.Equal(t, n, srv.metric(t, "vigil_remote_write_rejected_samples_total", map[string]string{"reason": reason}), reason)
	}
	require.NoError(t, srv.Stop())
	require.NotContains(t, srv.Output(), "panic")
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}

// requireOneLine requires a one-line answer that contains each of want.
func requireOneLine(t *testing.T, answer string, want ...string) {
	t.Helper()
	require.NotEmpty(t, answer)
	require.NotContains(t, answer, "\n", "a one-line reason")
	require.Less(t, len(answer), 1000, "a short reason: %.300s", answer)
	for _, w := range want {
		require.Contains(t, answer, w)
	}
}

// send posts (or, with another method, sends) body and returns the status
// and answer.
func (v *server) send(t *testing.T, method string, body []byte, header map[string]string) (int, string) {
	t.Helper()
	if method == http.MethodPost {
		code, answer, err := v.post(t.Context(), body, header)
		require.NoError(t, err)
		return code, answer
	}
	req, err := http.NewRequestWithContext(t.Context(), method, v.URL+"/api/v1/write", nil)
	require.NoError(t, err)
	resp, err := v.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// overload holds limit requests in flight — clients that send their body
// slowly — and requires the next request to get 503 with Retry-After and a
// reason naming max_inflight_requests. Then the slow clients finish their
// bodies, and all of them are stored (204).
func (v *server) overload(t *testing.T, limit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	writers := make([]*io.PipeWriter, limit)
	codes := make([]int, limit)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range limit {
		pr, pw := io.Pipe()
		writers[i] = pw
		defer pw.Close()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.URL+"/api/v1/write", pr)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		wg.Go(func() {
			resp, err := v.client.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	waitFor(t, time.Minute, fmt.Sprintf("%d remote-write requests in flight", limit), func() bool {
		return v.metric(t, "vigil_remote_write_inflight_requests", nil) == float64(limit)
	}, v.Output)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.URL+"/api/v1/write", bytes.NewReader(encode(t, &prompb.WriteRequest{})))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	resp, err := v.client.Do(req)
	require.NoError(t, err)
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(answer))
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	requireOneLine(t, strings.TrimSpace(string(answer)), "max_inflight_requests", strconv.Itoa(limit))
	v.requireReady(t)

	ms := time.Now().UnixMilli()
	for i, pw := range writers {
		body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
			Labels: labelsOf("ingest_slow", "conn", strconv.Itoa(i)), Samples: []prompb.Sample{{Timestamp: ms, Value: float64(i)}},
		}}})
		_, err := io.Copy(pw, bytes.NewReader(body))
		require.NoError(t, err)
		require.NoError(t, pw.Close())
	}
	wg.Wait()
	for i, c := range codes {
		require.Equal(t, http.StatusNoContent, c, "slow client %d", i)
	}
	require.Equal(t, float64(limit), v.scalar(t, `count(ingest_slow)`, time.UnixMilli(ms)))
	require.Zero(t, v.metric(t, "vigil_remote_write_inflight_requests", nil))
}
