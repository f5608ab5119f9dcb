package remotewrite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

type fixture struct {
	st  *store.Embedded
	h   *Handler
	srv *httptest.Server
	reg *prometheus.Registry
}

func newFixture(t *testing.T, lim Limits) *fixture {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.OutOfOrderWindow = time.Hour
	st, err := store.OpenEmbedded(cfg, func() time.Time { return t0 }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	reg := prometheus.NewRegistry()
	h, err := New(Options{Appendable: st, Series: st, Limits: lim, Now: func() time.Time { return t0 }, Registerer: reg})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{st: st, h: h, srv: srv, reg: reg}
}

func series(name string, kv ...string) []prompb.Label {
	out := []prompb.Label{{Name: "__name__", Value: name}}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func encodeV1(t *testing.T, req *prompb.WriteRequest) []byte {
	t.Helper()
	b, err := proto.Marshal(req)
	require.NoError(t, err)
	return snappy.Encode(nil, b)
}

func (f *fixture) post(t *testing.T, body []byte, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(msg)), resp.Header
}

// value returns the value of sel at t0 in the store, or NaN when absent.
func (f *fixture) value(t *testing.T, sel string, at time.Time) (float64, bool) {
	t.Helper()
	res, _, err := store.Query(t.Context(), f.st, "sum("+sel+")", at)
	require.NoError(t, err)
	vec := res.(promql.Vector)
	if len(vec) == 0 {
		return math.NaN(), false
	}
	return vec[0].F, true
}

func TestWriteV1Stored(t *testing.T) {
	f := newFixture(t, DefaultLimits())
	ts := t0.UnixMilli()
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: series("gpu_temp", "gpu", "0"), Samples: []prompb.Sample{{Value: 60, Timestamp: ts - 15000}, {Value: 61, Timestamp: ts}}},
		{Labels: series("gpu_temp", "gpu", "1"), Samples: []prompb.Sample{{Value: math.Inf(1), Timestamp: ts}}},
		{Labels: series("gpu_nan"), Samples: []prompb.Sample{{Value: math.NaN(), Timestamp: ts}}},
	}}
	code, msg, _ := f.post(t, encodeV1(t, req), nil)
	require.Equal(t, http.StatusNoContent, code, msg)
	v, ok := f.value(t, `gpu_temp{gpu="0"}`, t0)
	require.True(t, ok)
	require.Equal(t, 61.0, v)
	v, _ = f.value(t, `gpu_temp{gpu="1"}`, t0)
	require.True(t, math.IsInf(v, 1))
	require.Equal(t, 4.0, testutil.ToFloat64(f.h.m.samples))
}

func TestWriteV2WithClient(t *testing.T) {
	f := newFixture(t, DefaultLimits())
	api, err := remoteapi.NewAPI(f.srv.URL, remoteapi.WithAPIPath("/"))
	require.NoError(t, err)
	req := &writev2.Request{
		Symbols: []string{"", "__name__", "vllm:num_requests_waiting", "model_name", "llama"},
		Timeseries: []writev2.TimeSeries{{
			LabelsRefs: []uint32{1, 2, 3, 4},
			Samples:    []writev2.Sample{{Value: 7, Timestamp: t0.UnixMilli()}},
			Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE},
		}},
	}
	stats, err := api.Write(t.Context(), remoteapi.WriteV2MessageType, req)
	require.NoError(t, err)
	require.Equal(t, 1, stats.Samples)
	v, ok := f.value(t, `vllm:num_requests_waiting{model_name="llama"}`, t0)
	require.True(t, ok)
	require.Equal(t, 7.0, v)
}

func TestBadRequests(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxBodyBytes = 4096
	lim.MaxDecodedBytes = 1 << 20
	lim.MaxSamplesPerRequest = 10
	lim.MaxLabelsPerSeries = 5
	lim.MaxLabelNameLength = 20
	lim.MaxLabelValueLength = 50
	f := newFixture(t, lim)
	ts := t0.UnixMilli()
	good := prompb.TimeSeries{Labels: series("ok_metric", "client", "a"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}
	many := make([]prompb.Sample, 11)
	for i := range many {
		many[i] = prompb.Sample{Value: 1, Timestamp: ts - int64(11-i)*1000}
	}
	// A snappy block starts with the decoded length: claim 2 MiB.
	bigDecoded := append(binary.AppendUvarint(nil, 2<<20), 0, 0, 0)
	incompressible := make([]byte, 8192)
	for i := range incompressible {
		incompressible[i] = byte(i*7919 + i>>3)
	}

	type want struct {
		code   int
		reason string
		msg    string
	}
	f1 := func(name string, body []byte, header map[string]string, w want) {
		t.Run(name, func(t *testing.T) {
			code, msg, _ := f.post(t, body, header)
			require.Equal(t, w.code, code, msg)
			require.Contains(t, msg, w.msg)
			require.NotContains(t, msg, "\n")
		})
	}
	f1("bad snappy", []byte("this is not snappy"), nil, want{400, reasonBadSnappy, "not snappy"})
	f1("bad protobuf", snappy.Encode(nil, []byte("\xff\xff\xff garbage")), nil, want{400, reasonBadProtobuf, "decode remote write 1.0 request"})
	f1("wrong content type", encodeV1(t, &prompb.WriteRequest{}), map[string]string{"Content-Type": "application/json"}, want{415, reasonContentType, "content type"})
	f1("wrong encoding", encodeV1(t, &prompb.WriteRequest{}), map[string]string{"Content-Encoding": "gzip"}, want{415, reasonEncoding, "snappy"})
	f1("oversize body", incompressible, nil, want{413, reasonBodyTooLarge, "max_request_body_bytes=4096"})
	f1("oversize decoded", bigDecoded, nil, want{413, reasonDecodedTooLarge, "max_decoded_body_bytes"})
	f1("samples per request", encodeV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: series("m"), Samples: many}}}), nil,
		want{413, reasonSamplesPerRequest, "max_samples_per_request=10"})

	// Series-level rejections store the good series of the same request.
	f2 := func(name string, bad prompb.TimeSeries, msg string) {
		t.Run(name, func(t *testing.T) {
			good := good
			good.Labels = series("ok_metric", "client", name)
			code, got, _ := f.post(t, encodeV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{good, bad}}), nil)
			require.Equal(t, http.StatusBadRequest, code, got)
			require.Contains(t, got, msg)
			v, ok := f.value(t, fmt.Sprintf(`ok_metric{client=%q}`, name), t0)
			require.True(t, ok, "the good series of the request is stored")
			require.Equal(t, 1.0, v)
		})
	}
	f2("too many labels", prompb.TimeSeries{Labels: series("m", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "max_labels_per_series=5")
	f2("long label name", prompb.TimeSeries{Labels: series("m", strings.Repeat("n", 21), "1"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "max_label_name_length=20")
	f2("long label value", prompb.TimeSeries{Labels: series("m", "a", strings.Repeat("v", 51)), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "max_label_value_length=50")
	f2("no metric name", prompb.TimeSeries{Labels: []prompb.Label{{Name: "a", Value: "b"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "without a metric name")
	f2("invalid utf8 value", prompb.TimeSeries{Labels: series("m", "a", "\xff\xfe"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "not UTF-8")
	f2("empty label name", prompb.TimeSeries{Labels: series("m", "", "v"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "invalid label name")
	f2("duplicate label", prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "a", Value: "1"}, {Name: "a", Value: "2"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}, "twice")
	f2("far future", prompb.TimeSeries{Labels: series("m", "x", "future"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts + int64(time.Hour/time.Millisecond)}}}, "in the future")
	f2("too old", prompb.TimeSeries{Labels: series("m", "x", "old"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts - int64(48*time.Hour/time.Millisecond)}}}, reasonTooOld)

	t.Run("duplicate timestamp with another value", func(t *testing.T) {
		s := prompb.TimeSeries{Labels: series("dup_metric"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}
		code, msg, _ := f.post(t, encodeV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}}), nil)
		require.Equal(t, http.StatusNoContent, code, msg)
		code, msg, _ = f.post(t, encodeV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}}), nil)
		require.Equal(t, http.StatusNoContent, code, "the same sample again is accepted: "+msg)
		s.Samples[0].Value = 2
		code, msg, _ = f.post(t, encodeV1(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}}), nil)
		require.Equal(t, http.StatusBadRequest, code, msg)
		require.Contains(t, msg, reasonDuplicate)
	})

	require.Positive(t, testutil.ToFloat64(f.h.m.rejectedRequests.WithLabelValues(reasonBadSnappy)))
	require.Positive(t, testutil.ToFloat64(f.h.m.rejectedSamples.WithLabelValues(reasonLabelCount)))
}

func TestActiveSeriesLimit(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxActiveSeries = 100
	f := newFixture(t, lim)
	ts := t0.UnixMilli()
	send := func(from, to int, tsOff int64) (int, string) {
		var req prompb.WriteRequest
		for i := from; i < to; i++ {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: series("bomb", "id", fmt.Sprint(i)), Samples: []prompb.Sample{{Value: float64(i), Timestamp: ts + tsOff}}})
		}
		code, msg, _ := f.post(t, encodeV1(t, &req), nil)
		return code, msg
	}
	code, msg := send(0, 80, 0)
	require.Equal(t, http.StatusNoContent, code, msg)
	code, msg = send(0, 150, 1000) // 80 existing, 20 new fit, 50 rejected
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "50 active_series")
	require.Contains(t, msg, "max_active_series=100")
	require.Equal(t, uint64(100), f.st.NumSeries())
	code, msg = send(0, 100, 2000) // existing series keep being stored
	require.Equal(t, http.StatusNoContent, code, msg)
	v, _ := f.value(t, `count(bomb)`, t0.Add(2*time.Second))
	require.Equal(t, 100.0, v)
}

// TestActiveSeriesLimitConcurrent sends new series from many clients at
// once: requests stored side by side must not each take the same free room
// under the limit.
func TestActiveSeriesLimitConcurrent(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxActiveSeries = 1000
	f := newFixture(t, lim)
	ts := t0.UnixMilli()
	bodies := make(chan []byte, 100)
	for r := range cap(bodies) {
		var req prompb.WriteRequest
		for i := range 100 {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: series("bomb", "id", fmt.Sprint(r*100+i)), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}})
		}
		bodies <- encodeV1(t, &req)
	}
	close(bodies)
	var wg sync.WaitGroup
	codes := make([][]int, 16)
	for c := range codes {
		wg.Go(func() {
			for body := range bodies {
				req, _ := http.NewRequest(http.MethodPost, f.srv.URL, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("Content-Encoding", "snappy")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					codes[c] = append(codes[c], 0)
					continue
				}
				resp.Body.Close()
				codes[c] = append(codes[c], resp.StatusCode)
			}
		})
	}
	wg.Wait()
	for _, cs := range codes {
		for _, code := range cs {
			require.Contains(t, []int{http.StatusNoContent, http.StatusBadRequest}, code)
		}
	}
	// A new series admitted near the limit may race one request that
	// started far from it: one series over at most.
	require.LessOrEqual(t, f.st.NumSeries(), uint64(1001))
	require.Positive(t, f.st.NumSeries())
}

func TestOverloaded(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxInflightRequests = 1
	f := newFixture(t, lim)
	f.h.inflight <- struct{}{} // one request is being stored
	code, msg, hdr := f.post(t, encodeV1(t, &prompb.WriteRequest{}), nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	require.Contains(t, msg, "max_inflight_requests")
	<-f.h.inflight
	code, msg, _ = f.post(t, encodeV1(t, &prompb.WriteRequest{}), nil)
	require.Equal(t, http.StatusNoContent, code, msg)
}

// TestBodyReadError: a client that goes away (or times out) while sending
// its body is counted as that, not as bad snappy.
func TestBodyReadError(t *testing.T) {
	f := newFixture(t, DefaultLimits())
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(io.ErrUnexpectedEOF)))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), "read request body")
	require.Equal(t, 1.0, testutil.ToFloat64(f.h.m.rejectedRequests.WithLabelValues(reasonReadBody)))
	require.Zero(t, testutil.ToFloat64(f.h.m.rejectedRequests.WithLabelValues(reasonBadSnappy)))
}

func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, DefaultLimits())
	resp, err := http.Get(f.srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestLimitsValidate(t *testing.T) {
	l := DefaultLimits()
	l.MaxInflightRequests = 0
	require.ErrorContains(t, l.Validate(), "max_inflight_requests")
	_, err := New(Options{})
	require.Error(t, err)
}
