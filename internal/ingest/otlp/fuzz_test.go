package otlp

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

var fuzzPaths = []string{"/v1/traces", "/v1/logs", "/v1/metrics"}

// fuzzReceiver is a receiver without listeners whose consumers keep
// nothing; the fuzz targets call its handler directly.
func fuzzReceiver(f *testing.F) http.Handler {
	r, err := New(Options{Traces: &discard{}, Logs: &discard{}, Metrics: &discard{}, MaxAttributeDepth: 8})
	require.NoError(f, err)
	return r.Handler()
}

// fuzzPost sends body to the signal that sel picks and checks that the
// receiver answers with a status a sender understands: it never fails on
// its own (the consumers do not) and never panics.
func fuzzPost(t *testing.T, h http.Handler, sel uint8, contentType string, gz bool, body []byte) {
	req := httptest.NewRequest(http.MethodPost, fuzzPaths[int(sel)%len(fuzzPaths)], bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.True(t, rec.Code >= 200 && rec.Code < 500, "status %d: %s", rec.Code, rec.Body.String())
}

// seeds returns valid requests of each signal in both formats.
func seeds(f *testing.F) (proto, json [][]byte) {
	tr := ptraceotlp.NewExportRequestFromTraces(newTraces(2, 1))
	lg := plogotlp.NewExportRequestFromLogs(newLogs(2))
	mt := pmetricotlp.NewExportRequestFromMetrics(allTypes(time.Unix(1_700_000_000, 0)))
	for _, r := range []interface {
		MarshalProto() ([]byte, error)
		MarshalJSON() ([]byte, error)
	}{tr, lg, mt} {
		p, err := r.MarshalProto()
		require.NoError(f, err)
		j, err := r.MarshalJSON()
		require.NoError(f, err)
		proto, json = append(proto, p), append(json, j)
	}
	return proto, json
}

// FuzzHTTPProto feeds arbitrary binary protobuf to the three OTLP/HTTP
// paths, plain or as a gzip body.
//
//	go test -run '^$' -fuzz FuzzHTTPProto -fuzztime 60s ./internal/ingest/otlp
func FuzzHTTPProto(f *testing.F) {
	proto, _ := seeds(f)
	for i, b := range proto {
		f.Add(uint8(i), false, b)
	}
	f.Add(uint8(0), false, deepTracesProto(9))
	f.Add(uint8(0), true, gzipped(f, proto[0]))
	f.Add(uint8(1), false, []byte("\x0a\xff\xff\xff\xff\x0f"))
	h := fuzzReceiver(f)
	f.Fuzz(func(t *testing.T, sel uint8, gz bool, body []byte) {
		fuzzPost(t, h, sel, contentTypeProto, gz, body)
	})
}

// FuzzHTTPJSON feeds arbitrary OTLP JSON to the three OTLP/HTTP paths.
//
//	go test -run '^$' -fuzz FuzzHTTPJSON -fuzztime 60s ./internal/ingest/otlp
func FuzzHTTPJSON(f *testing.F) {
	_, json := seeds(f)
	for i, b := range json {
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), []byte(tracesJSON))
	f.Add(uint8(0), deepTracesJSON(f, 9))
	f.Add(uint8(2), []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"asInt":"1"}]}}]}]}]}`))
	h := fuzzReceiver(f)
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		fuzzPost(t, h, sel, contentTypeJSON, false, body)
	})
}
