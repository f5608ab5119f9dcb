package remotewrite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/admission"
)

// Rejection reasons, the values of the reason label of Vigil's metrics.
const (
	reasonBodyTooLarge      = "body_too_large"
	reasonDecodedTooLarge   = "decoded_too_large"
	reasonReadBody          = "body_read_error"
	reasonBadSnappy         = "bad_snappy"
	reasonBadProtobuf       = "bad_protobuf"
	reasonContentType       = "unsupported_content_type"
	reasonEncoding          = "unsupported_encoding"
	reasonMethod            = "method_not_allowed"
	reasonSamplesPerRequest = "samples_per_request"
	reasonOverloaded        = "overloaded"
	reasonInvalidLabels     = "invalid_labels"
	reasonLabelCount        = "label_count"
	reasonLabelNameLength   = "label_name_length"
	reasonLabelValueLength  = "label_value_length"
	reasonActiveSeries      = "active_series"
	reasonOutOfOrder        = "out_of_order"
	reasonTooOld            = "too_old"
	reasonOutOfBounds       = "out_of_bounds"
	reasonDuplicate         = "duplicate_timestamp"
	reasonBadHistogram      = "bad_histogram"
	reasonEmptySeries       = "empty_series"
	reasonTenantLimit       = "tenant_limit"
	reasonStorage           = "storage_error"
)

// ActiveSeries is what the active-series limit needs from the store.
type ActiveSeries interface {
	// NumSeries returns the number of series in the head.
	NumSeries() uint64
	// SeriesExists reports whether the head holds exactly lset.
	SeriesExists(ctx context.Context, lset labels.Labels) (bool, error)
}

// Options configure the receiver.
type Options struct {
	// Appendable receives the samples; its appenders must implement
	// storage.ExemplarAppenderV2 for exemplars to be kept.
	Appendable storage.AppendableV2
	// Series enforces Limits.MaxActiveSeries; nil turns that limit off.
	Series ActiveSeries
	Limits Limits
	// Budget bounds the bytes the requests in flight hold, shared with
	// the other ingest paths; nil: only MaxInflightRequests bounds them.
	Budget *admission.Budget
	// Gate shares the ingest slots between clients, with OTLP and push;
	// a request waits for its client's share at most
	// admission.IngestWait, then gets 429. nil: no gate.
	Gate *admission.FairGate
	// Now is the clock; samples more than 10 minutes ahead of it are rejected.
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Handler is the remote-write receiver.
type Handler struct {
	opts     Options
	inflight chan struct{}
	next     http.Handler
	m        *metrics
	// unchecked counts the series of the requests being stored without
	// the per-series active-series check: each could be new.
	unchecked atomic.Int64
	// newSeries serialises the admission of new series near the
	// active-series limit.
	newSeries sync.Mutex
	// bufs holds the buffers of request bodies between requests.
	bufs bufferPool
	// requestsV1 holds decoded Remote-Write 1.0 requests (*requestV1)
	// between requests, for their buffers.
	requestsV1 sync.Pool
	// refs remembers the Remote-Write 1.0 series stored (refcache.go).
	refs *refCache
}

var _ http.Handler = (*Handler)(nil)

// New returns the receiver. It fails when the limits are invalid.
func New(opts Options) (*Handler, error) {
	if opts.Appendable == nil {
		return nil, fmt.Errorf("remote write: no appendable")
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("remote write limits: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		opts:     opts,
		inflight: make(chan struct{}, opts.Limits.MaxInflightRequests),
		m:        newMetrics(opts.Registerer),
		refs:     newRefCache(opts.Limits.MaxActiveSeries, opts.Now()),
	}
	h.next = remoteapi.NewWriteHandler(&writeStore{h: h},
		remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType},
		remoteapi.WithWriteHandlerLogger(opts.Logger),
		remoteapi.WithWriteHandlerMiddlewares(h.decode))
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w}
	defer func() { h.m.requests.WithLabelValues(strconv.Itoa(rec.code())).Inc() }()
	if r.Method != http.MethodPost {
		h.reject(rec, http.StatusMethodNotAllowed, reasonMethod, "remote write takes POST, got "+r.Method)
		return
	}
	if _, err := remoteapi.ParseProtoMsg(contentType(r)); err != nil {
		h.reject(rec, http.StatusUnsupportedMediaType, reasonContentType, "unsupported content type: "+err.Error())
		return
	}
	client := admission.ClientOf(r)
	if err := h.opts.Gate.Within(r.Context(), client, admission.IngestWait); err != nil {
		if refused, ok := err.(*admission.Refusal); ok {
			h.refuse(rec, refused)
		}
		return // else the client went away
	}
	defer h.opts.Gate.Release(client)
	select {
	case h.inflight <- struct{}{}:
	default:
		rec.Header().Set("Retry-After", "1")
		h.reject(rec, http.StatusServiceUnavailable, reasonOverloaded,
			fmt.Sprintf("overloaded: %d requests already in flight (limit max_inflight_requests): retry later", h.opts.Limits.MaxInflightRequests))
		return
	}
	h.m.inflight.Inc()
	defer func() { <-h.inflight; h.m.inflight.Dec() }()
	h.next.ServeHTTP(rec, r)
}

func contentType(r *http.Request) string {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "application/x-protobuf"
}

func (h *Handler) reject(w http.ResponseWriter, code int, reason, msg string) {
	h.m.rejectedRequests.WithLabelValues(reason).Inc()
	h.opts.Logger.Debug("remote write rejected", "code", code, "reason", reason, "msg", msg)
	http.Error(w, msg, code)
}

// refuse answers a refusal of the in-flight budget.
func (h *Handler) refuse(w http.ResponseWriter, r *admission.Refusal) {
	h.m.rejectedRequests.WithLabelValues(r.Reason).Inc()
	h.opts.Logger.Debug("remote write refused", "code", r.Status, "reason", r.Reason, "msg", r.Msg)
	r.Write(w)
}

// decode reads the body within the size limits and snappy-decodes it into
// a pooled buffer, which next gets as a *decodedBody and must not keep.
func (h *Handler) decode(next http.Handler) http.Handler {
	lim := h.opts.Limits
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != string(remoteapi.SnappyBlockCompression) {
			h.reject(w, http.StatusUnsupportedMediaType, reasonEncoding, fmt.Sprintf("unsupported content encoding %q: remote write is snappy", enc))
			return
		}
		if r.ContentLength > lim.MaxBodyBytes {
			h.reject(w, http.StatusRequestEntityTooLarge, reasonBodyTooLarge,
				fmt.Sprintf("request body of %d bytes is over the limit max_request_body_bytes=%d", r.ContentLength, lim.MaxBodyBytes))
			return
		}
		// The body is charged to the budget as sent, then decoded.
		ticket, refused := h.opts.Budget.Acquire(admission.ClientOf(r), "remote_write", max(r.ContentLength, 0))
		if refused != nil {
			h.refuse(w, refused)
			return
		}
		defer ticket.Release()
		compressed, err := h.bufs.readBody(r, lim.MaxBodyBytes)
		if err != nil {
			h.reject(w, http.StatusBadRequest, reasonReadBody, "read request body: "+err.Error())
			return
		}
		defer h.bufs.put(compressed)
		body := *compressed
		if int64(len(body)) > lim.MaxBodyBytes {
			h.reject(w, http.StatusRequestEntityTooLarge, reasonBodyTooLarge,
				fmt.Sprintf("request body is over the limit max_request_body_bytes=%d", lim.MaxBodyBytes))
			return
		}
		n, err := snappy.DecodedLen(body)
		if err != nil {
			h.reject(w, http.StatusBadRequest, reasonBadSnappy, "body is not snappy block-compressed: "+err.Error())
			return
		}
		if int64(n) > lim.MaxDecodedBytes {
			h.reject(w, http.StatusRequestEntityTooLarge, reasonDecodedTooLarge,
				fmt.Sprintf("decompressed body of %d bytes is over the limit max_decoded_body_bytes=%d", n, lim.MaxDecodedBytes))
			return
		}
		if refused := ticket.Grow(int64(len(body)) - max(r.ContentLength, 0) + int64(n)*admission.ExpansionRemoteWrite); refused != nil {
			h.refuse(w, refused)
			return
		}
		buf := h.bufs.get(n)
		defer h.bufs.put(buf)
		decoded, err := snappy.Decode(*buf, body)
		if err != nil {
			h.reject(w, http.StatusBadRequest, reasonBadSnappy, "body is not snappy block-compressed: "+err.Error())
			return
		}
		r.Body = &decodedBody{Reader: bytes.NewReader(decoded), b: decoded}
		r.Header.Del("Content-Encoding")
		next.ServeHTTP(w, r)
	})
}

// decodedBody is a request body that decode has decompressed already;
// Store reads b instead of copying it.
type decodedBody struct {
	*bytes.Reader
	b []byte
}

func (*decodedBody) Close() error { return nil }

// maxPooledBuffer is the largest buffer kept for reuse; bigger requests,
// rare in practice, get buffers of their own.
const maxPooledBuffer = 8 << 20

// bufferPool holds request buffers between requests: the protobuf decoders
// copy what they keep, so a buffer is free again once its request is stored.
type bufferPool struct{ p sync.Pool }

// get returns a buffer of length n.
func (bp *bufferPool) get(n int) *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

func (bp *bufferPool) put(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		bp.p.Put(b)
	}
}

// readBody reads at most limit+1 bytes of the body, in one read into a
// pooled buffer when the client declared the length.
func (bp *bufferPool) readBody(r *http.Request, limit int64) (*[]byte, error) {
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf := bp.get(int(r.ContentLength))
		if _, err := io.ReadFull(r.Body, *buf); err != nil {
			bp.put(buf)
			return nil, err
		}
		return buf, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	return &b, err
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

type metrics struct {
	requests         *prometheus.CounterVec
	rejectedRequests *prometheus.CounterVec
	rejectedSamples  *prometheus.CounterVec
	samples          prometheus.Counter
	inflight         prometheus.Gauge
	cacheHits        prometheus.Counter
	cacheMisses      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_remote_write_requests_total",
			Help: "Remote-write requests by HTTP status code.",
		}, []string{"code"}),
		rejectedRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_remote_write_rejected_requests_total",
			Help: "Remote-write requests rejected as a whole, by reason.",
		}, []string{"reason"}),
		rejectedSamples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_remote_write_rejected_samples_total",
			Help: "Samples (floats, histograms) of remote-write requests not stored, by reason.",
		}, []string{"reason"}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_remote_write_samples_total",
			Help: "Samples (floats, histograms) stored from remote write.",
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_remote_write_inflight_requests",
			Help: "Remote-write requests being stored now.",
		}),
	}
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_remote_write_series_cache_lookups_total",
		Help: "Remote-Write 1.0 series looked up in the receiver's series cache, by result: a hit is appended by its series reference without building or checking its labels again.",
	}, []string{"result"})
	m.cacheHits, m.cacheMisses = lookups.WithLabelValues("hit"), lookups.WithLabelValues("miss")
	if reg != nil {
		reg.MustRegister(m.requests, m.rejectedRequests, m.rejectedSamples, m.samples, m.inflight, lookups)
	}
	return m
}
