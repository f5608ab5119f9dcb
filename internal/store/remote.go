package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// RemoteConfig configures a read-only Store over a Prometheus HTTP API.
type RemoteConfig struct {
	// URL is the API root, the part before /api/v1 (for example
	// http://prometheus:9090 or http://mimir/prometheus).
	URL string
	// HTTPClient holds authentication and TLS settings.
	HTTPClient commoncfg.HTTPClientConfig
	// Timeout bounds one HTTP request.
	Timeout time.Duration
	// MaxResponseBytes bounds the size of one response body.
	MaxResponseBytes int64
	// Engine sets the limits of the local PromQL engine.
	Engine EngineConfig
	// Selector is added to every selector sent to the backend, so that
	// one Vigil reads one cluster or namespace of a shared backend.
	Selector []*labels.Matcher
	// CacheSamples bounds the samples kept from one read to the next
	// (0: none kept). A continuous reader (an attached serve's cycles, a
	// replay's instants) asks for the same selectors over a window that
	// slides on: with the previous answer kept, a read fetches only what
	// is new since it, and the last remoteSettle again (samples that came
	// late), instead of the whole window.
	CacheSamples int64
	// Wall is the real clock, the one at which the backend receives
	// samples (nil: time.Now). A kept answer is settled where it lies
	// remoteSettle or more behind Wall at its read, and is not read again
	// there: a replay's instants, far behind Wall, read only what is new.
	Wall func() time.Time
}

// DefaultRemoteConfig returns the defaults for url.
func DefaultRemoteConfig(u string) RemoteConfig {
	return RemoteConfig{
		URL:              u,
		HTTPClient:       commoncfg.DefaultHTTPClientConfig,
		Timeout:          time.Minute,
		MaxResponseBytes: 512 << 20,
		Engine:           DefaultEngineConfig(),
	}
}

// Validate reports the first invalid setting.
func (c RemoteConfig) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return fmt.Errorf("url %q: %w", c.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("url %q: scheme must be http or https", c.URL)
	case u.Host == "":
		return fmt.Errorf("url %q: no host", c.URL)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout must be positive, got %s", c.Timeout)
	case c.MaxResponseBytes <= 0:
		return fmt.Errorf("max response bytes must be positive, got %d", c.MaxResponseBytes)
	}
	if err := c.HTTPClient.Validate(); err != nil {
		return fmt.Errorf("http client: %w", err)
	}
	return c.Engine.Validate()
}

// Remote is a read-only Store over any Prometheus-compatible HTTP API. It
// fetches raw samples with range selectors and evaluates PromQL locally, so a
// backend's dialect (MetricsQL's rate, for one) cannot change an answer.
//
// The query API drops staleness markers from range selectors, so over a
// Remote a series that vanished stays visible for the lookback delta, where
// the embedded store (which keeps the markers of scraped data) ends it at
// once. File imports carry no markers, so both paths agree on them.
type Remote struct {
	base    *url.URL
	client  *http.Client
	cfg     RemoteConfig
	engine  *promql.Engine
	now     func() time.Time
	wall    func() time.Time
	limitRd int64
	cache   *sampleCache // nil: CacheSamples 0
}

var _ Store = (*Remote)(nil)

// NewRemote returns a Store reading from cfg.URL. now is the clock; nil means
// time.Now.
func NewRemote(cfg RemoteConfig, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) (*Remote, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if cfg.Wall == nil {
		cfg.Wall = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base, _ := url.Parse(strings.TrimSuffix(cfg.URL, "/"))
	client, err := commoncfg.NewClientFromConfig(cfg.HTTPClient, "vigil")
	if err != nil {
		return nil, fmt.Errorf("http client for %s: %w", cfg.URL, err)
	}
	engine, err := newEngine(cfg.Engine, "", logger.With("component", "promql"), reg)
	if err != nil {
		return nil, err
	}
	r := &Remote{base: base, client: client, cfg: cfg, engine: engine, now: now, wall: cfg.Wall, limitRd: cfg.MaxResponseBytes}
	if cfg.CacheSamples > 0 {
		r.cache = newSampleCache(cfg.CacheSamples)
	}
	return r, nil
}

// Querier implements storage.Queryable.
// The range is clamped to the Unix epoch and the year 2200, so that "all
// time" (math.MinInt64 to math.MaxInt64) works: a backend misreads times
// beyond its own limits, and one range selector spans at most 292 years.
func (r *Remote) Querier(mint, maxt int64) (storage.Querier, error) {
	return &remoteQuerier{r: r, mint: max(mint, remoteMinTime), maxt: min(maxt, remoteMaxTime)}, nil
}

// The times a Remote asks its backend about.
var (
	remoteMinTime = int64(0)
	remoteMaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// AppenderV2 implements storage.AppendableV2; every append fails with ErrReadOnly.
func (r *Remote) AppenderV2(context.Context) storage.AppenderV2 { return readOnlyAppender{} }

// Engine implements Store.
func (r *Remote) Engine() promql.QueryEngine { return r.engine }

// Now implements Store.
func (r *Remote) Now() time.Time { return r.now() }

// Probe asks the backend for vector(1) at its clock's now, as the
// cheapest query every Prometheus-compatible API answers, and returns why
// it did not answer so.
func (r *Remote) Probe(ctx context.Context) error {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if _, err := r.get(ctx, http.MethodPost, "/api/v1/query", url.Values{"query": {"vector(1)"}, "time": {formatTime(r.now().UnixMilli())}}, &data); err != nil {
		return err
	}
	if data.ResultType != "vector" {
		return fmt.Errorf("vector(1) answered with %q, not a vector", data.ResultType)
	}
	return nil
}

// URL returns the backend's URL without its credentials.
func (r *Remote) URL() string { return r.base.Redacted() }

// Close implements Store.
func (r *Remote) Close() error {
	r.client.CloseIdleConnections()
	return r.engine.Close()
}

// apiResponse is the envelope of every Prometheus API answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

// get calls path with params and decodes the envelope's data into out.
// Parameters go in a POST form, which has no length limit, where the API
// takes one (query, labels); the label values endpoint takes only GET.
func (r *Remote) get(ctx context.Context, method, path string, params url.Values, out any) (annotations.Annotations, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	raw, code, endpoint, err := r.do(ctx, method, path, params)
	if err != nil {
		return nil, err
	}
	var env apiResponse
	if err := json.Unmarshal(raw, &env); err != nil || (env.Status != "success" && env.Status != "error") {
		return nil, notAPI(endpoint, code, raw)
	}
	if env.Status != "success" {
		return nil, fmt.Errorf("%s answered HTTP %d %s: %s", endpoint, code, env.ErrorType, env.Error)
	}
	warns := warnings(env.Warnings)
	if err := json.Unmarshal(env.Data, out); err != nil {
		return warns, fmt.Errorf("decode data of %s: %w", endpoint, err)
	}
	return warns, nil
}

// getMatrix asks the instant query API for a range selector's matrix and
// keeps each series' samples in [from, to], decoding as it reads
// (decodeMatrix); errors are get's.
func (r *Remote) getMatrix(ctx context.Context, params url.Values, from, to int64) ([]cachedSeries, annotations.Annotations, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	raw, code, endpoint, err := r.do(ctx, http.MethodPost, "/api/v1/query", params)
	if err != nil {
		return nil, nil, err
	}
	a, derr := decodeMatrix(raw, from, to)
	switch {
	case a.status != "success" && a.status != "error":
		return nil, nil, notAPI(endpoint, code, raw)
	case a.status == "error":
		return nil, nil, fmt.Errorf("%s answered HTTP %d %s: %s", endpoint, code, a.errorType, a.errMsg)
	}
	warns := warnings(a.warnings)
	if derr != nil {
		return nil, warns, fmt.Errorf("decode data of %s: %w", endpoint, derr)
	}
	if a.resultType != "matrix" {
		return nil, warns, fmt.Errorf("range selector answered with %q, not a matrix", a.resultType)
	}
	if a.histograms != "" {
		warns.Add(fmt.Errorf("remote store: native histogram samples of %s are not read yet", a.histograms))
	}
	return a.series, warns, nil
}

// do sends the request and reads the answer, at most MaxResponseBytes.
// endpoint names it without its parameters.
func (r *Remote) do(ctx context.Context, method, path string, params url.Values) (raw []byte, code int, endpoint string, err error) {
	u := *r.base
	u.Path += path
	endpoint = u.Redacted()
	var body io.Reader
	if method == http.MethodGet {
		u.RawQuery = params.Encode()
	} else {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, 0, endpoint, fmt.Errorf("build request to %s: %w", endpoint, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, 0, endpoint, fmt.Errorf("query %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, r.limitRd+1))
	if err != nil {
		return nil, 0, endpoint, fmt.Errorf("read answer of %s: %w", endpoint, err)
	}
	if int64(len(raw)) > r.limitRd {
		return nil, 0, endpoint, &tooLargeError{endpoint: endpoint, limit: r.limitRd}
	}
	return raw, resp.StatusCode, endpoint, nil
}

// tooLargeError is an answer past RemoteConfig.MaxResponseBytes.
type tooLargeError struct {
	endpoint string
	limit    int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("answer of %s is larger than %d bytes: narrow the window or the selector", e.endpoint, e.limit)
}

func notAPI(endpoint string, code int, raw []byte) error {
	return fmt.Errorf("answer of %s (HTTP %d) is not Prometheus API JSON: %s", endpoint, code, snippet(raw))
}

func warnings(ws []string) annotations.Annotations {
	var warns annotations.Annotations
	for _, w := range ws {
		warns.Add(errors.New(w))
	}
	return warns
}

func snippet(b []byte) string {
	const n = 120
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strconv.Quote(s)
}

func formatTime(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}

// selector renders matchers as a PromQL vector selector.
func selector(ms []*labels.Matcher) string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		parts = append(parts, m.String())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

type remoteQuerier struct {
	r          *Remote
	mint, maxt int64
}

// Select fetches the raw samples in [mint, maxt] with one range selector,
// evaluated at maxt over maxt-mint+1ms: Prometheus 3 (left-open) then returns
// exactly [mint, maxt]; 2.x and other backends may return one more sample at
// the left edge, which is filtered out here. With a cache, the kept answer
// of the same selector gives what of the window is settled, and only the
// rest is fetched (sampleCache.read).
func (q *remoteQuerier) Select(ctx context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if q.maxt < q.mint {
		return storage.EmptySeriesSet()
	}
	sel := selector(append(slices.Clip(ms), q.r.cfg.Selector...))
	var warns annotations.Annotations
	series, err := q.r.cache.read(sel, q.mint, q.maxt, q.r.wall().UnixMilli(), func(from int64) ([]cachedSeries, error) {
		fetched, w, err := q.fetch(ctx, sel, from)
		warns.Merge(w)
		return fetched, err
	})
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	return cachedSet(series, warns)
}

// cachedSet hands out series, which it does not modify.
func cachedSet(series []cachedSeries, warns annotations.Annotations) storage.SeriesSet {
	out := make([]storage.Series, 0, len(series))
	for _, cs := range series {
		pts := cs.pts
		out = append(out, &storage.SeriesEntry{
			Lset: cs.lset,
			SampleIteratorFn: func(chunkenc.Iterator) chunkenc.Iterator {
				return storage.NewListSeriesIterator(pts)
			},
		})
	}
	return &listSeriesSet{series: out, idx: -1, warns: warns}
}

// fetch reads the samples of sel in [from, q.maxt], sorted by labels.
func (q *remoteQuerier) fetch(ctx context.Context, sel string, from int64) ([]cachedSeries, annotations.Annotations, error) {
	series, warns, err := q.fetchRange(ctx, sel, from, q.maxt, 0)
	if err != nil {
		return nil, warns, err
	}
	return series, warns, nil
}

// maxSplits bounds how many times a read too large for one answer is
// halved: 2^6 answers of at most MaxResponseBytes each.
const maxSplits = 6

// fetchRange reads the samples of sel in [from, to], sorted by labels. An
// answer past MaxResponseBytes (an hour of node_cpu_seconds_total at 1,000
// nodes is 0.9 GB) is read again in two halves of the range, each halved
// again as needed, and the halves joined.
func (q *remoteQuerier) fetchRange(ctx context.Context, sel string, from, to int64, depth int) ([]cachedSeries, annotations.Annotations, error) {
	params := url.Values{
		"query": {fmt.Sprintf("%s[%dms]", sel, to-from+1)},
		"time":  {formatTime(to)},
	}
	series, warns, err := q.r.getMatrix(ctx, params, from, to)
	var tooLarge *tooLargeError
	if errors.As(err, &tooLarge) && depth < maxSplits && to-from >= 2*minSplitRange {
		mid := from + (to-from)/2
		head, hw, err := q.fetchRange(ctx, sel, from, mid, depth+1)
		if err != nil {
			return nil, hw, err
		}
		tail, tw, err := q.fetchRange(ctx, sel, mid+1, to, depth+1)
		warns.Merge(hw)
		warns.Merge(tw)
		if err != nil {
			return nil, warns, err
		}
		return mergeCached(head, tail, from, mid+1), warns, nil
	}
	if err != nil {
		return nil, warns, err
	}
	slices.SortFunc(series, func(a, b cachedSeries) int { return labels.Compare(a.lset, b.lset) })
	return series, warns, nil
}

// minSplitRange is the shortest range a too-large read is halved into:
// two scrapes at 30 s.
const minSplitRange = int64(time.Minute / time.Millisecond)

// LabelValues implements storage.LabelQuerier.
func (q *remoteQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var out []string
	warns, err := q.r.get(ctx, http.MethodGet, "/api/v1/label/"+url.PathEscape(name)+"/values", q.labelParams(hints, ms), &out)
	slices.Sort(out)
	return out, warns, err
}

// LabelNames implements storage.LabelQuerier.
func (q *remoteQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var out []string
	warns, err := q.r.get(ctx, http.MethodPost, "/api/v1/labels", q.labelParams(hints, ms), &out)
	slices.Sort(out)
	return out, warns, err
}

func (q *remoteQuerier) labelParams(hints *storage.LabelHints, ms []*labels.Matcher) url.Values {
	p := url.Values{"start": {formatTime(q.mint)}, "end": {formatTime(q.maxt)}}
	ms = append(slices.Clip(ms), q.r.cfg.Selector...)
	if len(ms) > 0 {
		p.Set("match[]", selector(ms))
	}
	if hints != nil && hints.Limit > 0 {
		p.Set("limit", strconv.Itoa(hints.Limit))
	}
	return p
}

// Close implements storage.Querier.
func (q *remoteQuerier) Close() error { return nil }

type listSeriesSet struct {
	series []storage.Series
	idx    int
	warns  annotations.Annotations
}

func (s *listSeriesSet) Next() bool {
	s.idx++
	return s.idx < len(s.series)
}
func (s *listSeriesSet) At() storage.Series                { return s.series[s.idx] }
func (s *listSeriesSet) Err() error                        { return nil }
func (s *listSeriesSet) Warnings() annotations.Annotations { return s.warns }

// fsample is one float sample; fsamples implements storage.Samples.
type fsample struct {
	t int64
	f float64
}

func (s *fsample) T() int64                    { return s.t }
func (*fsample) ST() int64                     { return 0 }
func (s *fsample) F() float64                  { return s.f }
func (*fsample) H() *histogram.Histogram       { return nil }
func (*fsample) FH() *histogram.FloatHistogram { return nil }
func (*fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s *fsample) Copy() chunks.Sample         { c := *s; return &c }

type fsamples []fsample

// Get points into the held samples: a value would be boxed in the
// interface, an allocation per sample read (a quarter of an attached
// cycle's CPU went to them).
func (s fsamples) Get(i int) chunks.Sample { return &s[i] }
func (s fsamples) Len() int                { return len(s) }

// readOnlyAppender rejects every write.
type readOnlyAppender struct{}

func (readOnlyAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AppendV2Options) (storage.SeriesRef, error) {
	return 0, ErrReadOnly
}
func (readOnlyAppender) Commit() error   { return nil }
func (readOnlyAppender) Rollback() error { return nil }
