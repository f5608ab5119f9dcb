package remotewrite

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/store"
)

// gpuWrite is a request of n dcgm-exporter-like series at t0.
func gpuWrite(n int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{}
	for i, ls := range remotewritetest.GPUSeries(n) {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: ls,
			Samples: []prompb.Sample{{Timestamp: t0.UnixMilli(), Value: float64(i)}}})
	}
	return req
}

// The in-flight byte budget: a request is charged its body and its
// decoded size times the expansion; over the budget it gets 503, over the
// client's share 429 (both with Retry-After), over the whole budget 413;
// what was charged is given back after each request.
func TestInflightBudget(t *testing.T) {
	f := newFixture(t, DefaultLimits())
	body := encodeV1(t, gpuWrite(200))
	n, err := snappy.DecodedLen(body)
	require.NoError(t, err)
	cost := int64(len(body)) + int64(n)*admission.ExpansionRemoteWrite

	f.h.opts.Budget = admission.NewBudget(cost-1, nil)
	code, msg, hdr := f.post(t, body, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, msg)
	require.Contains(t, msg, "memory.max_inflight_bytes")
	require.Empty(t, hdr.Get("Retry-After"))

	b := admission.NewBudget(3*cost, nil)
	f.h.opts.Budget = b
	code, msg, _ = f.post(t, body, nil)
	require.Equal(t, http.StatusNoContent, code, msg)

	// Another request of this client holds 2 costs: what is left (1) fits
	// the budget but not the share (3/2).
	held, r := b.Acquire("127.0.0.1", "remote_write", 2*cost)
	require.Nil(t, r)
	code, msg, hdr = f.post(t, body, nil)
	require.Equal(t, http.StatusTooManyRequests, code, msg)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	held.Release()

	// Another client holds 2.5 costs: this one, holding nothing, does
	// not fit what is left.
	other, r := b.Acquire("10.0.0.9", "remote_write", 5*cost/2)
	require.Nil(t, r)
	code, msg, hdr = f.post(t, body, nil)
	require.Equal(t, http.StatusServiceUnavailable, code, msg)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	require.Contains(t, msg, "retry later")
	other.Release()

	code, msg, _ = f.post(t, body, nil)
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Zero(t, testutilInflight(b), "bytes still charged after the requests")
}

func testutilInflight(b *admission.Budget) int64 {
	t, r := b.Acquire("probe", "remote_write", b.Capacity())
	if r != nil {
		return 1
	}
	t.Release()
	return 0
}

// TestExpansion checks ExpansionRemoteWrite against what a request of
// dcgm-exporter-like series allocates while it is decoded and stored
// into series that exist already (the usual case), per decoded byte.
func TestExpansion(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MB")
	}
	load, err := remotewritetest.NewLoad(20000, 20000, 3, 15*time.Second, t0)
	require.NoError(t, err)
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.OutOfOrderWindow = time.Hour
	st, err := store.OpenEmbedded(cfg, func() time.Time { return t0 }, nil, nil)
	require.NoError(t, err)
	defer st.Close()
	h, err := New(Options{Appendable: st, Series: st, Limits: DefaultLimits(), Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	send := func(r int) (alloc uint64, decoded int) {
		body := load.Body(r, 0)
		decoded, err := snappy.DecodedLen(body)
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		rec := httptest.NewRecorder()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		h.ServeHTTP(rec, req)
		runtime.ReadMemStats(&m1)
		require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		return m1.TotalAlloc - m0.TotalAlloc, decoded
	}
	send(0) // creates the series
	for r := 1; r < 3; r++ {
		alloc, decoded := send(r)
		ratio := float64(alloc) / float64(decoded)
		t.Logf("round %d: %d bytes decoded, %d allocated: %.1f per decoded byte (ExpansionRemoteWrite %d)", r, decoded, alloc, ratio, admission.ExpansionRemoteWrite)
		require.LessOrEqual(t, ratio, float64(admission.ExpansionRemoteWrite), "the decoder allocates more than the budget charges")
	}
}
