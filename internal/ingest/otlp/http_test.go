package otlp

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// post sends body to url with the content type and encoding given and
// returns the status, the headers and the body of the answer.
func post(t *testing.T, url, contentType, encoding string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func tracesProto(t testing.TB, n, invalid int) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(newTraces(n, invalid)).MarshalProto()
	require.NoError(t, err)
	return b
}

// statusMessage decodes the google.rpc.Status of an OTLP/HTTP error.
func statusMessage(t *testing.T, contentType string, body []byte) string {
	t.Helper()
	var st spb.Status
	if contentType == contentTypeJSON {
		require.NoError(t, protojson.Unmarshal(body, &st))
	} else {
		require.NoError(t, proto.Unmarshal(body, &st))
	}
	return st.GetMessage()
}

const tracesJSON = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},
"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"GET /cart",
"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000",
"attributes":[{"key":"tags","value":{"arrayValue":{"values":[{"stringValue":"a"},{"kvlistValue":{"values":[{"key":"k","value":{"intValue":"1"}}]}}]}}}]}]}]}]}`

// TestHTTPJSON posts OTLP JSON, plain and gzip-compressed, as a plain
// HTTP client would, and gets a JSON answer.
func TestHTTPJSON(t *testing.T) {
	s := &sink{}
	tr := startReceiver(t, s, Options{})
	for _, enc := range []string{"", "gzip"} {
		body := []byte(tracesJSON)
		if enc == "gzip" {
			body = gzipped(t, body)
		}
		code, h, resp := post(t, tr.httpURL+"/v1/traces", "application/json; charset=utf-8", enc, body)
		require.Equal(t, http.StatusOK, code, string(resp))
		require.Equal(t, contentTypeJSON, h.Get("Content-Type"))
		got := ptraceotlp.NewExportResponse()
		require.NoError(t, got.UnmarshalJSON(resp))
		require.Zero(t, got.PartialSuccess().RejectedSpans())
	}
	spans := s.spans()
	require.Len(t, spans, 2)
	require.Equal(t, "GET /cart", spans[0].Name())
	tags, ok := spans[0].Attributes().Get("tags")
	require.True(t, ok)
	require.Equal(t, int64(1), tags.Slice().At(1).Map().AsRaw()["k"])
}

// TestHTTPJSONEverySignal posts OTLP JSON of each signal.
func TestHTTPJSONEverySignal(t *testing.T) {
	s := &sink{}
	tr := startReceiver(t, s, Options{})
	lj, err := plogotlp.NewExportRequestFromLogs(newLogs(2)).MarshalJSON()
	require.NoError(t, err)
	mj, err := pmetricotlp.NewExportRequestFromMetrics(newMetricsData(3, time.Now())).MarshalJSON()
	require.NoError(t, err)
	code, _, resp := post(t, tr.httpURL+"/v1/logs", contentTypeJSON, "", lj)
	require.Equal(t, http.StatusOK, code, string(resp))
	code, _, resp = post(t, tr.httpURL+"/v1/metrics", contentTypeJSON, "gzip", gzipped(t, mj))
	require.Equal(t, http.StatusOK, code, string(resp))
	require.Len(t, s.logRecords(), 2)
	require.Len(t, s.metrics, 1)
	require.Equal(t, 3, s.metrics[0].DataPointCount())
	require.Equal(t, 2.0, counterValue(t, tr.reg, "vigil_otlp_received_log_records_total", "transport", "http"))
	require.Equal(t, 3.0, counterValue(t, tr.reg, "vigil_otlp_received_data_points_total", "transport", "http"))
}

// TestHTTPBadInput sends what a broken or hostile client might, each time
// expecting the status and a reason, and then checks that the receiver
// still takes a good request.
func TestHTTPBadInput(t *testing.T) {
	deep := deepTracesProto(DefaultMaxAttributeDepth + 1)
	f := func(name, path, contentType, encoding string, body []byte, wantCode int, wantMsg string) {
		t.Run(name, func(t *testing.T) {
			s := &sink{}
			tr := startReceiver(t, s, Options{MaxRequestBytes: 64 << 10, MaxDecompressedBytes: 256 << 10})
			code, h, resp := post(t, tr.httpURL+path, contentType, encoding, body)
			require.Equal(t, wantCode, code, string(resp))
			msg := string(resp)
			if ct := h.Get("Content-Type"); ct == contentTypeProto || ct == contentTypeJSON {
				msg = statusMessage(t, ct, resp)
			}
			require.Contains(t, msg, wantMsg)
			require.Empty(t, s.spans(), "nothing of a refused request is consumed")

			code, _, resp = post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", tracesProto(t, 2, 0))
			require.Equal(t, http.StatusOK, code, string(resp))
			require.Len(t, s.spans(), 2)
		})
	}
	f("malformed protobuf", "/v1/traces", contentTypeProto, "", []byte("\x0a\xff\xff\xff\xff\x0f"), 400, "decode OTLP protobuf")
	f("malformed JSON", "/v1/traces", contentTypeJSON, "", []byte(`{"resourceSpans":[{"scopeSpans":[`), 400, "decode OTLP JSON")
	f("JSON of the wrong shape", "/v1/traces", contentTypeJSON, "", []byte(`{"resourceSpans":{"a":1}}`), 400, "decode OTLP JSON")
	f("trace id of the wrong length", "/v1/traces", contentTypeJSON, "", []byte(strings.Replace(tracesJSON, "5b8efff798038103d269b633813fc60c", "5b8e", 1)), 400, "decode OTLP JSON")
	f("all trace ids empty", "/v1/traces", contentTypeProto, "", tracesProto(t, 3, 3), 400, "all 3 spans have an empty trace id or span id")
	f("wrong content type", "/v1/traces", "text/plain", "", tracesProto(t, 1, 0), 415, "unsupported content type")
	f("no content type", "/v1/traces", "", "", tracesProto(t, 1, 0), 415, "unsupported content type")
	f("unsupported encoding", "/v1/traces", contentTypeProto, "br", tracesProto(t, 1, 0), 415, `unsupported content encoding "br"`)
	f("not gzip", "/v1/traces", contentTypeProto, "gzip", tracesProto(t, 1, 0), 400, "gunzip request body")
	f("too large", "/v1/traces", contentTypeProto, "", make([]byte, 65<<10), 413, "request body is over the limit of 65536 bytes")
	f("too large decompressed", "/v1/traces", contentTypeProto, "gzip", gzipped(t, make([]byte, 257<<10)), 413, "decompressed request body is over the limit of 262144 bytes")
	f("deeply nested protobuf", "/v1/traces", contentTypeProto, "", deep, 400, "arrays and maps nested more than 16 deep")
	f("deeply nested JSON", "/v1/traces", contentTypeJSON, "", deepTracesJSON(t, DefaultMaxAttributeDepth+1), 400, "arrays and maps nested more than 16 deep")
	f("unknown path", "/v1/profiles", contentTypeProto, "", tracesProto(t, 1, 0), 404, "404 page not found")
}

// TestHTTPDeepNestingBounded checks that a request nesting lists two
// million levels deep, which exhausts the stack of pdata's decoder and
// kills the process, is refused before decoding with the default limits:
// gzip makes it small, and it is 19 MB decompressed.
func TestHTTPDeepNestingBounded(t *testing.T) {
	s := &sink{}
	tr := startReceiver(t, s, Options{})
	code, h, resp := post(t, tr.httpURL+"/v1/traces", contentTypeProto, "gzip", gzipped(t, twoMillionLevels()))
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, statusMessage(t, h.Get("Content-Type"), resp), "nested more than 16 deep")

	code, h, resp = post(t, tr.httpURL+"/v1/traces", contentTypeJSON, "gzip", gzipped(t, deepTracesJSON(t, 200_000)))
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, statusMessage(t, h.Get("Content-Type"), resp), "nested more than 16 deep")
	require.Equal(t, 2.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "http", "signal", "traces", "reason", reasonTooDeep))
}

// TestHTTPAttributeDepthLimit: a value exactly as deep as the limit goes
// in.
func TestHTTPAttributeDepthLimit(t *testing.T) {
	s := &sink{}
	tr := startReceiver(t, s, Options{MaxAttributeDepth: 4})
	code, _, resp := post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", deepTracesProto(4))
	require.Equal(t, http.StatusOK, code, string(resp))
	code, _, resp = post(t, tr.httpURL+"/v1/traces", contentTypeJSON, "", deepTracesJSON(t, 4))
	require.Equal(t, http.StatusOK, code, string(resp))
	code, _, _ = post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", deepTracesProto(5))
	require.Equal(t, http.StatusBadRequest, code)
	code, _, _ = post(t, tr.httpURL+"/v1/traces", contentTypeJSON, "", deepTracesJSON(t, 5))
	require.Equal(t, http.StatusBadRequest, code)
	require.Len(t, s.spans(), 2)
}

// TestHTTPPartialSuccess: spans without a trace id are refused one by one,
// in the answer's partial_success, and the consumer's PartialError adds to
// them.
func TestHTTPPartialSuccess(t *testing.T) {
	s := &sink{fail: func(int) error { return PartialError{Rejected: 2, Msg: "2 spans over the tenant's quota"} }}
	tr := startReceiver(t, s, Options{})
	for _, ct := range []string{contentTypeProto, contentTypeJSON} {
		body := tracesProto(t, 5, 1)
		if ct == contentTypeJSON {
			var err error
			body, err = ptraceotlp.NewExportRequestFromTraces(newTraces(5, 1)).MarshalJSON()
			require.NoError(t, err)
		}
		code, _, resp := post(t, tr.httpURL+"/v1/traces", ct, "", body)
		require.Equal(t, http.StatusOK, code)
		got := ptraceotlp.NewExportResponse()
		if ct == contentTypeJSON {
			require.NoError(t, got.UnmarshalJSON(resp))
		} else {
			require.NoError(t, got.UnmarshalProto(resp))
		}
		require.Equal(t, int64(3), got.PartialSuccess().RejectedSpans())
		require.Equal(t, "2 spans over the tenant's quota; 1 spans with an empty trace id or span id", got.PartialSuccess().ErrorMessage())
	}
	require.Equal(t, 4.0, counterValue(t, tr.reg, "vigil_otlp_rejected_items_total", "transport", "http", "signal", "traces", "reason", reasonPartial))
	require.Equal(t, 2.0, counterValue(t, tr.reg, "vigil_otlp_rejected_items_total", "transport", "http", "signal", "traces", "reason", reasonInvalidID))
	require.Equal(t, 4.0, counterValue(t, tr.reg, "vigil_otlp_received_spans_total", "transport", "http"))
}

// TestHTTPConsumerErrors: ErrOverloaded asks for a retry (503 with
// Retry-After), any other error is a 500 without one.
func TestHTTPConsumerErrors(t *testing.T) {
	f := func(err error, wantCode int, wantRetryAfter string) {
		t.Run(err.Error(), func(t *testing.T) {
			tr := startReceiver(t, &sink{fail: func(int) error { return err }}, Options{})
			code, h, resp := post(t, tr.httpURL+"/v1/logs", contentTypeProto, "", logsProto(t, 1))
			require.Equal(t, wantCode, code)
			require.Equal(t, wantRetryAfter, h.Get("Retry-After"))
			require.Contains(t, statusMessage(t, contentTypeProto, resp), err.Error())
		})
	}
	f(fmt.Errorf("store logs: %w", ErrOverloaded), 503, "1")
	f(errors.New("disk full"), 500, "")
}

// TestHTTPMethod: OTLP/HTTP takes POST only.
func TestHTTPMethod(t *testing.T) {
	tr := startReceiver(t, &sink{}, Options{})
	resp, err := http.Get(tr.httpURL + "/v1/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	require.Contains(t, string(b), "OTLP/HTTP takes POST, got GET")
}
