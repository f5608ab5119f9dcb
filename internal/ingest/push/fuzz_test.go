package push_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/store"
)

// FuzzPushBody sends arbitrary bodies and paths, as text and as delimited
// protobuf, to the endpoint over an embedded store: it never panics and
// answers 200, 202 or a 4xx.
//
//	go test ./internal/ingest/push -run '^$' -fuzz FuzzPushBody -fuzztime 60s
func FuzzPushBody(f *testing.F) {
	f.Add("/metrics/job/j", "# TYPE m gauge\nm{a=\"1\"} 1\n", false)
	f.Add("/metrics/job/j/a@base64/=", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n", false)
	f.Add("/metrics/job/j", "m 1 17\n", false)
	f.Add("/metrics/job/j/x/y", "\x0a\x05\x0a\x01m\x18\x01", true)
	f.Add("/metrics/job/j", "\xff\xff\xff", true)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(f.TempDir()), nil, nil, prometheus.NewRegistry())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	h, err := push.New(push.Options{Appendable: st, MaxSeries: 1000, MaxBodyBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, body string, proto bool) {
		for _, method := range []string{http.MethodPut, http.MethodPost} {
			req := httptest.NewRequest(method, "/metrics/job/j", bytes.NewReader([]byte(body)))
			req.URL.RawPath, req.URL.Path = path, path
			if proto {
				req.Header.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if c := rec.Code; c != http.StatusOK && (c < 400 || c >= 500) {
				t.Fatalf("%s %q %q: status %d: %s", method, path, body, c, rec.Body)
			}
		}
		req := httptest.NewRequest(http.MethodDelete, "/metrics/job/j", nil)
		req.URL.RawPath, req.URL.Path = path, path
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if c := rec.Code; c != http.StatusAccepted && c != http.StatusBadRequest {
			t.Fatalf("DELETE %q: status %d: %s", path, c, rec.Body)
		}
	})
}
