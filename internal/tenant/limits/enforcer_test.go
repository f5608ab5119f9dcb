package limits

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func limitError(t *testing.T, err error) *LimitError {
	t.Helper()
	var le *LimitError
	require.True(t, errors.As(err, &le), "a *LimitError: %v", err)
	return le
}

func TestAllowSamples(t *testing.T) {
	src := &static{defaults: Limits{IngestionRate: 100, IngestionBurstSize: 200}}
	e, c := newTestEnforcer(src)

	require.NoError(t, e.AllowSamples("a", 150), "the bucket starts full")
	require.NoError(t, e.AllowSamples("a", 50))
	err := e.AllowSamples("a", 1)
	le := limitError(t, err)
	require.Equal(t, "a", le.Tenant)
	require.Equal(t, IngestionRate, le.Limit)
	require.Equal(t, 10*time.Millisecond, le.RetryAfter)
	require.EqualError(t, err, `tenant "a": ingestion rate limit (100 samples/s, burst 200) exceeded while adding 1 samples; see ingestion_rate in the limits file`)

	require.NoError(t, e.AllowSamples("b", 200), "each tenant has its own bucket")

	c.Advance(time.Second)
	require.NoError(t, e.AllowSamples("a", 100), "a second refills 100")
	le = limitError(t, e.AllowSamples("a", 60))
	require.Equal(t, 600*time.Millisecond, le.RetryAfter)

	c.Advance(time.Hour)
	le = limitError(t, e.AllowSamples("a", 500))
	require.Zero(t, le.RetryAfter, "a request larger than the burst never fits")
	require.Contains(t, le.Error(), "exceeded while adding 500 samples, more than the burst: a request this large is never accepted")
	require.NoError(t, e.AllowSamples("a", 200), "the refused request took nothing")

	require.NoError(t, e.AllowSamples("a", 0))
	src.set("u", Limits{})
	for range 100 {
		require.NoError(t, e.AllowSamples("u", 1_000_000), "0 is unlimited")
	}
}

func TestAllowSamplesMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{IngestionRate: 10, IngestionBurstSize: 10}}, EnforcerOptions{Now: c.Now}, reg)
	require.NoError(t, e.AllowSamples("a", 10))
	require.Error(t, e.AllowSamples("a", 7))
	require.Error(t, e.AllowSamples("a", 3))
	require.Equal(t, 10.0, testutil.ToFloat64(e.m.discardedSamples.WithLabelValues("a", IngestionRate)))
	require.Equal(t, 2.0, testutil.ToFloat64(e.m.rejected.WithLabelValues("a", IngestionRate)))
}

// A burst of 0 with a rate is one second of the rate.
func TestBurstDefaultsToOneSecond(t *testing.T) {
	e, _ := newTestEnforcer(&static{defaults: Limits{IngestionRate: 50}})
	require.NoError(t, e.AllowSamples("a", 50))
	le := limitError(t, e.AllowSamples("a", 1))
	require.Contains(t, le.Msg, "(50 samples/s, burst 50)")
}

// A reload that changes a tenant's rate or burst changes its bucket in
// place on the next request.
func TestRateFollowsReload(t *testing.T) {
	src := &static{defaults: Limits{IngestionRate: 10, IngestionBurstSize: 10}}
	e, c := newTestEnforcer(src)
	require.NoError(t, e.AllowSamples("a", 10))
	require.Error(t, e.AllowSamples("a", 1))

	// The bucket takes the new rate at its next use: it refills at the new
	// rate from then on.
	src.set("a", Limits{IngestionRate: 1000, IngestionBurstSize: 1000})
	require.Error(t, e.AllowSamples("a", 10))
	c.Advance(100 * time.Millisecond)
	require.NoError(t, e.AllowSamples("a", 100), "100 ms at the new rate")
	require.Error(t, e.AllowSamples("a", 10))
	c.Advance(time.Second)
	require.NoError(t, e.AllowSamples("a", 1000), "the larger burst")

	src.set("a", Limits{IngestionRate: 1, IngestionBurstSize: 1})
	c.Advance(time.Second)
	require.Error(t, e.AllowSamples("a", 2))
	require.NoError(t, e.AllowSamples("a", 1))

	src.set("a", Limits{})
	require.NoError(t, e.AllowSamples("a", 1<<30), "back to unlimited")
}

func TestAllowSpans(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{SpansRate: 2.5, SpansBurstSize: 5, IngestionRate: 1}}, EnforcerOptions{Now: c.Now}, reg)
	require.NoError(t, e.AllowSpans("a", 5))
	err := e.AllowSpans("a", 4)
	le := limitError(t, err)
	require.Equal(t, SpansRate, le.Limit)
	require.Equal(t, 1600*time.Millisecond, le.RetryAfter)
	require.EqualError(t, err, `tenant "a": spans rate limit (2.5 per second, burst 5) exceeded while adding 4 spans and log records; see spans_rate in the limits file`)
	require.Equal(t, 4.0, testutil.ToFloat64(e.m.discardedSpans.WithLabelValues("a", SpansRate)))
	require.NoError(t, e.AllowSamples("a", 1), "samples and spans have separate buckets")
	c.Advance(2 * time.Second)
	require.NoError(t, e.AllowSpans("a", 5))
}

func TestCheckRequestSize(t *testing.T) {
	src := &static{defaults: Limits{MaxRequestBytes: 1000}}
	e, _ := newTestEnforcer(src)
	require.NoError(t, e.CheckRequestSize("a", 1000))
	err := e.CheckRequestSize("a", 1001)
	le := limitError(t, err)
	require.Equal(t, MaxRequestBytes, le.Limit)
	require.EqualError(t, err, `tenant "a": request size limit (1000 bytes) exceeded by a request of 1001 bytes; see max_request_bytes in the limits file`)
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.rejected.WithLabelValues("a", MaxRequestBytes)))
	src.set("big", Limits{})
	require.NoError(t, e.CheckRequestSize("big", 1<<40))
}

func TestAllowPushGroup(t *testing.T) {
	e, _ := newTestEnforcer(&static{defaults: Limits{MaxPushGroups: 2}})
	require.NoError(t, e.AllowPushGroup("a", 0))
	require.NoError(t, e.AllowPushGroup("a", 1))
	err := e.AllowPushGroup("a", 2)
	require.EqualError(t, err, `tenant "a": push group limit (2) reached: the tenant has 2 groups; replace or delete one instead of adding another; see max_push_groups in the limits file`)
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.rejected.WithLabelValues("a", MaxPushGroups)))

	e, _ = newTestEnforcer(&static{})
	require.NoError(t, e.AllowPushGroup("a", 1000))
}

func TestQuerySamples(t *testing.T) {
	e, _ := newTestEnforcer(&static{defaults: Limits{MaxQuerySamples: 5000}})
	require.Equal(t, 5000, e.MaxQuerySamples("a"))
	err := e.QuerySamplesError("a")
	require.Equal(t, MaxQuerySamples, limitError(t, err).Limit)
	require.Contains(t, err.Error(), `tenant "a": query sample limit (5000) exceeded`)
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.rejected.WithLabelValues("a", MaxQuerySamples)))
}

func TestAcquireQuery(t *testing.T) {
	src := &static{defaults: Limits{MaxQueryConcurrency: 2}}
	e, _ := newTestEnforcer(src)
	ctx := t.Context()
	r1, err := e.AcquireQuery(ctx, "a")
	require.NoError(t, err)
	r2, err := e.AcquireQuery(ctx, "a")
	require.NoError(t, err)
	rb, err := e.AcquireQuery(ctx, "b")
	require.NoError(t, err, "tenants have their own slots")
	defer rb()

	// A third query waits until its context ends, then is refused.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = e.AcquireQuery(short, "a")
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	le := limitError(t, err)
	require.Equal(t, MaxQueryConcurrency, le.Limit)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, `tenant "a": query concurrency limit (2) reached: no query slot freed before the request ended (context deadline exceeded); see max_query_concurrency in the limits file`, err.Error())
	require.Equal(t, 1.0, testutil.ToFloat64(e.m.rejected.WithLabelValues("a", MaxQueryConcurrency)))

	// A waiting query gets the slot a finished one frees.
	got := make(chan error)
	go func() {
		r, err := e.AcquireQuery(ctx, "a")
		if err == nil {
			defer r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a third query ran: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r1()
	r1() // a second release frees nothing more
	require.NoError(t, <-got)
	r2()

	// All slots free again: two run, the third waits.
	r1, err = e.AcquireQuery(ctx, "a")
	require.NoError(t, err)
	defer r1()
	r2, err = e.AcquireQuery(ctx, "a")
	require.NoError(t, err)
	defer r2()
	short2, cancel2 := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel2()
	_, err = e.AcquireQuery(short2, "a")
	require.Error(t, err)
}

// A waiting query sees a limit raised by a reload without another query
// ending.
func TestAcquireQueryLimitRaised(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the one-second recheck")
	}
	src := &static{defaults: Limits{MaxQueryConcurrency: 1}}
	e, _ := newTestEnforcer(src)
	r, err := e.AcquireQuery(t.Context(), "a")
	require.NoError(t, err)
	defer r()
	got := make(chan error)
	go func() {
		r, err := e.AcquireQuery(t.Context(), "a")
		if err == nil {
			r()
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	src.set("a", Limits{MaxQueryConcurrency: 2})
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(3 * queryRecheck):
		t.Fatal("the waiting query did not see the raised limit")
	}
}

// Many goroutines never hold more slots than the limit.
func TestAcquireQueryConcurrent(t *testing.T) {
	e, _ := newTestEnforcer(&static{defaults: Limits{MaxQueryConcurrency: 3}})
	var mu sync.Mutex
	running, peak := 0, 0
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			r, err := e.AcquireQuery(t.Context(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			r()
		})
	}
	wg.Wait()
	require.Equal(t, 3, peak)
	require.False(t, (*e.tenants.Load())["a"].q.busy())
}

// Purge drops the state and the metrics of tenants idle for the idle
// timeout, and keeps those with active series or running queries.
func TestPurgeTenants(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{IngestionRate: 1, IngestionBurstSize: 1}}, EnforcerOptions{Now: c.Now, IdleTimeout: time.Minute}, reg)
	require.Error(t, e.AllowSamples("idle", 2))
	require.NoError(t, e.SeriesSeen("series", "up", 1, c.Now()))
	release, err := e.AcquireQuery(t.Context(), "querying")
	require.NoError(t, err)

	e.Purge(c.Now())
	require.Len(t, *e.tenants.Load(), 3, "nothing idle yet")

	c.Advance(30 * time.Second)
	require.NoError(t, e.SeriesSeen("series", "up", 1, c.Now()))
	c.Advance(31 * time.Second)
	e.Purge(c.Now())
	require.ElementsMatch(t, []string{"series", "querying"}, tenantNames(e))
	require.Equal(t, 0, countTenant(t, reg, "idle"))
	require.Positive(t, countTenant(t, reg, "series"))

	release()
	c.Advance(time.Minute)
	e.Purge(c.Now())
	require.Empty(t, tenantNames(e))
	require.Equal(t, 0, countTenant(t, reg, "series"))

	// A tenant that comes back starts afresh: a full bucket.
	require.NoError(t, e.AllowSamples("idle", 1))
}

func tenantNames(e *Enforcer) []string {
	var out []string
	for name := range *e.tenants.Load() {
		out = append(out, name)
	}
	return out
}

// countTenant counts the series of the registry with tenant="name".
func countTenant(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tenant" && l.GetValue() == name {
					n++
				}
			}
		}
	}
	return n
}

// A state that Purge removed is marked: a request holding it from before
// cannot touch it, and gets a new state.
func TestPurgedStateIsReplaced(t *testing.T) {
	c := newClock()
	e := NewEnforcer(&static{}, EnforcerOptions{Now: c.Now, IdleTimeout: time.Second}, nil)
	st := e.state("a", c.Now())
	e.Purge(c.Now().Add(2 * time.Second))
	require.False(t, st.touch(c.Now().Unix()))
	st2 := e.state("a", c.Now())
	require.NotSame(t, st, st2)
	require.Same(t, st2, (*e.tenants.Load())["a"])
}

// Requests racing purges (run with -race) leave no purged state in the map.
func TestPurgeRace(t *testing.T) {
	c := newClock()
	e := NewEnforcer(&static{defaults: Limits{IngestionRate: 1e9}}, EnforcerOptions{Now: c.Now, IdleTimeout: time.Second}, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.Purge(c.Now().Add(2 * time.Second))
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				if err := e.AllowSamples("a", 1); err != nil {
					t.Error(err)
				}
				release, err := e.AcquireQuery(t.Context(), "b")
				if err != nil {
					t.Error(err)
					continue
				}
				release()
			}
		})
	}
	time.Sleep(10 * time.Millisecond)
	close(stop)
	wg.Wait()
	for name, st := range *e.tenants.Load() {
		require.NotEqual(t, int64(purged), st.lastUsed.Load(), "tenant %s", name)
	}
}

func TestRun(t *testing.T) {
	c := newClock()
	e := NewEnforcer(&static{}, EnforcerOptions{Now: c.Now, IdleTimeout: time.Minute, PurgeInterval: time.Millisecond}, nil)
	require.NoError(t, e.SeriesSeen("a", "up", 1, c.Now()))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	c.Advance(2 * time.Minute)
	require.Eventually(t, func() bool { n, _ := e.ActiveSeries("a", "up"); return n == 0 }, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestLimitsOfTenant(t *testing.T) {
	src := &static{defaults: Limits{MaxPushGroups: 1}}
	src.set("b", Limits{MaxPushGroups: 9})
	e, _ := newTestEnforcer(src)
	require.Equal(t, 1, e.Limits("a").MaxPushGroups)
	require.Equal(t, 9, e.Limits("b").MaxPushGroups)
	require.True(t, strings.HasPrefix(limitError(t, e.AllowPushGroup("b", 9)).Msg, "push group limit (9)"))
}
