// Package envelope writes Prometheus's HTTP API envelope
// ({"status":"success","data":...} or {"status":"error","errorType":...,
// "error":...}) and reads the query parameters its APIs share (times as
// RFC 3339 or Unix seconds, durations as Go's or Prometheus's), for Vigil's
// own endpoints beside the Prometheus query API: incidents, traces, logs,
// per-hop breakdowns. It owns no route.
package envelope

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

type body struct {
	Status    string `json:"status"`
	Data      any    `json:"data,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

// WriteData answers 200 with data in the success envelope.
func WriteData(w http.ResponseWriter, data any) {
	write(w, http.StatusOK, body{Status: "success", Data: data})
}

// WriteError answers code with the error envelope; typ is Prometheus's
// errorType (bad_data, not_found, internal, unavailable, ...).
func WriteError(w http.ResponseWriter, code int, typ string, err error) {
	write(w, code, body{Status: "error", ErrorType: typ, Error: err.Error()})
}

func write(w http.ResponseWriter, code int, e body) {
	b, err := json.Marshal(e)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(body{Status: "error", ErrorType: "internal", Error: "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// ParseTime reads the parameter name's value s as RFC 3339 or Unix
// seconds; "" is the zero time.
func ParseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1e12 {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s=%q: want RFC 3339 or Unix seconds", name, s)
	}
	return t, nil
}

// ParseDuration reads the parameter name's value s as Go's or
// Prometheus's duration (250ms, 1.5s, 2m, 1d); "" is 0. Negative
// durations are refused.
func ParseDuration(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("%s=%q: want a duration such as 250ms, 1.5s or 2m", name, s)
}
