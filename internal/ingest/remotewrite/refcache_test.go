package remotewrite

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/tenant/limits"
)

// rig is a receiver over a fresh store, with or without its series cache.
type rig struct {
	st  *store.Embedded
	h   *Handler
	now time.Time
}

func newRig(t *testing.T, lim Limits, cached bool, wrap func(storage.AppendableV2) storage.AppendableV2) *rig {
	t.Helper()
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	cfg.OutOfOrderWindow = 10 * time.Minute
	r := &rig{now: t0}
	clock := func() time.Time { return r.now }
	st, err := store.OpenEmbedded(cfg, clock, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	var app storage.AppendableV2 = st
	if wrap != nil {
		app = wrap(st)
	}
	h, err := New(Options{Appendable: app, Series: st, Limits: lim, Now: clock})
	require.NoError(t, err)
	if !cached {
		h.refs = nil
	}
	r.st, r.h = st, h
	return r
}

// send posts a Remote-Write 1.0 body (not yet compressed) in ctx.
func (r *rig) send(ctx context.Context, body []byte) (int, string) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, body)))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// dump returns every series the store holds, with its samples.
func (r *rig) dump(t *testing.T) string {
	t.Helper()
	q, err := r.st.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var sb strings.Builder
	for ss.Next() {
		s := ss.At()
		fmt.Fprintf(&sb, "%s:", s.Labels())
		it := s.Iterator(nil)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			switch typ {
			case chunkenc.ValFloat:
				ts, v := it.At()
				fmt.Fprintf(&sb, " %d=%v", ts, v)
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				fmt.Fprintf(&sb, " %d=%s", ts, h)
			case chunkenc.ValFloatHistogram:
				ts, h := it.AtFloatHistogram(nil)
				fmt.Fprintf(&sb, " %d=%s", ts, h)
			}
		}
		require.NoError(t, it.Err())
		sb.WriteString("\n")
	}
	require.NoError(t, ss.Err())
	return sb.String()
}

// gc drops from the head every series with no sample at or after mint.
func (r *rig) gc(t *testing.T, mint int64) {
	t.Helper()
	require.NoError(t, r.st.DB().Head().Truncate(mint))
}

func marshal(t testing.TB, req *prompb.WriteRequest) []byte {
	t.Helper()
	b, err := proto.Marshal(req)
	require.NoError(t, err)
	return b
}

// TestRefCacheDifferential sends the same random requests to a receiver
// with its series cache and to one without: every answer and everything
// stored must be the same. The requests mix series sent again and again,
// labels out of order on the wire, invalid labels, series repeated in a
// request, out-of-order and duplicate samples, histograms and exemplars,
// the active-series limit, and series dropped by head GC between requests
// (their cached references go stale).
func TestRefCacheDifferential(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			lim := DefaultLimits()
			lim.MaxActiveSeries = 60
			lim.MaxLabelsPerSeries = 6
			cached, plain := newRig(t, lim, true, nil), newRig(t, lim, false, nil)
			rng := rand.New(rand.NewPCG(seed, 0))
			pool := randomSeries(rng, 90)
			base := t0.Add(-2 * time.Hour).UnixMilli()
			hits := 0.0
			for k := range 120 {
				at := base + int64(k)*15_000
				body := marshal(t, randomRequest(rng, pool, at))
				c1, m1 := cached.send(t.Context(), body)
				c2, m2 := plain.send(t.Context(), body)
				require.Equal(t, c2, c1, "request %d", k)
				require.Equal(t, m2, m1, "request %d", k)
				if k%25 == 24 {
					// Head GC: series not written in the last minute go.
					cached.gc(t, at-60_000)
					plain.gc(t, at-60_000)
				}
			}
			require.Equal(t, plain.dump(t), cached.dump(t))
			hits = counterValue(t, cached.h.m.cacheHits)
			require.Positive(t, hits, "the cache was used")
			require.Zero(t, counterValue(t, plain.h.m.cacheHits))
		})
	}
}

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// randomSeries returns n label sets: most valid and sorted, some out of
// order on the wire, some invalid (no name, a bad name, a duplicate name,
// too many labels).
func randomSeries(rng *rand.Rand, n int) [][]prompb.Label {
	out := make([][]prompb.Label, n)
	for i := range out {
		ls := series(fmt.Sprintf("m%d", i%7), "gpu", fmt.Sprint(i), "host", fmt.Sprintf("h%d", i%5))
		switch rng.IntN(12) {
		case 0:
			ls[0], ls[2] = ls[2], ls[0] // out of order on the wire
		case 1:
			ls = ls[1:] // no metric name
		case 2:
			ls = append(ls, prompb.Label{Name: "gpu", Value: "x"}) // duplicate name
		case 3:
			ls = append(ls, prompb.Label{Name: "a", Value: "1"}, prompb.Label{Name: "b", Value: "2"}, prompb.Label{Name: "c", Value: "3"}, prompb.Label{Name: "d", Value: "4"})
		case 4:
			ls = append(ls, prompb.Label{Name: "zz", Value: ""}) // an empty value
		}
		out[i] = ls
	}
	return out
}

// randomRequest draws a request at about at: up to 30 series of pool,
// some twice, with samples, a few stale markers, histograms and
// exemplars, and timestamps that sometimes go back.
func randomRequest(rng *rand.Rand, pool [][]prompb.Label, at int64) *prompb.WriteRequest {
	var req prompb.WriteRequest
	for range 1 + rng.IntN(30) {
		ls := pool[rng.IntN(len(pool))]
		ts := prompb.TimeSeries{Labels: ls}
		t := at
		switch rng.IntN(10) {
		case 0:
			t -= 20 * 60_000 // older than the out-of-order window
		case 1:
			t -= 15_000
		}
		for j := range 1 + rng.IntN(3) {
			v := float64(rng.IntN(4))
			if rng.IntN(20) == 0 {
				v = math.Float64frombits(0x7ff0000000000002) // stale marker
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Value: v, Timestamp: t + int64(j)*1000})
		}
		if rng.IntN(8) == 0 {
			ts.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprint(rng.IntN(100))}}, Value: 1, Timestamp: t}}
		}
		if rng.IntN(10) == 0 {
			ts.Samples = nil
			ts.Histograms = []prompb.Histogram{{
				Count: &prompb.Histogram_CountInt{CountInt: 2}, Sum: 3, Schema: 0, ZeroThreshold: 1e-128,
				ZeroCount:      &prompb.Histogram_ZeroCountInt{ZeroCountInt: 0},
				PositiveSpans:  []prompb.BucketSpan{{Offset: 0, Length: 1}},
				PositiveDeltas: []int64{2}, Timestamp: t,
			}}
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	return &req
}

// TestRefCacheTenants sends the same bytes as two tenants: each tenant's
// samples land in its own series (the tenant is part of the key).
func TestRefCacheTenants(t *testing.T) {
	r := newRig(t, DefaultLimits(), true, func(a storage.AppendableV2) storage.AppendableV2 { return tenant.Writes{A: a} })
	ctxA := tenant.NewContext(t.Context(), tenant.Principal{IDs: []string{"a"}})
	ctxB := tenant.NewContext(t.Context(), tenant.Principal{IDs: []string{"b"}})
	ts := t0.UnixMilli()
	for k, ctx := range []context.Context{ctxA, ctxB, ctxA, ctxB} {
		body := marshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: series("gpu_temp", "gpu", "0"), Samples: []prompb.Sample{{Value: float64(k), Timestamp: ts + int64(k)*1000}}},
		}})
		code, msg := r.send(ctx, body)
		require.Equal(t, http.StatusNoContent, code, msg)
	}
	require.Equal(t, fmt.Sprintf(`{__name__="gpu_temp", __tenant_id__="a", gpu="0"}: %d=0 %d=2
{__name__="gpu_temp", __tenant_id__="b", gpu="0"}: %d=1 %d=3
`, ts, ts+2000, ts+1000, ts+3000), r.dump(t))
	require.Equal(t, 2.0, counterValue(t, r.h.m.cacheHits))
}

// TestRefCacheCollision puts another series' entry under a series' key:
// the series is stored as itself, never into the other one.
func TestRefCacheCollision(t *testing.T) {
	r := newRig(t, DefaultLimits(), true, nil)
	ts := t0.UnixMilli()
	a := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: series("m", "k", "a"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}}}
	b := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: series("m", "k", "b"), Samples: []prompb.Sample{{Value: 2, Timestamp: ts}}}}}
	code, msg := r.send(t.Context(), marshal(t, a))
	require.Equal(t, http.StatusNoContent, code, msg)
	var req requestV1
	require.NoError(t, req.decode(marshal(t, a)))
	e, ok := r.h.refs.get(refKey(req.rawLabelsOf(0), ""), "", req.wireLabelsOf(0))
	require.True(t, ok)
	// b's key now holds a's entry, as a hash collision would.
	require.NoError(t, req.decode(marshal(t, b)))
	r.h.refs.put(refKey(req.rawLabelsOf(0), ""), e)
	code, msg = r.send(t.Context(), marshal(t, b))
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Equal(t, fmt.Sprintf("{__name__=\"m\", k=\"a\"}: %d=1\n{__name__=\"m\", k=\"b\"}: %d=2\n", ts, ts), r.dump(t))
	require.Zero(t, counterValue(t, r.h.m.cacheHits))
}

// TestRefCacheStaleRef drops a cached series from the head: the next
// request stores it again, under the new reference, which the cache then
// holds.
func TestRefCacheStaleRef(t *testing.T) {
	r := newRig(t, DefaultLimits(), true, nil)
	old := t0.Add(-time.Hour).UnixMilli()
	body := func(ts int64) []byte {
		return marshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: series("m", "k", "a"), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}}}})
	}
	code, msg := r.send(t.Context(), body(old))
	require.Equal(t, http.StatusNoContent, code, msg)
	var req requestV1
	require.NoError(t, req.decode(body(old)))
	key := refKey(req.rawLabelsOf(0), "")
	e1, ok := r.h.refs.get(key, "", req.wireLabelsOf(0))
	require.True(t, ok)
	r.gc(t, old+1)
	require.Zero(t, r.st.NumSeries())
	code, msg = r.send(t.Context(), body(t0.UnixMilli()))
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Equal(t, uint64(1), r.st.NumSeries())
	e2, ok := r.h.refs.get(key, "", req.wireLabelsOf(0))
	require.True(t, ok)
	require.NotEqual(t, e1.ref, e2.ref, "the cache holds the head's new reference")
	require.Equal(t, fmt.Sprintf("{__name__=\"m\", k=\"a\"}: %d=1\n", t0.UnixMilli()), r.dump(t))
}

// TestRefCacheActiveSeriesLimit fills the head up to max_active_series
// after a cached series was dropped from it: that series, sent again, is
// a new one and is refused.
func TestRefCacheActiveSeriesLimit(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxActiveSeries = 3
	r := newRig(t, lim, true, nil)
	old := t0.Add(-time.Hour).UnixMilli()
	send := func(ts int64, ids ...string) (int, string) {
		var req prompb.WriteRequest
		for _, id := range ids {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: series("m", "id", id), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}})
		}
		return r.send(t.Context(), marshal(t, &req))
	}
	code, msg := send(old, "a")
	require.Equal(t, http.StatusNoContent, code, msg)
	r.gc(t, old+1)
	code, msg = send(t0.UnixMilli(), "b", "c", "d")
	require.Equal(t, http.StatusNoContent, code, msg)
	code, msg = send(t0.UnixMilli()+1000, "b", "a")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "1 active_series")
	require.Equal(t, uint64(3), r.st.NumSeries())
}

// TestRefCacheSweep drops the entries unused for two periods, and keeps
// a shard within its bound.
func TestRefCacheSweep(t *testing.T) {
	r := newRig(t, DefaultLimits(), true, nil)
	body := func(ts int64, ids ...string) []byte {
		var req prompb.WriteRequest
		for _, id := range ids {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: series("m", "id", id), Samples: []prompb.Sample{{Value: 1, Timestamp: ts}}})
		}
		return marshal(t, &req)
	}
	ts := t0.UnixMilli()
	code, msg := r.send(t.Context(), body(ts, "a", "b"))
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Equal(t, 2, r.h.refs.len())
	for k := range 3 {
		r.now = r.now.Add(refCacheIdle)
		ts += 1000
		code, msg = r.send(t.Context(), body(ts, "a"))
		require.Equal(t, http.StatusNoContent, code, msg)
		if k == 0 {
			require.Equal(t, 2, r.h.refs.len(), "b was used in the last period")
		}
	}
	require.Equal(t, 1, r.h.refs.len(), "b went unused for two periods")

	c := newRefCache(0, t0)
	c.perShard = 1
	s := &c.shards[0]
	c.put(1, refEntry{ref: 1})
	c.put(2, refEntry{ref: 2}) // same shard, full: a's period is this one
	require.Len(t, s.m, 1)
	c.epoch.Add(1)
	c.put(2, refEntry{ref: 2}) // entry 1 is of the last period: dropped
	require.Len(t, s.m, 1)
	require.Equal(t, storage.SeriesRef(2), s.m[2].ref)
}

// TestRawLabels checks which series get a key: labels in one run of
// fields, wherever the run is.
func TestRawLabels(t *testing.T) {
	label := func(n, v string) []byte {
		l := prompb.Label{Name: n, Value: v}
		b, _ := l.Marshal()
		return append([]byte{0x0a, byte(len(b))}, b...)
	}
	sample := func() []byte {
		s := prompb.Sample{Value: 1, Timestamp: 1}
		b, _ := s.Marshal()
		return append([]byte{0x12, byte(len(b))}, b...)
	}
	series := func(parts ...[]byte) []byte {
		b := bytes.Join(parts, nil)
		return append([]byte{0x0a, byte(len(b))}, b...)
	}
	l1, l2 := label("__name__", "m"), label("k", "v")
	for _, c := range []struct {
		name string
		body []byte
		raw  []byte
	}{
		{"labels first", series(l1, l2, sample()), append(append([]byte{}, l1...), l2...)},
		{"labels last", series(sample(), l1, l2), append(append([]byte{}, l1...), l2...)},
		{"split", series(l1, sample(), l2), nil},
		{"none", series(sample()), nil},
	} {
		var req requestV1
		require.NoError(t, req.decode(c.body), c.name)
		require.Equal(t, c.raw, req.rawLabelsOf(0), c.name)
	}
}

// limitSource gives every tenant the same limits.
type limitSource limits.Limits

func (s limitSource) For(string) limits.Limits { return limits.Limits(s) }

// TestRefCacheTenantLimits is TestRefCacheDifferential under tenancy and
// its per-tenant limits (max_series_per_metric, max_active_series): a
// cached series still passes the limits' appender, which counts every
// new series, so both receivers refuse the same series.
func TestRefCacheTenantLimits(t *testing.T) {
	wrap := func(a storage.AppendableV2) storage.AppendableV2 {
		e := limits.NewEnforcer(limitSource{MaxSeriesPerMetric: 4, MaxActiveSeries: 12}, limits.EnforcerOptions{Now: func() time.Time { return t0 }}, nil)
		return limits.Appendable(tenant.Writes{A: a}, e, tenant.WriteID)
	}
	cached, plain := newRig(t, DefaultLimits(), true, wrap), newRig(t, DefaultLimits(), false, wrap)
	ctxs := []context.Context{
		tenant.NewContext(t.Context(), tenant.Principal{IDs: []string{"a"}}),
		tenant.NewContext(t.Context(), tenant.Principal{IDs: []string{"b"}}),
	}
	rng := rand.New(rand.NewPCG(7, 0))
	pool := randomSeries(rng, 40)
	base := t0.Add(-time.Hour).UnixMilli()
	refused := 0
	for k := range 80 {
		body := marshal(t, randomRequest(rng, pool, base+int64(k)*15_000))
		ctx := ctxs[rng.IntN(len(ctxs))]
		c1, m1 := cached.send(ctx, body)
		c2, m2 := plain.send(ctx, body)
		require.Equal(t, c2, c1, "request %d", k)
		require.Equal(t, m2, m1, "request %d", k)
		if strings.Contains(m1, "limit") {
			refused++
		}
	}
	require.Equal(t, plain.dump(t), cached.dump(t))
	require.Positive(t, refused, "the limits refused series")
	require.Positive(t, counterValue(t, cached.h.m.cacheHits))
}
