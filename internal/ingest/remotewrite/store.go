package remotewrite

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gogo/protobuf/proto"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/vigil-obs/vigil/internal/tenant"
)

// maxAhead is how far in the future a sample may be, as in Prometheus.
const maxAhead = 10 * time.Minute

// v2ContentType is the content type of Remote-Write 2.0.
const v2ContentType = "application/x-protobuf;proto=io.prometheus.write.v2.Request"

// writeStore decodes a request and stores it; it implements the remote API
// library's storage interface.
type writeStore struct{ h *Handler }

// Store decodes the (decompressed) body and appends it.
func (s *writeStore) Store(r *http.Request, msgType remoteapi.WriteMessageType) (*remoteapi.WriteResponse, error) {
	wr := remoteapi.NewWriteResponse()
	var (
		body []byte
		err  error
	)
	if d, ok := r.Body.(*decodedBody); ok {
		body = d.b
	} else {
		if body, err = io.ReadAll(r.Body); err != nil {
			wr.SetStatusCode(http.StatusBadRequest)
			return wr, fmt.Errorf("read request body: %w", err)
		}
	}
	w := s.h.newBatch(r)
	defer w.release()
	var code int
	if msgType == remoteapi.WriteV1MessageType {
		// An appender that rations samples (a tenant's ingestion rate)
		// refuses a request over it before the body is decoded: its
		// samples are counted on the wire, without decoding a label.
		if n, ok := wireSamplesV1(body); ok {
			w.expected = n
			if w.open(); w.refused != nil {
				return s.h.refused(wr, w)
			}
		}
		req := s.h.getRequestV1()
		defer s.h.putRequestV1(req)
		if err := req.decode(body); err != nil {
			return s.h.fail(wr, http.StatusBadRequest, reasonBadProtobuf, fmt.Errorf("decode remote write 1.0 request: %w", err))
		}
		if len(req.series) == 0 && req.unknown {
			return s.h.fail(wr, http.StatusBadRequest, reasonBadProtobuf, errors.New(
				"the body decodes to an empty Remote-Write 1.0 request with fields 1.0 does not have: a 2.0 body sent as 1.0? Send 2.0 with Content-Type "+v2ContentType))
		}
		n := req.count()
		if err := s.h.checkSamples(n); err != nil {
			return s.h.fail(wr, http.StatusRequestEntityTooLarge, reasonSamplesPerRequest, err)
		}
		w.expected = n
		code, err = w.writeV1(req)
	} else {
		var req writev2.Request
		if err := proto.Unmarshal(body, &req); err != nil {
			return s.h.fail(wr, http.StatusBadRequest, reasonBadProtobuf, fmt.Errorf("decode remote write 2.0 request: %w", err))
		}
		if len(req.Timeseries) == 0 && len(req.XXX_unrecognized) > 0 {
			return s.h.fail(wr, http.StatusBadRequest, reasonBadProtobuf, errors.New(
				"the body decodes to an empty Remote-Write 2.0 request with fields 2.0 does not have: a 1.0 body sent as 2.0? Send 1.0 with Content-Type application/x-protobuf"))
		}
		n := countV2(&req)
		if err := s.h.checkSamples(n); err != nil {
			return s.h.fail(wr, http.StatusRequestEntityTooLarge, reasonSamplesPerRequest, err)
		}
		w.expected = n
		code, err = w.writeV2(&req)
	}
	wr.Add(remoteapi.WriteResponseStats{Samples: w.floats, Histograms: w.histograms, Exemplars: w.exemplars})
	if err != nil {
		wr.SetStatusCode(code)
		return wr, err
	}
	return wr, nil
}

// checkSamples enforces max_samples_per_request on a request of n samples.
func (h *Handler) checkSamples(n int) error {
	if lim := h.opts.Limits.MaxSamplesPerRequest; lim > 0 && n > lim {
		return fmt.Errorf("request has %d samples, over the limit max_samples_per_request=%d: send smaller batches", n, lim)
	}
	return nil
}

// refused answers a request its appender refused before it was decoded.
func (h *Handler) refused(wr *remoteapi.WriteResponse, w *batch) (*remoteapi.WriteResponse, error) {
	code, err := w.refuse()
	h.opts.Logger.Debug("remote write rejected", "code", code, "reason", reasonTenantLimit, "err", err)
	wr.SetStatusCode(code)
	return wr, err
}

func (h *Handler) fail(wr *remoteapi.WriteResponse, code int, reason string, err error) (*remoteapi.WriteResponse, error) {
	h.m.rejectedRequests.WithLabelValues(reason).Inc()
	h.opts.Logger.Debug("remote write rejected", "code", code, "reason", reason, "err", err)
	wr.SetStatusCode(code)
	return wr, err
}

// countV1 counts the samples, histograms and exemplars of a decoded
// request, what wireSamplesV1 counts on the wire and requestV1.count of
// the receiver's own decoding.
func countV1(req *prompb.WriteRequest) int {
	n := 0
	for i := range req.Timeseries {
		n += len(req.Timeseries[i].Samples) + len(req.Timeseries[i].Histograms) + len(req.Timeseries[i].Exemplars)
	}
	return n
}

// wireSamplesV1 counts the samples, histograms and exemplars of a
// Remote-Write 1.0 body (what countV1 counts of the decoded request) by
// walking its protobuf fields; false when the body does not parse.
func wireSamplesV1(b []byte) (int, bool) {
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, false
		}
		b = b[l:]
		if num != 1 || typ != protowire.BytesType {
			if l = protowire.ConsumeFieldValue(num, typ, b); l < 0 {
				return 0, false
			}
			b = b[l:]
			continue
		}
		ts, l := protowire.ConsumeBytes(b)
		if l < 0 {
			return 0, false
		}
		b = b[l:]
		for len(ts) > 0 {
			num, typ, l := protowire.ConsumeTag(ts)
			if l < 0 {
				return 0, false
			}
			ts = ts[l:]
			if typ == protowire.BytesType && (num == 2 || num == 3 || num == 4) {
				n++
			}
			if l = protowire.ConsumeFieldValue(num, typ, ts); l < 0 {
				return 0, false
			}
			ts = ts[l:]
		}
	}
	return n, true
}

func countV2(req *writev2.Request) int {
	n := 0
	for i := range req.Timeseries {
		n += len(req.Timeseries[i].Samples) + len(req.Timeseries[i].Histograms) + len(req.Timeseries[i].Exemplars)
	}
	return n
}

// batch stores one request in one appender transaction.
type batch struct {
	h   *Handler
	r   *http.Request
	app storage.AppenderV2
	// expected is the request's number of samples, which an appender
	// that rations them (a tenant's ingestion rate) takes before any is
	// appended; refused is its refusal.
	expected int
	refused  error
	// closed is set once the appender was committed or rolled back.
	closed bool
	exApp  storage.ExemplarAppenderV2
	maxT   int64

	// checkSeries is set near the active-series limit: each new series is
	// then admitted under Handler.newSeries (locked is set once it is held).
	// Far from it, the request's series are reserved in Handler.unchecked.
	checkSeries bool
	locked      bool
	reserved    int64

	// hits and misses count the series cache's lookups.
	hits, misses int

	floats, histograms, exemplars int
	rejected                      map[string]int
	example                       map[string]string
	b                             labels.ScratchBuilder
	exBuf                         []exemplar.Exemplar
	// rep checks the request against itself (repeats.go); pts and cmp are
	// its buffers.
	rep repeats
	pts []point
	cmp labels.ScratchBuilder
}

func (h *Handler) newBatch(r *http.Request) *batch {
	return &batch{h: h, r: r, maxT: h.opts.Now().Add(maxAhead).UnixMilli(), b: labels.NewScratchBuilder(16)}
}

// release rolls back an appender that was opened and never committed or
// rolled back (a body that did not decode after its samples were
// reserved).
func (w *batch) release() {
	if w.app != nil && !w.closed {
		w.closed = true
		_ = w.app.Rollback()
	}
}

// open makes the request's appender, once, and reserves its expected
// samples with an appender that rations them.
func (w *batch) open() {
	if w.app != nil {
		return
	}
	w.app = w.h.opts.Appendable.AppenderV2(w.r.Context())
	w.exApp, _ = w.app.(storage.ExemplarAppenderV2)
	if r, ok := w.app.(interface{ Reserve(n int) error }); ok && w.expected > 0 {
		// Refused before a series is appended: a tenant far over its rate
		// costs little (Mimir's distributor checks the rate first too).
		w.refused = r.Reserve(w.expected)
	}
}

func (w *batch) begin(nseries int) {
	w.open()
	lim := w.h.opts.Limits.MaxActiveSeries
	if lim == 0 || w.h.opts.Series == nil {
		return
	}
	// A request that stays under the limit even if all its series are new,
	// counting those reserved by the other requests being stored, skips the
	// per-series check; its series stay reserved until it ends.
	n := int64(nseries)
	if r := w.h.unchecked.Add(n); w.h.opts.Series.NumSeries()+uint64(r) <= lim {
		w.reserved = n
		return
	}
	w.h.unchecked.Add(-n)
	w.checkSeries = true
}

// end releases what begin and admit took.
func (w *batch) end() {
	w.h.unchecked.Add(-w.reserved)
	w.reserved = 0
	if w.locked {
		w.locked = false
		w.h.newSeries.Unlock()
	}
}

// finish commits what was accepted and reports the rejections, if any, as
// one 400 error; a commit failure is a 500 and nothing was stored.
func (w *batch) finish() (int, error) {
	defer w.end()
	w.closed = true
	if err := w.app.Commit(); err != nil {
		w.floats, w.histograms, w.exemplars = 0, 0, 0
		if code, ok := limitStatus(err); ok {
			// A tenant over its ingestion rate: nothing stored.
			w.h.m.rejectedRequests.WithLabelValues(reasonTenantLimit).Inc()
			return code, err
		}
		w.h.m.rejectedRequests.WithLabelValues(reasonStorage).Inc()
		return http.StatusInternalServerError, fmt.Errorf("commit samples: %w", err)
	}
	w.h.m.samples.Add(float64(w.floats + w.histograms))
	if len(w.rejected) == 0 {
		return 0, nil
	}
	reasons := make([]string, 0, len(w.rejected))
	total := 0
	for r, n := range w.rejected {
		reasons = append(reasons, r)
		total += n
		w.h.m.rejectedSamples.WithLabelValues(r).Add(float64(n))
	}
	sort.Strings(reasons)
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s (e.g. %s)", w.rejected[r], r, w.example[r]))
	}
	return http.StatusBadRequest, fmt.Errorf("stored %d samples, rejected %d: %s", w.floats+w.histograms, total, strings.Join(parts, "; "))
}

// refuse answers a request its appender refused before anything was
// appended (a tenant's limit): its status, nothing stored.
func (w *batch) refuse() (int, error) {
	defer w.end()
	w.closed = true
	w.floats, w.histograms, w.exemplars = 0, 0, 0
	_ = w.app.Rollback()
	w.h.m.rejectedRequests.WithLabelValues(reasonTenantLimit).Inc()
	if code, ok := limitStatus(w.refused); ok {
		return code, w.refused
	}
	return http.StatusTooManyRequests, w.refused
}

// abort rolls back after a storage failure: 500, nothing stored.
func (w *batch) abort(err error) (int, error) {
	defer w.end()
	w.closed = true
	w.floats, w.histograms, w.exemplars = 0, 0, 0
	w.h.m.rejectedRequests.WithLabelValues(reasonStorage).Inc()
	return http.StatusInternalServerError, errors.Join(fmt.Errorf("append samples: %w", err), w.app.Rollback())
}

func (w *batch) reject(reason string, n int, msg string) {
	if w.rejected == nil {
		w.rejected, w.example = map[string]int{}, map[string]string{}
	}
	if _, ok := w.example[reason]; !ok {
		w.example[reason] = msg
	}
	w.rejected[reason] += n
}

// admit checks the labels of a series and the active-series limit; n is the
// number of samples the series carries, counted when it is rejected.
func (w *batch) admit(ls labels.Labels, n int) bool {
	lim := w.h.opts.Limits
	name := ls.Get(model.MetricNameLabel)
	switch {
	case name == "":
		w.reject(reasonInvalidLabels, n, "series without a metric name: "+short(ls.String()))
		return false
	case lim.MaxLabelsPerSeries > 0 && ls.Len() > lim.MaxLabelsPerSeries:
		w.reject(reasonLabelCount, n, fmt.Sprintf("%s has %d labels, over max_labels_per_series=%d", short(name), ls.Len(), lim.MaxLabelsPerSeries))
		return false
	}
	// HasDuplicateLabelNames reports an empty first name as a duplicate
	// of "": leave that one to the name check below.
	if dup, ok := ls.HasDuplicateLabelNames(); ok && dup != "" {
		w.reject(reasonInvalidLabels, n, fmt.Sprintf("%s has label %q twice", short(name), dup))
		return false
	}
	bad := ""
	reason := ""
	ls.Range(func(l labels.Label) {
		if bad != "" {
			return
		}
		switch {
		case lim.MaxLabelNameLength > 0 && len(l.Name) > lim.MaxLabelNameLength:
			reason, bad = reasonLabelNameLength, fmt.Sprintf("%s has a label name of %d bytes, over max_label_name_length=%d", short(name), len(l.Name), lim.MaxLabelNameLength)
		case lim.MaxLabelValueLength > 0 && len(l.Value) > lim.MaxLabelValueLength:
			reason, bad = reasonLabelValueLength, fmt.Sprintf("%s label %s has a value of %d bytes, over max_label_value_length=%d", short(name), short(l.Name), len(l.Value), lim.MaxLabelValueLength)
		case !model.UTF8Validation.IsValidLabelName(l.Name):
			reason, bad = reasonInvalidLabels, fmt.Sprintf("%s has an invalid label name %q", short(name), short(l.Name))
		case !utf8.ValidString(l.Value):
			reason, bad = reasonInvalidLabels, fmt.Sprintf("%s label %s has a value that is not UTF-8", short(name), short(l.Name))
		}
	})
	if bad != "" {
		w.reject(reason, n, bad)
		return false
	}
	return w.admitActive(ls, n)
}

// admitActive checks the active-series limit for a series whose labels
// passed admit's checks.
func (w *batch) admitActive(ls labels.Labels, n int) bool {
	lim := w.h.opts.Limits
	if !w.checkSeries {
		return true
	}
	exists, err := w.h.opts.Series.SeriesExists(w.r.Context(), ls)
	if err != nil || exists {
		return true // on an index error, let the head decide
	}
	// New series are admitted one request at a time, and the request keeps
	// the lock until it ends: the head then counts every series admitted
	// before (a series is created when its first sample is appended), so
	// that two requests cannot both take the last free room.
	if !w.locked {
		w.h.newSeries.Lock()
		w.locked = true
	}
	if w.h.opts.Series.NumSeries()+uint64(w.h.unchecked.Load()) >= lim.MaxActiveSeries {
		w.reject(reasonActiveSeries, n, fmt.Sprintf("new series %s over max_active_series=%d", short(ls.String()), lim.MaxActiveSeries))
		return false
	}
	return true
}

// short keeps messages to a readable length.
func short(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// appendOne appends a float (h, fh nil) or histogram sample. It returns
// fatal for a storage failure; client errors are recorded and skipped.
func (w *batch) appendOne(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if t > w.maxT {
		w.reject(reasonOutOfBounds, 1, fmt.Sprintf("%s at %s is more than %s in the future", short(ls.Get(model.MetricNameLabel)), time.UnixMilli(t).UTC().Format(time.RFC3339), maxAhead))
		return ref, nil
	}
	nref, err := w.app.Append(ref, ls, st, t, v, h, fh, opts)
	if err != nil && !errors.Is(err, (*storage.AppendPartialError)(nil)) {
		reason := ""
		switch {
		case errors.Is(err, storage.ErrOutOfOrderSample):
			reason = reasonOutOfOrder
		case errors.Is(err, storage.ErrTooOldSample):
			reason = reasonTooOld
		case errors.Is(err, storage.ErrOutOfBounds):
			reason = reasonOutOfBounds
		case errors.Is(err, storage.ErrDuplicateSampleForTimestamp):
			reason = reasonDuplicate
		case isHistogramError(err):
			reason = reasonBadHistogram
		case isTenantLimit(err):
			reason = reasonTenantLimit
		default:
			return ref, err
		}
		w.reject(reason, 1, fmt.Sprintf("%s at %s: %v", short(ls.String()), time.UnixMilli(t).UTC().Format(time.RFC3339Nano), err))
		return ref, nil
	}
	if h != nil || fh != nil {
		w.histograms++
	} else {
		w.floats++
	}
	return nref, nil
}

// limitStatus is the HTTP status of a tenant's limit refusing err
// (internal/tenant/limits.LimitError).
func limitStatus(err error) (int, bool) {
	var le interface {
		error
		StatusCode() int
	}
	if errors.As(err, &le) {
		return le.StatusCode(), true
	}
	return 0, false
}

func isTenantLimit(err error) bool {
	_, ok := limitStatus(err)
	return ok
}

func isHistogramError(err error) bool {
	var e histogram.Error
	return errors.As(err, &e)
}

// appendExemplars stores exemplars; their errors never fail the request,
// as exemplar storage is best effort in Prometheus too.
func (w *batch) appendExemplars(ref storage.SeriesRef, ls labels.Labels) {
	if w.exApp == nil || len(w.exBuf) == 0 || ref == 0 {
		return
	}
	slices.SortFunc(w.exBuf, exemplar.Compare)
	if _, err := w.exApp.AppendExemplars(ref, ls, w.exBuf); err == nil {
		w.exemplars += len(w.exBuf)
	}
}

func (w *batch) writeV1(req *requestV1) (int, error) {
	w.begin(len(req.series))
	if w.refused != nil {
		return w.refuse()
	}
	w.h.refs.tick(w.h.opts.Now())
	tenantID, _ := tenant.WriteID(w.r.Context())
	defer func() {
		w.h.m.cacheHits.Add(float64(w.hits))
		w.h.m.cacheMisses.Add(float64(w.misses))
	}()
	for i := range req.series {
		samples, hists := req.samplesOf(i), req.histogramsOf(i)
		n := len(samples) + len(hists)
		var (
			ls        labels.Labels
			hash, key uint64
			ref       storage.SeriesRef
			cached    bool
		)
		raw := req.rawLabelsOf(i)
		if raw != nil {
			key = refKey(raw, tenantID)
			var e refEntry
			if e, cached = w.h.refs.get(key, tenantID, req.wireLabelsOf(i)); cached {
				ls, hash, ref = e.ls, e.hash, e.ref
			}
		}
		if cached {
			// The same labels passed the checks when they were cached;
			// near the active-series limit, the series may have been
			// dropped from the head since, and would be a new one.
			w.hits++
			if !w.admitActive(ls, n) {
				continue
			}
		} else {
			w.misses++
			ls = req.labelsOf(i, &w.b)
			if !w.admit(ls, n) {
				continue
			}
			hash = ls.Hash()
		}
		verdict := w.verdictsV1(req, i, ls, hash)
		was := ref
		var err error
		for k, s := range samples {
			if !w.keep(verdict[k], ls, s.t) {
				continue
			}
			if ref, err = w.appendOne(ref, ls, 0, s.t, s.v, nil, nil, storage.AOptions{}); err != nil {
				return w.abort(err)
			}
		}
		for j := range hists {
			hp := &hists[j]
			if !w.keep(verdict[len(samples)+j], ls, hp.Timestamp) {
				continue
			}
			if hp.IsFloatHistogram() {
				ref, err = w.appendOne(ref, ls, 0, hp.Timestamp, 0, nil, hp.ToFloatHistogram(), storage.AOptions{})
			} else {
				ref, err = w.appendOne(ref, ls, 0, hp.Timestamp, 0, hp.ToIntHistogram(), nil, storage.AOptions{})
			}
			if err != nil {
				return w.abort(err)
			}
		}
		w.exBuf = w.exBuf[:0]
		for _, ep := range req.exemplarsOf(i) {
			w.exBuf = append(w.exBuf, ep.ToExemplar(&w.b, nil))
		}
		w.appendExemplars(ref, ls)
		// A new series, or one the head gave a new reference (it had
		// dropped the series), is cached: labels sorted on the wire only,
		// which the cache compares in order.
		if raw != nil && ref != 0 && ref != was && (cached || sameLabels(req.wireLabelsOf(i), ls)) {
			w.h.refs.put(key, refEntry{ls: ls, hash: hash, ref: ref, tenant: tenantID})
		}
	}
	return w.finish()
}

func (w *batch) writeV2(req *writev2.Request) (int, error) {
	w.begin(len(req.Timeseries))
	if w.refused != nil {
		return w.refuse()
	}
	for i := range req.Timeseries {
		ts := &req.Timeseries[i]
		n := len(ts.Samples) + len(ts.Histograms)
		ls, err := ts.ToLabels(&w.b, req.Symbols)
		if err != nil {
			w.reject(reasonInvalidLabels, n, fmt.Sprintf("label references %v: %v", ts.LabelsRefs, err))
			continue
		}
		if n == 0 {
			w.reject(reasonEmptySeries, 0, "series without samples or histograms: "+short(ls.String()))
			continue
		}
		if !w.admit(ls, n) {
			continue
		}
		opts := storage.AOptions{}
		if md, err := ts.ToMetadata(req.Symbols); err == nil {
			opts.Metadata = md
		}
		verdict := w.verdictsV2(req, i, ls)
		var ref storage.SeriesRef
		for k, s := range ts.Samples {
			if !w.keep(verdict[k], ls, s.Timestamp) {
				continue
			}
			if ref, err = w.appendOne(ref, ls, s.StartTimestamp, s.Timestamp, s.Value, nil, nil, opts); err != nil {
				return w.abort(err)
			}
		}
		for j := range ts.Histograms {
			hp := &ts.Histograms[j]
			if !w.keep(verdict[len(ts.Samples)+j], ls, hp.Timestamp) {
				continue
			}
			if hp.IsFloatHistogram() {
				ref, err = w.appendOne(ref, ls, hp.StartTimestamp, hp.Timestamp, 0, nil, hp.ToFloatHistogram(), opts)
			} else {
				ref, err = w.appendOne(ref, ls, hp.StartTimestamp, hp.Timestamp, 0, hp.ToIntHistogram(), nil, opts)
			}
			if err != nil {
				return w.abort(err)
			}
		}
		w.exBuf = w.exBuf[:0]
		for _, ep := range ts.Exemplars {
			if e, err := ep.ToExemplar(&w.b, req.Symbols); err == nil {
				w.exBuf = append(w.exBuf, e)
			}
		}
		w.appendExemplars(ref, ls)
	}
	return w.finish()
}

// keep tells whether a sample with verdict v is appended: a repeat of a
// value the request gave its series already is one sample, another value
// for that timestamp is rejected.
func (w *batch) keep(v uint8, ls labels.Labels, t int64) bool {
	switch v {
	case repeat:
		return false
	case dup:
		w.reject(reasonDuplicate, 1, fmt.Sprintf("%s at %s: a second value for a timestamp this request gave the series already",
			short(ls.String()), time.UnixMilli(t).UTC().Format(time.RFC3339Nano)))
		return false
	}
	return true
}

// verdictsV1 checks entry i of a 1.0 request (labels ls) against itself and
// the request's earlier entries of its series.
func (w *batch) verdictsV1(req *requestV1, i int, ls labels.Labels, hash uint64) []uint8 {
	return w.verdicts(i, ls, hash, func(j int) bool {
		return labels.Equal(req.labelsOf(j, &w.cmp), ls)
	}, func(pts []point, j int, keys bool) []point {
		return pointsV1(pts, req, j, keys)
	})
}

// verdictsV2 is verdictsV1 for a 2.0 request.
func (w *batch) verdictsV2(req *writev2.Request, i int, ls labels.Labels) []uint8 {
	return w.verdicts(i, ls, ls.Hash(), func(j int) bool {
		other, err := req.Timeseries[j].ToLabels(&w.cmp, req.Symbols)
		return err == nil && labels.Equal(other, ls)
	}, func(pts []point, j int, keys bool) []point {
		return pointsV2(pts, &req.Timeseries[j], keys)
	})
}

// verdicts checks entry i (labels ls, whose hash is hash): same tells
// whether entry j has exactly ls, points appends entry j's points (the
// histograms' keys only when keys is set).
func (w *batch) verdicts(i int, ls labels.Labels, hash uint64, same func(j int) bool, points func(pts []point, j int, keys bool) []point) []uint8 {
	prev := w.rep.earlier(i, hash, same)
	w.pts = points(w.pts[:0], i, false)
	if len(prev) == 0 && increasing(w.pts) {
		return w.rep.check(w.pts, nil)
	}
	w.pts = points(w.pts[:0], i, true)
	return w.rep.check(w.pts, func(yield func(point)) {
		var buf []point
		for _, j := range slices.Backward(prev) {
			buf = points(buf[:0], int(j), true)
			for _, p := range buf {
				yield(p)
			}
		}
	})
}

// pointsV1 appends the points of an entry, floats then histograms; the
// histograms' keys only when keys is set (the common case needs only the
// timestamps).
func pointsV1(pts []point, req *requestV1, i int, keys bool) []point {
	for _, s := range req.samplesOf(i) {
		pts = append(pts, point{t: s.t, key: floatKey(s.v)})
	}
	hists := req.histogramsOf(i)
	for j := range hists {
		p := point{t: hists[j].Timestamp}
		if keys {
			p.key = histogramKey(&hists[j])
		}
		pts = append(pts, p)
	}
	return pts
}

func pointsV2(pts []point, ts *writev2.TimeSeries, keys bool) []point {
	for _, s := range ts.Samples {
		pts = append(pts, point{t: s.Timestamp, key: floatKey(s.Value)})
	}
	for j := range ts.Histograms {
		p := point{t: ts.Histograms[j].Timestamp}
		if keys {
			p.key = histogramKey(&ts.Histograms[j])
		}
		pts = append(pts, p)
	}
	return pts
}
