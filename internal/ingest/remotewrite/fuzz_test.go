package remotewrite

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

// FuzzDecode feeds arbitrary protobuf payloads (snappy-compressed here, so
// that the fuzzer reaches the decoder) to the receiver: it must never panic
// and must answer with a status a sender understands.
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s ./internal/ingest/remotewrite
func FuzzDecode(f *testing.F) {
	v1, _ := proto.Marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "a", Value: "b"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: t0.UnixMilli()}},
	}}})
	v2, _ := proto.Marshal(&writev2.Request{
		Symbols:    []string{"", "__name__", "m"},
		Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: t0.UnixMilli()}}}},
	})
	f.Add(v1, false)
	f.Add(v2, true)
	f.Add([]byte{}, false)
	f.Add([]byte("\x0a\x05\x0a\x03\x0a\x01x"), true)

	cfg := store.DefaultEmbeddedConfig(f.TempDir())
	st, err := store.OpenEmbedded(cfg, func() time.Time { return t0 }, nil, nil)
	require.NoError(f, err)
	f.Cleanup(func() { _ = st.Close() })
	lim := DefaultLimits()
	lim.MaxActiveSeries = 1000
	h, err := New(Options{Appendable: st, Series: st, Limits: lim, Now: func() time.Time { return t0 }})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, payload []byte, isV2 bool) {
		// Twice: the second time a 1.0 payload's series are in the
		// series cache.
		for range 2 {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, payload)))
			req.Header.Set("Content-Encoding", "snappy")
			if isV2 {
				req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
			} else {
				req.Header.Set("Content-Type", "application/x-protobuf")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case http.StatusNoContent, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			default:
				t.Fatalf("status %d for a client payload: %s", rec.Code, rec.Body.String())
			}
		}
	})
}
