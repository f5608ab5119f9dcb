package tenant

import (
	"context"
	"errors"
	"slices"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// Reads restrict every read to the tenants of its context, as
// prom-label-proxy and Mimir's query frontend do, but below the query
// language: the matcher is added to each selector the engine, the series,
// label and remote-read APIs hand to the store, so no expression, form
// field, repeated match[] or negative matcher reaches another tenant's
// series. A read with no tenant in its context reads nothing and fails.
// A read of one tenant does not show the tenant label; a read across
// tenants does (Mimir's federation).
type Reads struct {
	Q storage.Queryable
}

var _ storage.Queryable = Reads{}

// Querier implements storage.Queryable.
func (r Reads) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := r.Q.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return querier{q}, nil
}

// Fixed is q read as the tenants ids whatever the context: the source of
// a tenant's own evaluation, whose queries carry no request.
func Fixed(q storage.Queryable, ids []string) storage.Queryable {
	return fixed{Reads{q}, Principal{IDs: ids}}
}

type fixed struct {
	r Reads
	p Principal
}

func (f fixed) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := f.r.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return fixedQuerier{q, f.p}, nil
}

type fixedQuerier struct {
	q storage.Querier
	p Principal
}

func (f fixedQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	return f.q.Select(NewContext(ctx, f.p), sortSeries, hints, ms...)
}

func (f fixedQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return f.q.LabelValues(NewContext(ctx, f.p), name, hints, ms...)
}

func (f fixedQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return f.q.LabelNames(NewContext(ctx, f.p), hints, ms...)
}

func (f fixedQuerier) Close() error { return f.q.Close() }

// ChunkReads is Reads for chunk queries (remote read).
type ChunkReads struct {
	Q storage.ChunkQueryable
}

// ChunkQuerier implements storage.ChunkQueryable.
func (r ChunkReads) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	q, err := r.Q.ChunkQuerier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return chunkQuerier{q}, nil
}

// ExemplarReads is Reads for exemplar queries.
type ExemplarReads struct {
	Q storage.ExemplarQueryable
}

// ExemplarQuerier implements storage.ExemplarQueryable.
func (r ExemplarReads) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	p, ok := FromContext(ctx)
	if !ok {
		return nil, ErrNoTenant
	}
	q, err := r.Q.ExemplarQuerier(ctx)
	if err != nil {
		return nil, err
	}
	return exemplarQuerier{q, p}, nil
}

// Matcher is the matcher that restricts a read to the tenants of p.
func Matcher(p Principal) *labels.Matcher {
	if id, ok := p.Single(); ok {
		return labels.MustNewMatcher(labels.MatchEqual, Label, id)
	}
	return labels.MustNewMatcher(labels.MatchRegexp, Label, regexpOf(p.IDs))
}

// regexpOf is the alternation of ids. An ID's own characters that are
// special in a regular expression (. * ( )) are escaped.
func regexpOf(ids []string) string {
	b := make([]byte, 0, 64)
	for i, id := range ids {
		if i > 0 {
			b = append(b, '|')
		}
		for j := 0; j < len(id); j++ {
			switch c := id[j]; c {
			case '.', '*', '(', ')':
				b = append(b, '\\', c)
			default:
				b = append(b, c)
			}
		}
	}
	return string(b)
}

// restrict returns the matchers of a read in ctx, and whether its results
// hide the tenant label (one tenant).
func restrict(ctx context.Context, ms []*labels.Matcher) ([]*labels.Matcher, bool, error) {
	p, ok := FromContext(ctx)
	if !ok {
		return nil, false, ErrNoTenant
	}
	out := make([]*labels.Matcher, 0, len(ms)+1)
	out = append(out, ms...)
	out = append(out, Matcher(p))
	return out, len(p.IDs) == 1, nil
}

type querier struct{ storage.Querier }

func (q querier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	ms, hide, err := restrict(ctx, ms)
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	ss := q.Querier.Select(ctx, sortSeries, hints, ms...)
	if b := budgetOf(ctx); b != nil {
		ss = budgetSeriesSet{ss, b}
	}
	if !hide {
		return ss
	}
	return &hiddenSeriesSet{SeriesSet: ss}
}

func (q querier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return labelValues(ctx, q.Querier, name, hints, ms)
}

func (q querier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return labelNames(ctx, q.Querier, hints, ms)
}

type chunkQuerier struct{ storage.ChunkQuerier }

func (q chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	ms, hide, err := restrict(ctx, ms)
	if err != nil {
		return storage.ErrChunkSeriesSet(err)
	}
	ss := q.ChunkQuerier.Select(ctx, sortSeries, hints, ms...)
	if !hide {
		return ss
	}
	return &hiddenChunkSeriesSet{ChunkSeriesSet: ss}
}

func (q chunkQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return labelValues(ctx, q.ChunkQuerier, name, hints, ms)
}

func (q chunkQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return labelNames(ctx, q.ChunkQuerier, hints, ms)
}

func labelValues(ctx context.Context, q storage.LabelQuerier, name string, hints *storage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
	ms, hide, err := restrict(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	if hide && name == Label {
		return nil, nil, nil
	}
	return q.LabelValues(ctx, name, hints, ms...)
}

func labelNames(ctx context.Context, q storage.LabelQuerier, hints *storage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
	ms, hide, err := restrict(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	names, ann, err := q.LabelNames(ctx, hints, ms...)
	if hide {
		names = slices.DeleteFunc(names, func(n string) bool { return n == Label })
	}
	return names, ann, err
}

type exemplarQuerier struct {
	q storage.ExemplarQuerier
	p Principal
}

func (e exemplarQuerier) Select(start, end int64, sets ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	if len(sets) == 0 {
		return nil, errors.New("no series selector")
	}
	m := Matcher(e.p)
	with := make([][]*labels.Matcher, len(sets))
	for i, ms := range sets {
		with[i] = append(slices.Clip(ms), m)
	}
	res, err := e.q.Select(start, end, with...)
	if err != nil || len(e.p.IDs) != 1 {
		return res, err
	}
	for i := range res {
		res[i].SeriesLabels = hide(res[i].SeriesLabels)
	}
	return res, nil
}

// hide drops the tenant label.
func hide(ls labels.Labels) labels.Labels {
	if !ls.Has(Label) {
		return ls
	}
	return labels.NewBuilder(ls).Del(Label).Labels()
}

type hiddenSeriesSet struct{ storage.SeriesSet }

func (s *hiddenSeriesSet) At() storage.Series { return hiddenSeries{s.SeriesSet.At()} }

type hiddenSeries struct{ storage.Series }

func (s hiddenSeries) Labels() labels.Labels { return hide(s.Series.Labels()) }

type hiddenChunkSeriesSet struct{ storage.ChunkSeriesSet }

func (s *hiddenChunkSeriesSet) At() storage.ChunkSeries {
	return hiddenChunkSeries{s.ChunkSeriesSet.At()}
}

type hiddenChunkSeries struct{ storage.ChunkSeries }

func (s hiddenChunkSeries) Labels() labels.Labels { return hide(s.ChunkSeries.Labels()) }

// Writes stamps every series appended through it with the tenant of the
// appender's context, replacing any tenant label the client sent, so no
// client can write into another tenant's series or over Vigil's own. An
// appender whose context has no single tenant refuses every append.
type Writes struct {
	A storage.AppendableV2
	// Of, if set, picks the tenant of a context that carries none (a
	// scrape pool's, from its target); nil: only the context's.
	Of func(ctx context.Context) (string, bool)
}

var _ storage.AppendableV2 = Writes{}

// AppenderV2 implements storage.AppendableV2.
func (w Writes) AppenderV2(ctx context.Context) storage.AppenderV2 {
	id, ok := WriteID(ctx)
	if !ok && w.Of != nil {
		id, ok = w.Of(ctx)
	}
	app := w.A.AppenderV2(ctx)
	if !ok {
		return refusing{app}
	}
	return &stamping{AppenderV2: app, id: id, b: labels.NewBuilder(labels.EmptyLabels())}
}

type stamping struct {
	storage.AppenderV2
	id string
	b  *labels.Builder
}

func (s *stamping) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AppendV2Options) (storage.SeriesRef, error) {
	if ls.Get(Label) != s.id {
		s.b.Reset(ls)
		s.b.Set(Label, s.id)
		ls = s.b.Labels()
	}
	return s.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
}

// refusing is the appender of a write with no tenant.
type refusing struct{ storage.AppenderV2 }

func (r refusing) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AppendV2Options) (storage.SeriesRef, error) {
	return 0, ErrNoTenant
}

// Stamp returns ls with the tenant label of id.
func Stamp(ls labels.Labels, id string) labels.Labels {
	return labels.NewBuilder(ls).Set(Label, id).Labels()
}
