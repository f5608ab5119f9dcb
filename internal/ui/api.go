package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/vigil-obs/vigil/internal/envelope"
)

// APIs returns the JSON of the pages that have their own, by path: what
// each page shows, in the API's envelope, for internal/api to mount next
// to its own endpoints.
func (h *Handler) APIs() map[string]http.Handler {
	return map[string]http.Handler{
		"/api/v1/gpus":      h.GPUsAPI(),
		"/api/v1/platform":  h.questionAPI(func(ctx context.Context, w timeRange) (any, error) { return h.platform(ctx, w) }),
		"/api/v1/inference": h.questionAPI(func(ctx context.Context, w timeRange) (any, error) { return h.inference(ctx, w) }),
		"/api/v1/failures":  h.questionAPI(func(ctx context.Context, w timeRange) (any, error) { return h.failures(ctx, w) }),
		"/api/v1/tenants":   h.questionAPI(func(ctx context.Context, w timeRange) (any, error) { return h.tenants(ctx, w) }),
		"/api/v1/topology":  h.topologyAPI(),
		"/api/v1/cost":      h.CostAPI(),
	}
}

// questionAPI serves a question page's data over ?from=&to= (the page's
// window: the last hour by default).
func (h *Handler) questionAPI(build func(ctx context.Context, w timeRange) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		win, ok := h.apiWindow(w, r)
		if !ok {
			return
		}
		v, err := build(r.Context(), win)
		if err != nil {
			envelope.WriteError(w, http.StatusInternalServerError, "execution", fmt.Errorf("%s: %w", r.URL.Path, err))
			return
		}
		envelope.WriteData(w, v)
	})
}

// apiWindow is the window of a page's JSON: a GET's ?from=&to= (the last
// hour by default). A request that is no GET, or a bad range, is answered
// here, and ok is false.
func (h *Handler) apiWindow(w http.ResponseWriter, r *http.Request) (win timeRange, ok bool) {
	if r.Method != http.MethodGet {
		envelope.WriteError(w, http.StatusMethodNotAllowed, "bad_data", errors.New("only GET"))
		return timeRange{}, false
	}
	now := h.opts.Now()
	rng, err := parseRange(r.URL.Query().Get("from"), r.URL.Query().Get("to"), now)
	if err != nil {
		envelope.WriteError(w, http.StatusBadRequest, "bad_data", err)
		return timeRange{}, false
	}
	return questionWindow(rng, now), true
}
