package tenant_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/tenant"
)

// seeded is an embedded store where tenants a and b each wrote the same
// series names, b also a series of its own, and a client tried to write a
// tenant label of its own.
func seeded(t *testing.T) (*store.Embedded, time.Time) {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	w := tenant.Writes{A: st}
	write := func(id string, v float64, ls ...string) {
		app := w.AppenderV2(tenant.WithID(context.Background(), id))
		if _, err := app.Append(0, labels.FromStrings(ls...), 0, now.UnixMilli(), v, nil, nil, storage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write("a", 1, "__name__", "up", "job", "x")
	write("b", 2, "__name__", "up", "job", "x")
	write("b", 3, "__name__", "secret_b", "job", "y")
	// A client sending a forged tenant label writes to its own tenant.
	write("a", 4, "__name__", "forged", "__tenant_id__", "b")
	return st, now
}

func TestReadsOneTenant(t *testing.T) {
	st, now := seeded(t)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	r := tenant.Reads{Q: st}
	ctxA := tenant.WithID(context.Background(), "a")
	for _, q := range []string{
		`{__name__=~".+"}`,
		`{__name__=~".+", __tenant_id__!="a"}`,
		`{__name__=~".+", __tenant_id__="b"}`,
		`{__name__=~".+", __tenant_id__=~".*"}`,
		`up or {__tenant_id__="b"}`,
		`secret_b`,
		`forged`,
	} {
		qry, err := eng.NewInstantQuery(ctxA, r, nil, q, now)
		if err != nil {
			t.Fatal(err)
		}
		res := qry.Exec(ctxA)
		if res.Err != nil {
			t.Fatalf("%s: %v", q, res.Err)
		}
		vec, _ := res.Vector()
		for _, s := range vec {
			if s.F != 1 && s.F != 4 {
				t.Errorf("%s as a read %v = %v: another tenant's", q, s.Metric, s.F)
			}
			if s.Metric.Has(tenant.Label) {
				t.Errorf("%s as a: %v shows the tenant label", q, s.Metric)
			}
		}
	}
	q, err := r.Querier(0, now.UnixMilli()+1)
	if err != nil {
		t.Fatal(err)
	}
	names, _, err := q.LabelNames(ctxA, nil)
	if err != nil || slices.Contains(names, tenant.Label) {
		t.Errorf("label names as a = %v, %v", names, err)
	}
	vals, _, err := q.LabelValues(ctxA, "__name__", nil)
	if err != nil || !slices.Equal(vals, []string{"forged", "up"}) {
		t.Errorf("metric names as a = %v, %v; want [forged up]", vals, err)
	}
	vals, _, err = q.LabelValues(ctxA, tenant.Label, nil)
	if err != nil || len(vals) != 0 {
		t.Errorf("tenant values as a = %v, %v", vals, err)
	}
	// No tenant: nothing, and an error.
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	if ss.Next() || !errors.Is(ss.Err(), tenant.ErrNoTenant) {
		t.Errorf("a read with no tenant: err %v", ss.Err())
	}
	if _, _, err := q.LabelNames(context.Background(), nil); !errors.Is(err, tenant.ErrNoTenant) {
		t.Errorf("label names with no tenant: %v", err)
	}
}

func TestReadsFederated(t *testing.T) {
	st, now := seeded(t)
	q, err := tenant.Reads{Q: st}.Querier(0, now.UnixMilli()+1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenant.NewContext(context.Background(), tenant.Principal{IDs: []string{"a", "b"}})
	ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	var got []string
	for ss.Next() {
		got = append(got, ss.At().Labels().Get(tenant.Label))
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("up across a|b: tenants %v, want [a b]", got)
	}
	// A tenant ID with regular-expression characters matches itself only.
	ctx = tenant.NewContext(context.Background(), tenant.Principal{IDs: []string{"(a)", "*"}})
	ss = q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	if ss.Next() {
		t.Errorf("tenants (a)|* read %v", ss.At().Labels())
	}
}

func TestWritesNeedATenant(t *testing.T) {
	st, now := seeded(t)
	app := tenant.Writes{A: st}.AppenderV2(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "x"), 0, now.UnixMilli(), 1, nil, nil, storage.AOptions{}); !errors.Is(err, tenant.ErrNoTenant) {
		t.Fatalf("append with no tenant: %v", err)
	}
	_ = app.Rollback()
	of := tenant.Writes{A: st, Of: func(context.Context) (string, bool) { return "scraped", true }}
	app = of.AppenderV2(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "x"), 0, now.UnixMilli(), 1, nil, nil, storage.AOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	q, _ := st.Querier(0, now.UnixMilli()+1)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))
	if !ss.Next() || ss.At().Labels().Get(tenant.Label) != "scraped" {
		t.Errorf("a write through Of is not stamped with its tenant")
	}
}

// TestSampleBudget: a read's iterators stop with the budget's error past
// its samples; a Seek that stays on a sample is not charged twice.
func TestSampleBudget(t *testing.T) {
	st, now := seeded(t)
	q, err := tenant.Reads{Q: st}.Querier(0, now.UnixMilli()+1)
	require.NoError(t, err)
	over := errors.New("over budget")
	ctx := tenant.WithSampleBudget(tenant.WithID(context.Background(), "a"), 1, func() error { return over })
	ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var errs []error
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Seek(0) != chunkenc.ValNone {
			it.At()
			it.At() // the same sample again
			n++
			if it.Next() == chunkenc.ValNone {
				break
			}
		}
		errs = append(errs, it.Err())
	}
	require.Equal(t, 2, n, "a's two samples: the second is read, then the query fails")
	require.Equal(t, []error{nil, over}, errs)
}
