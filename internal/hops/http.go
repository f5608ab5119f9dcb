package hops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/envelope"
	"github.com/vigil-obs/vigil/internal/traces"
)

// Window bounds of /api/v1/slow.
const (
	DefaultWindow = 15 * time.Minute
	MaxWindow     = 7 * 24 * time.Hour
)

// SlowResult is the data of /api/v1/slow.
type SlowResult struct {
	From   time.Time        `json:"from"`
	To     time.Time        `json:"to"`
	Routes []RouteBreakdown `json:"routes"`
}

// NewHandler serves the breakdowns over HTTP, in the envelope of
// Prometheus's API ({"status":"success","data":...} or
// {"status":"error","errorType":"bad_data","error":"..."}):
//
//   - GET /api/v1/traces/{id}/breakdown: data is the Trace; 400 for an id
//     that is not 32 hex digits, 404 when no span of it is stored.
//   - GET /api/v1/slow?route=&window=15m&end=: data is a SlowResult: the
//     route's breakdown over the window ending at end (default: now), or,
//     without route, every route's, slowest first.
//
// now is the clock (nil: time.Now). The caller mounts the handler on those
// paths.
func NewHandler(st *traces.Store, now func() time.Time, logger *slog.Logger) http.Handler {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{st: st, now: now, logger: logger.With("component", "hops_api")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/traces/{id}/breakdown", h.breakdown)
	mux.HandleFunc("GET /api/v1/slow", h.slow)
	return mux
}

type handler struct {
	st     *traces.Store
	now    func() time.Time
	logger *slog.Logger
}

func (h *handler) breakdown(w http.ResponseWriter, r *http.Request) {
	id, err := traces.ParseTraceID(r.PathValue("id"))
	if err != nil {
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
		return
	}
	td, err := h.st.Trace(r.Context(), id)
	if err != nil {
		h.storeError(w, err)
		return
	}
	envelope.WriteData(w, Breakdown(td))
}

func (h *handler) slow(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	window, err := ParseWindow(q.Get("window"))
	if err != nil {
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
		return
	}
	end := h.now()
	if s := q.Get("end"); s != "" {
		if end, err = envelope.ParseTime("end", s); err != nil {
			envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
			return
		}
	}
	res := SlowResult{From: end.Add(-window).UTC(), To: end.UTC(), Routes: []RouteBreakdown{}}
	if route := q.Get("route"); route != "" {
		rb, err := Aggregate(r.Context(), h.st, route, res.From, res.To)
		if err != nil {
			h.storeError(w, err)
			return
		}
		res.Routes = append(res.Routes, rb)
	} else {
		if res.Routes, err = Routes(r.Context(), h.st, res.From, res.To); err != nil {
			h.storeError(w, err)
			return
		}
	}
	envelope.WriteData(w, res)
}

// ParseWindow reads a window such as 15m, 1h or 90s (Go's or
// Prometheus's durations); "" is DefaultWindow. It must be positive and
// at most MaxWindow.
func ParseWindow(s string) (time.Duration, error) {
	if s == "" {
		return DefaultWindow, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		md, merr := model.ParseDuration(s)
		if merr != nil {
			return 0, fmt.Errorf("window %q: want a duration such as 15m or 1h", s)
		}
		d = time.Duration(md)
	}
	if d <= 0 || d > MaxWindow {
		return 0, fmt.Errorf("window %q: want more than 0 and at most %s", s, model.Duration(MaxWindow))
	}
	return d, nil
}

// storeError answers a store error with its status.
func (h *handler) storeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, traces.ErrNotFound):
		envelope.WriteError(w, http.StatusNotFound, "not_found", err)
	case errors.Is(err, traces.ErrBadQuery):
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
	case errors.Is(err, context.Canceled):
		envelope.WriteError(w, 499, "canceled", err)
	case errors.Is(err, context.DeadlineExceeded):
		envelope.WriteError(w, http.StatusServiceUnavailable, "timeout", err)
	case errors.Is(err, traces.ErrClosed):
		envelope.WriteError(w, http.StatusServiceUnavailable, "unavailable", err)
	default:
		h.logger.Error("breakdown request", "err", err)
		envelope.WriteError(w, http.StatusInternalServerError, "internal", err)
	}
}
