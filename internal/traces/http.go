package traces

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/vigil-obs/vigil/internal/envelope"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// NewHandler serves the store over HTTP, in the envelope of Prometheus's
// API ({"status":"success","data":...} or {"status":"error","errorType":
// "bad_data","error":"..."}):
//
//   - GET /api/v1/traces/{id}: data is the trace as OTLP JSON (an
//     ExportTraceServiceRequest, as the Collector's file exporter and
//     `vigil simulate` write it); 400 for an id that is not 32 hex digits
//     or is all zeros, 404 when no span of it is stored.
//   - GET /api/v1/traces?service=&operation=&tenant=&correlation_id=&start=&end=&min_duration=&max_duration=&error=&limit=:
//     data is a list of trace summaries (see TraceQuery for the meaning).
//   - GET /api/v1/logs?request_id=|trace_id=&service=&start=&end=&limit=:
//     data is a list of log records, oldest first; request_id follows the
//     request through its traces (see LogsForRequest).
//
// Times are RFC 3339 or Unix seconds; durations Go's ("1.5s") or
// Prometheus's ("2m"). The caller mounts the handler on those paths.
func NewHandler(st *Store, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{st: st, logger: logger.With("component", "traces_api")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/traces/{id}", h.trace)
	mux.HandleFunc("GET /api/v1/traces", h.searchTraces)
	mux.HandleFunc("GET /api/v1/logs", h.searchLogs)
	return mux
}

type handler struct {
	st     *Store
	logger *slog.Logger
}

// ParseTraceID reads a trace id written as 32 hex digits.
func ParseTraceID(s string) (pcommon.TraceID, error) {
	var id pcommon.TraceID
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("trace id %q: want 32 hex digits, got %d characters", s, len(s))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("trace id %q is not hexadecimal", s)
	}
	if id.IsEmpty() {
		return id, fmt.Errorf("trace id %q is all zeros, which OTLP reserves for no trace", s)
	}
	return id, nil
}

func (h *handler) trace(w http.ResponseWriter, r *http.Request) {
	id, err := ParseTraceID(r.PathValue("id"))
	if err != nil {
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
		return
	}
	td, err := h.st.Trace(r.Context(), id)
	if err != nil {
		h.storeError(w, err)
		return
	}
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		envelope.WriteError(w, http.StatusInternalServerError, "internal", fmt.Errorf("encode trace: %w", err))
		return
	}
	envelope.WriteData(w, json.RawMessage(b))
}

func (h *handler) searchTraces(w http.ResponseWriter, r *http.Request) {
	q, err := traceQueryOf(r.URL.Query())
	if err != nil {
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
		return
	}
	found, err := h.st.SearchTraces(r.Context(), q)
	if err != nil {
		h.storeError(w, err)
		return
	}
	envelope.WriteData(w, found)
}

func (h *handler) searchLogs(w http.ResponseWriter, r *http.Request) {
	q, err := logQueryOf(r.URL.Query())
	if err != nil {
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
		return
	}
	recs, err := h.st.SearchLogs(r.Context(), q)
	if err != nil {
		h.storeError(w, err)
		return
	}
	if recs == nil {
		recs = []LogRecord{}
	}
	envelope.WriteData(w, recs)
}

func traceQueryOf(v url.Values) (TraceQuery, error) {
	q := TraceQuery{
		Service: v.Get("service"), Operation: v.Get("operation"),
		Tenant: v.Get("tenant"), CorrelationID: v.Get("correlation_id"),
	}
	var err error
	if q.Start, q.End, q.Limit, err = commonParams(v); err != nil {
		return q, err
	}
	if q.MinDuration, err = envelope.ParseDuration("min_duration", v.Get("min_duration")); err != nil {
		return q, err
	}
	if q.MaxDuration, err = envelope.ParseDuration("max_duration", v.Get("max_duration")); err != nil {
		return q, err
	}
	if s := v.Get("error"); s != "" {
		if q.ErrorOnly, err = strconv.ParseBool(s); err != nil {
			return q, fmt.Errorf("error=%q: want true or false", s)
		}
	}
	return q, nil
}

func logQueryOf(v url.Values) (LogQuery, error) {
	q := LogQuery{RequestID: v.Get("request_id"), Service: v.Get("service")}
	var err error
	if q.Start, q.End, q.Limit, err = commonParams(v); err != nil {
		return q, err
	}
	if s := v.Get("trace_id"); s != "" {
		if q.RequestID != "" {
			return q, errors.New("give request_id or trace_id, not both")
		}
		if q.TraceID, err = ParseTraceID(s); err != nil {
			return q, err
		}
	}
	return q, nil
}

// commonParams reads start, end and limit.
func commonParams(v url.Values) (start, end time.Time, limit int, err error) {
	if start, err = envelope.ParseTime("start", v.Get("start")); err != nil {
		return
	}
	if end, err = envelope.ParseTime("end", v.Get("end")); err != nil {
		return
	}
	if s := v.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 0 {
			return start, end, 0, fmt.Errorf("limit=%q: want a whole number of at least 0", s)
		}
	}
	return start, end, limit, nil
}

// storeError answers a store error with its status.
func (h *handler) storeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		envelope.WriteError(w, http.StatusNotFound, "not_found", err)
	case errors.Is(err, ErrBadQuery):
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
	case errors.Is(err, context.Canceled):
		envelope.WriteError(w, 499, "canceled", err)
	case errors.Is(err, context.DeadlineExceeded):
		envelope.WriteError(w, http.StatusServiceUnavailable, "timeout", err)
	case errors.Is(err, ErrClosed):
		envelope.WriteError(w, http.StatusServiceUnavailable, "unavailable", err)
	default:
		h.logger.Error("trace store request", "err", err)
		envelope.WriteError(w, http.StatusInternalServerError, "internal", err)
	}
}

// MarshalJSON writes the summary as the HTTP API serves it.
func (t TraceSummary) MarshalJSON() ([]byte, error) {
	services := t.Services
	if services == nil {
		services = []string{}
	}
	return json.Marshal(struct {
		TraceID         string    `json:"trace_id"`
		RootService     string    `json:"root_service"`
		RootOperation   string    `json:"root_operation"`
		Start           time.Time `json:"start"`
		DurationSeconds float64   `json:"duration_seconds"`
		SpanCount       int       `json:"span_count"`
		Error           bool      `json:"error"`
		Services        []string  `json:"services"`
		Tenant          string    `json:"tenant,omitempty"`
	}{
		t.TraceID.String(), t.RootService, t.RootOperation, t.Start, t.Duration.Seconds(),
		t.SpanCount, t.Error, services, t.Tenant,
	})
}

// MarshalJSON writes the record as the HTTP API serves it.
func (l LogRecord) MarshalJSON() ([]byte, error) {
	type scope struct {
		Name    string `json:"name,omitempty"`
		Version string `json:"version,omitempty"`
	}
	out := struct {
		Time           time.Time      `json:"time"`
		ObservedTime   *time.Time     `json:"observed_time,omitempty"`
		Service        string         `json:"service"`
		SeverityText   string         `json:"severity_text,omitempty"`
		SeverityNumber int32          `json:"severity_number,omitempty"`
		Body           any            `json:"body"`
		Attributes     map[string]any `json:"attributes"`
		Resource       map[string]any `json:"resource"`
		Scope          *scope         `json:"scope,omitempty"`
		TraceID        string         `json:"trace_id,omitempty"`
		SpanID         string         `json:"span_id,omitempty"`
		CorrelationIDs []string       `json:"correlation_ids,omitempty"`
	}{
		Time: l.Time, Service: l.Service, SeverityText: l.SeverityText,
		SeverityNumber: int32(l.SeverityNumber), Body: l.Body.AsRaw(),
		Attributes: l.Attributes.AsRaw(), Resource: l.Resource.Attributes().AsRaw(),
		CorrelationIDs: l.CorrelationIDs,
	}
	if !l.ObservedTime.IsZero() {
		out.ObservedTime = &l.ObservedTime
	}
	if n, v := l.Scope.Name(), l.Scope.Version(); n != "" || v != "" {
		out.Scope = &scope{Name: n, Version: v}
	}
	if !l.TraceID.IsEmpty() {
		out.TraceID = l.TraceID.String()
	}
	if !l.SpanID.IsEmpty() {
		out.SpanID = l.SpanID.String()
	}
	return json.Marshal(out)
}
