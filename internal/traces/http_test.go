package traces

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

func get(t *testing.T, h http.Handler, path string) (int, apiResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	var r apiResponse
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return rec.Code, r
}

func TestHTTPTrace(t *testing.T) {
	s := logged(t)
	h := NewHandler(s.Store, nil)

	code, r := get(t, h, "/api/v1/traces/"+tid(1).String())
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "success", r.Status)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(r.Data)
	require.NoError(t, err, "data is OTLP JSON")
	require.ElementsMatch(t, []byte{1, 2}, spanIDs(td))
	// Upper-case hex is an id too.
	code, _ = get(t, h, "/api/v1/traces/"+strings.ToUpper(tid(1).String()))
	require.Equal(t, http.StatusOK, code)

	for path, want := range map[string]string{
		"/api/v1/traces/abc":                                         `trace id "abc": want 32 hex digits, got 3 characters`,
		"/api/v1/traces/zz" + strings.Repeat("0", 30):                "is not hexadecimal",
		"/api/v1/traces/" + strings.Repeat("0", 32):                  "all zeros",
		"/api/v1/traces/" + tid(1).String() + "0":                    "got 33 characters",
		"/api/v1/traces?limit=x":                                     `limit="x"`,
		"/api/v1/traces?start=yesterday":                             `start="yesterday": want RFC 3339 or Unix seconds`,
		"/api/v1/traces?min_duration=fast":                           `min_duration="fast"`,
		"/api/v1/traces?error=maybe":                                 `error="maybe"`,
		"/api/v1/traces?start=2000&end=1000":                         "end 1970-01-01T00:16:40Z is before start",
		"/api/v1/traces?min_duration=2s&max_duration=1s":             "max duration 1s is below min duration 2s",
		"/api/v1/logs?trace_id=12":                                   "want 32 hex digits",
		"/api/v1/logs?trace_id=" + tid(1).String() + "&request_id=a": "not both",
		"/api/v1/logs?limit=-3":                                      `limit="-3"`,
	} {
		code, r := get(t, h, path)
		require.Equal(t, http.StatusBadRequest, code, path)
		require.Equal(t, "error", r.Status, path)
		require.Equal(t, "bad_data", r.ErrorType, path)
		require.Contains(t, r.Error, want, path)
	}

	code, r = get(t, h, "/api/v1/traces/"+tid(42).String())
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "not_found", r.ErrorType)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/traces", nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

func TestHTTPSearch(t *testing.T) {
	s := logged(t)
	h := NewHandler(s.Store, nil)
	q := url.Values{
		"service": {"gateway"}, "start": {t0.Add(15 * time.Minute).Format(time.RFC3339)},
		"end":   {strconv.FormatInt(t0.Add(75*time.Minute).Unix(), 10)}, // Unix seconds
		"limit": {"10"},
	}
	code, r := get(t, h, "/api/v1/traces?"+q.Encode())
	require.Equal(t, http.StatusOK, code, r.Error)
	var found []map[string]any
	require.NoError(t, json.Unmarshal(r.Data, &found))
	require.Len(t, found, 2)
	require.Equal(t, map[string]any{
		"trace_id": tid(2).String(), "root_service": "gateway", "root_operation": "GET /b",
		"start": "2026-11-12T02:20:00Z", "duration_seconds": 2.0, "span_count": 2.0, "error": false,
		"services": []any{"auth", "gateway"}, "tenant": "globex",
	}, found[1])

	code, r = get(t, h, "/api/v1/traces?error=true&min_duration=1.5s")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(r.Data, &found))
	require.Len(t, found, 1)
	require.Equal(t, tid(4).String(), found[0]["trace_id"])

	code, r = get(t, h, "/api/v1/traces?service=nope")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `[]`, string(r.Data))

	code, r = get(t, h, "/api/v1/logs?request_id=req-1&service=billing")
	require.Equal(t, http.StatusOK, code)
	var recs []map[string]any
	require.NoError(t, json.Unmarshal(r.Data, &recs))
	require.Len(t, recs, 1)
	require.Equal(t, map[string]any{
		"time": "2026-11-12T02:15:00Z", "service": "billing",
		"body":       map[string]any{"msg": "charged", "ctx": map[string]any{"requestId": "req-1"}},
		"attributes": map[string]any{}, "resource": map[string]any{"service.name": "billing"},
		"correlation_ids": []any{"req-1"},
	}, recs[0])

	code, r = get(t, h, "/api/v1/logs?trace_id="+tid(1).String())
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(r.Data, &recs))
	require.Len(t, recs, 2)
	require.Equal(t, tid(1).String(), recs[0]["trace_id"])
	require.Equal(t, sid(1).String(), recs[0]["span_id"])

	code, r = get(t, h, "/api/v1/logs?request_id=nope")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `[]`, string(r.Data))
}

func TestHTTPClosed(t *testing.T) {
	s := open(t, nil)
	h := NewHandler(s.Store, nil)
	require.NoError(t, s.Close())
	code, r := get(t, h, "/api/v1/traces")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "unavailable", r.ErrorType)
}
