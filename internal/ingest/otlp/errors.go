package otlp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ErrOverloaded is what a consumer's error wraps when it cannot take more
// now: the client gets 503 / Unavailable with a retry hint and sends the
// request again later.
var ErrOverloaded = errors.New("overloaded")

// PartialError is what a consumer returns when it refused part of the data
// for good (and took the rest): the client gets 200 / OK with
// partial_success, Rejected items and Msg, and does not retry. Rejected 0
// with a Msg is a warning.
type PartialError struct {
	// Rejected is the number of spans, log records or data points refused.
	Rejected int
	// Msg says why, for the client's logs.
	Msg string
}

// Error says how many items were refused and why.
func (e PartialError) Error() string {
	return fmt.Sprintf("%d rejected: %s", e.Rejected, e.Msg)
}

// exhausted reports whether err is a gRPC RESOURCE_EXHAUSTED status (a
// tenant's limit refuses it so).
func exhausted(err error) bool {
	var gs interface{ GRPCStatus() *status.Status }
	return errors.As(err, &gs) && gs.GRPCStatus().Code() == codes.ResourceExhausted
}

// retryAfter is the delay the retry hints ask for.
const retryAfter = time.Second

// Reasons of refusals, the values of the reason label of the metrics.
const (
	reasonBadProtobuf     = "bad_protobuf"
	reasonBadJSON         = "bad_json"
	reasonBadGzip         = "bad_gzip"
	reasonReadBody        = "body_read_error"
	reasonTooLarge        = "too_large"
	reasonTooDeep         = "too_deep"
	reasonInvalidID       = "invalid_id"
	reasonContentType     = "unsupported_content_type"
	reasonEncoding        = "unsupported_encoding"
	reasonMethod          = "method_not_allowed"
	reasonSignalOff       = "signal_off"
	reasonTooManyRequests = "too_many_requests"
	reasonBudget          = "inflight_bytes"
	reasonFairShare       = "fair_share"
	reasonOverloaded      = "consumer_overloaded"
	reasonPartial         = "consumer_partial"
	reasonConsumer        = "consumer_error"
	reasonCanceled        = "canceled"
	reasonTenantLimit     = "tenant_limit"
)

// outcome is what became of one export request, for either transport.
type outcome struct {
	// code is the gRPC status code; OK covers partial success.
	code codes.Code
	// httpCode overrides the HTTP status code derived from code.
	httpCode int
	// reason labels the refusal of a request refused as a whole.
	reason string
	msg    string
	// accepted items went to the consumer and were not refused by it.
	accepted int
	// rejected items, refused by the validation (invalid ids) or the
	// consumer, with partialMsg saying why and parts counting them by
	// reason.
	rejected   int
	partialMsg string
	parts      []part
}

// part counts the items of a partial success refused for one reason.
type part struct {
	reason string
	n      int
}

func refuse(code codes.Code, reason, msg string) outcome {
	return outcome{code: code, reason: reason, msg: clean(msg)}
}

// maxMsg bounds the messages of answers.
const maxMsg = 1024

// clean makes msg, which may quote the request or a consumer, fit for an
// answer: valid UTF-8 (protobuf strings must be) and at most maxMsg bytes.
func clean(msg string) string {
	if len(msg) > maxMsg {
		msg = msg[:maxMsg] + "…"
	}
	return strings.ToValidUTF8(msg, "\ufffd")
}

func badRequest(reason, msg string) outcome {
	return refuse(codes.InvalidArgument, reason, msg)
}

// retryable reports whether the outcome carries a retry hint.
func (o outcome) retryable() bool {
	return o.code == codes.Unavailable || o.code == codes.ResourceExhausted
}

// status returns the HTTP status code: the OTLP/HTTP equivalent of code.
func (o outcome) status() int {
	if o.httpCode != 0 {
		return o.httpCode
	}
	switch o.code {
	case codes.OK:
		return 200
	case codes.InvalidArgument:
		return 400
	case codes.ResourceExhausted:
		return 429
	case codes.Unavailable:
		return 503
	case codes.Unimplemented:
		return 404
	case codes.Unauthenticated:
		return 401
	case codes.PermissionDenied:
		return 403
	}
	return 500
}

// grpcStatus returns the gRPC status of a refusal, with RetryInfo when the
// client should retry.
func (o outcome) grpcStatus() *status.Status {
	st := status.New(o.code, o.msg)
	if !o.retryable() {
		return st
	}
	withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	if err != nil {
		return st
	}
	return withInfo
}

// retryAfterHeader is the value of the Retry-After header, in seconds.
var retryAfterHeader = strconv.Itoa(int(retryAfter / time.Second))

// partial adds n items refused for good to o.
func (o *outcome) partial(n int, reason, msg string) {
	if n == 0 && msg == "" {
		return
	}
	o.rejected += n
	o.parts = append(o.parts, part{reason, n})
	if o.partialMsg != "" {
		o.partialMsg += "; "
	}
	o.partialMsg = clean(o.partialMsg + msg)
}

// consumed turns what a consumer returned for n items into an outcome.
func consumed(ctx context.Context, n int, err error) outcome {
	if err == nil {
		return outcome{code: codes.OK, accepted: n}
	}
	var pe PartialError
	var ppe *PartialError
	switch {
	case errors.As(err, &pe):
	case errors.As(err, &ppe) && ppe != nil:
		pe = *ppe
	case errors.Is(err, ErrOverloaded):
		return refuse(codes.Unavailable, reasonOverloaded, "consume: "+err.Error()+": retry later")
	case exhausted(err):
		// A tenant over its rate (internal/tenant/limits): 429 /
		// RESOURCE_EXHAUSTED, which OTLP clients retry with backoff.
		return refuse(codes.ResourceExhausted, reasonTenantLimit, err.Error())
	case ctx.Err() != nil:
		return refuse(codes.Unavailable, reasonCanceled, "consume: "+err.Error())
	default:
		return refuse(codes.Internal, reasonConsumer, "consume: "+err.Error())
	}
	rejected := min(max(pe.Rejected, 0), n)
	o := outcome{code: codes.OK, accepted: n - rejected}
	o.partial(rejected, reasonPartial, pe.Msg)
	return o
}
