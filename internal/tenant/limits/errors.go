package limits

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// LimitError is a refusal because a tenant is over one of its limits.
type LimitError struct {
	// Tenant is the tenant over its limit.
	Tenant string
	// Limit is the limit's name in the limits file, e.g. "ingestion_rate".
	Limit string
	// Msg says what was exceeded, with the limit's value and units.
	Msg string
	// RetryAfter, when positive, is how long until the same request would
	// be accepted (rate limits only).
	RetryAfter time.Duration
	// cause is what ended a wait (a context's error), if anything.
	cause error
}

// Error reads like Mimir's: `tenant "a": ingestion rate limit (100
// samples/s, burst 200) exceeded while adding 500 samples; see
// ingestion_rate in the limits file`.
func (e *LimitError) Error() string {
	return fmt.Sprintf("tenant %q: %s; see %s in the limits file", e.Tenant, e.Msg, e.Limit)
}

// Unwrap returns what ended a wait for a query slot (the context's error),
// or nil.
func (e *LimitError) Unwrap() error { return e.cause }

// StatusCode is the HTTP status of the refusal. 429 Too Many Requests
// when trying again later can succeed (the rates, query concurrency, push
// groups); otherwise the status that tells a client not to send the same
// request again, as Mimir and Prometheus answer: 413 Request Entity Too
// Large for max_request_bytes, 400 Bad Request for the series limits (a
// partial write: the request's other series were stored, and a remote
// write client retrying a 429 would resend it forever), 422 Unprocessable
// Entity for max_query_samples (the same query would load as much again).
func (e *LimitError) StatusCode() int {
	switch e.Limit {
	case MaxRequestBytes:
		return http.StatusRequestEntityTooLarge
	case MaxActiveSeries, MaxSeriesPerMetric:
		return http.StatusBadRequest
	case MaxQuerySamples:
		return http.StatusUnprocessableEntity
	}
	return http.StatusTooManyRequests
}

// GRPCStatus makes the error a RESOURCE_EXHAUSTED status for gRPC servers
// (status.FromError finds it), with a RetryInfo detail when waiting helps:
// OTLP clients retry RESOURCE_EXHAUSTED only when it carries one.
func (e *LimitError) GRPCStatus() *status.Status {
	s := status.New(codes.ResourceExhausted, e.Error())
	if e.RetryAfter <= 0 {
		return s
	}
	if d, err := s.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)}); err == nil {
		return d
	}
	return s
}

// IsLimitError tells whether err is, or wraps, a *LimitError.
func IsLimitError(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
}

// WriteHTTP writes err as the response when it is a *LimitError: its
// StatusCode (429 for the rates and most limits), the message as plain
// text, and for rate limits a Retry-After header in whole seconds. It
// returns false, and writes nothing, for any other error.
func WriteHTTP(w http.ResponseWriter, err error) bool {
	var le *LimitError
	if !errors.As(err, &le) {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if le.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(retrySeconds(le.RetryAfter), 10))
	}
	w.WriteHeader(le.StatusCode())
	_, _ = fmt.Fprintln(w, le.Error())
	return true
}

// retrySeconds rounds d up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int64 {
	s := math.Ceil(d.Seconds())
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(int64(s), 1)
}
