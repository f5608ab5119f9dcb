package otlp

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-obs/vigil/internal/admission"
)

// Content types of OTLP/HTTP.
const (
	contentTypeProto = "application/x-protobuf"
	contentTypeJSON  = "application/json"
)

func (r *Receiver) newHTTPHandler(sigs []*signal) http.Handler {
	mux := http.NewServeMux()
	for _, sig := range sigs {
		mux.HandleFunc(sig.path, func(w http.ResponseWriter, req *http.Request) { r.serveHTTP(w, req, sig) })
	}
	return mux
}

// serveHTTP answers one OTLP/HTTP export request of sig.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request, sig *signal) {
	start := time.Now()
	f, o, ok := r.admit(req)
	// Credentials come first: a client without them learns nothing else.
	if r.checksRequests() {
		ctx, ao, authed := r.authorize(req.Context(), headerMD(req.Header))
		if !authed {
			o, ok = ao, false
			if o.code == codes.Unauthenticated {
				w.Header().Set("WWW-Authenticate", r.challenge())
			}
		} else {
			req = req.WithContext(ctx)
		}
	}
	if ok {
		o = r.exportHTTP(req, sig, f)
	}
	r.observe(transportHTTP, sig, o, time.Since(start))
	writeHTTP(w, sig, f, o)
}

// admit checks the method and content type of req.
func (r *Receiver) admit(req *http.Request) (format, outcome, bool) {
	if req.Method != http.MethodPost {
		o := refuse(codes.Unimplemented, reasonMethod, "OTLP/HTTP takes POST, got "+req.Method)
		o.httpCode = http.StatusMethodNotAllowed
		return formatText, o, false
	}
	ct, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch {
	case err == nil && ct == contentTypeProto:
		return formatProto, outcome{}, true
	case err == nil && ct == contentTypeJSON:
		return formatJSON, outcome{}, true
	}
	o := refuse(codes.InvalidArgument, reasonContentType,
		fmt.Sprintf("unsupported content type %q: OTLP/HTTP takes %s or %s", req.Header.Get("Content-Type"), contentTypeProto, contentTypeJSON))
	o.httpCode = http.StatusUnsupportedMediaType
	return formatText, o, false
}

// exportHTTP reads, decodes and consumes the body of req within the limits.
func (r *Receiver) exportHTTP(req *http.Request, sig *signal, f format) outcome {
	client := admission.ClientOf(req)
	if err := r.opts.Gate.Within(req.Context(), client, admission.IngestWait); err != nil {
		return gateRefusal(err)
	}
	defer r.opts.Gate.Release(client)
	if !r.acquire() {
		return r.tooManyRequests()
	}
	defer r.release()
	// The body is charged to the budget as sent, then decoded.
	ticket, refused := r.opts.Budget.Acquire(client, "otlp", max(req.ContentLength, 0))
	if refused != nil {
		return budgetRefusal(refused)
	}
	defer ticket.Release()
	body, o, ok := r.readBody(req)
	if !ok {
		return o
	}
	expansion := int64(admission.ExpansionOTLPProto)
	if f == formatJSON {
		expansion = admission.ExpansionOTLPJSON
	}
	if refused := ticket.Grow(int64(len(body)) * expansion); refused != nil {
		return budgetRefusal(refused)
	}
	return sig.export(req.Context(), body, f)
}

// gateRefusal is the outcome of a request that did not get its client's
// share of the ingest gate: 429 / ResourceExhausted after the wait, or a
// client gone.
func gateRefusal(err error) outcome {
	var r *admission.Refusal
	if errors.As(err, &r) {
		return refuse(codes.ResourceExhausted, reasonFairShare, r.Msg)
	}
	return refuse(codes.Unavailable, reasonCanceled, "the client went away: "+err.Error())
}

// budgetRefusal is the outcome of a request the in-flight budget refused:
// 503 / Unavailable when the server is full, 429 / ResourceExhausted over
// the client's share (both with a retry hint), 413 when it can never fit.
func budgetRefusal(r *admission.Refusal) outcome {
	switch r.Status {
	case http.StatusServiceUnavailable:
		return refuse(codes.Unavailable, reasonBudget, r.Msg)
	case http.StatusTooManyRequests:
		return refuse(codes.ResourceExhausted, reasonBudget, r.Msg)
	}
	o := refuse(codes.InvalidArgument, reasonTooLarge, r.Msg)
	o.httpCode = http.StatusRequestEntityTooLarge
	return o
}

// readBody reads the body of req, decompressed, within the size limits.
func (r *Receiver) readBody(req *http.Request) ([]byte, outcome, bool) {
	tooLarge := func(what string, limit int64) outcome {
		o := refuse(codes.InvalidArgument, reasonTooLarge, fmt.Sprintf("%s is over the limit of %d bytes", what, limit))
		o.httpCode = http.StatusRequestEntityTooLarge
		return o
	}
	enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding")))
	if enc != "" && enc != "identity" && enc != "gzip" {
		o := refuse(codes.InvalidArgument, reasonEncoding, fmt.Sprintf("unsupported content encoding %q: OTLP/HTTP takes gzip or none", enc))
		o.httpCode = http.StatusUnsupportedMediaType
		return nil, o, false
	}
	limit := r.opts.MaxRequestBytes
	if req.ContentLength > limit {
		return nil, tooLarge("request body", limit), false
	}
	body, err := readAll(req.Body, limit, req.ContentLength)
	switch {
	case err != nil:
		return nil, badRequest(reasonReadBody, "read request body: "+err.Error()), false
	case int64(len(body)) > limit:
		return nil, tooLarge("request body", limit), false
	case enc != "gzip":
		return body, outcome{}, true
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, badRequest(reasonBadGzip, "gunzip request body: "+err.Error()), false
	}
	limit = r.opts.MaxDecompressedBytes
	plain, err := readAll(zr, limit, 4*int64(len(body)))
	switch {
	case err != nil:
		return nil, badRequest(reasonBadGzip, "gunzip request body: "+err.Error()), false
	case int64(len(plain)) > limit:
		return nil, tooLarge("decompressed request body", limit), false
	}
	return plain, outcome{}, true
}

// writeHTTP writes o as the answer: the signal's export response when the
// request was accepted, a google.rpc.Status otherwise, both in the format
// of the request.
func writeHTTP(w http.ResponseWriter, sig *signal, f format, o outcome) {
	if f == formatText {
		if o.httpCode == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodPost)
		}
		http.Error(w, o.msg, o.status())
		return
	}
	var body []byte
	var err error
	if o.code == codes.OK && o.httpCode == 0 {
		if f == formatJSON {
			body, err = sig.response(o).MarshalJSON()
		} else {
			body, err = sig.response(o).MarshalProto()
		}
	} else {
		st := o.grpcStatus().Proto()
		st.Details = nil // retry hints go in Retry-After
		if f == formatJSON {
			body, err = protojson.Marshal(st)
		} else {
			body, err = proto.Marshal(st)
		}
	}
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if f == formatJSON {
		w.Header().Set("Content-Type", contentTypeJSON)
	} else {
		w.Header().Set("Content-Type", contentTypeProto)
	}
	if o.retryable() {
		w.Header().Set("Retry-After", retryAfterHeader)
	}
	w.WriteHeader(o.status())
	_, _ = w.Write(body)
}

// readAll reads r up to limit+1 bytes into a buffer sized for sizeHint
// bytes, so that a body over the limit shows as longer than limit.
func readAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	var buf bytes.Buffer
	if sizeHint > 0 {
		buf.Grow(int(min(sizeHint, limit) + bytes.MinRead))
	}
	_, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	return buf.Bytes(), err
}
