package traces

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

func TestRetentionByAge(t *testing.T) {
	s := open(t, func(c *Config) { c.Retention.Set("2h") })
	m := time.Minute
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 1, service: "a", name: "old", start: 10 * m, dur: m, attrs: map[string]any{"request_id": "r1"}},
		spanSpec{trace: 2, span: 2, service: "a", name: "new", start: 70 * m, dur: m, attrs: map[string]any{"request_id": "r2"}},
	)))
	require.NoError(t, s.ConsumeLogs(t.Context(), logs(t,
		logSpec{service: "a", at: 10 * m, trace: 1, body: "old"},
		logSpec{service: "a", at: 70 * m, trace: 2, body: "new"},
	)))

	// Two hours after the first hour ended, it is past retention; the
	// second is not, by a minute.
	s.clock.set(t0.Add(3*time.Hour + m))
	require.NoError(t, s.EnforceRetention(t.Context()))
	check := func() {
		t.Helper()
		_, err := s.Trace(t.Context(), tid(1))
		require.ErrorIs(t, err, ErrNotFound)
		_, err = s.Trace(t.Context(), tid(2))
		require.NoError(t, err)
		got, err := s.SearchLogs(t.Context(), LogQuery{})
		require.NoError(t, err)
		require.Equal(t, []string{"new"}, bodies(got))
		got, err = s.LogsForRequest(t.Context(), "r1")
		require.NoError(t, err)
		require.Empty(t, got)
		found, err := s.SearchTraces(t.Context(), TraceQuery{Service: "a"})
		require.NoError(t, err)
		require.Len(t, found, 1)
	}
	check()
	require.Equal(t, 1.0, testutil.ToFloat64(s.m.retentionParts.WithLabelValues("age")))
	require.Equal(t, 0.0, testutil.ToFloat64(s.m.retentionParts.WithLabelValues("size")))

	// Late data for the deleted hour is dropped.
	require.NoError(t, s.ConsumeTraces(t.Context(), traces(t,
		spanSpec{trace: 1, span: 3, service: "a", name: "late", start: 20 * m, dur: m})))
	require.Equal(t, map[string]float64{"spans/too_old": 1}, dropped(t, s))

	// Running it again deletes nothing more; a restart does not bring it back.
	require.NoError(t, s.EnforceRetention(t.Context()))
	require.Equal(t, 1.0, testutil.ToFloat64(s.m.retentionParts.WithLabelValues("age")))
	require.NoError(t, s.Close())
	s.reopen(t, func(c *Config) { c.Retention.Set("2h") })
	check()

	// Once the clock passes the second hour too, nothing is left.
	s.clock.set(t0.Add(5 * time.Hour))
	require.NoError(t, s.EnforceRetention(t.Context()))
	_, err := s.Trace(t.Context(), tid(2))
	require.ErrorIs(t, err, ErrNotFound)
	require.Empty(t, s.partsSnapshot())
}

func TestRetentionBySize(t *testing.T) {
	s := open(t, func(c *Config) { c.MaxBytes = 0 })
	s.clock.set(t0.Add(5 * time.Hour))
	var hours [4][]tracestest.Trace
	for h := range hours {
		gen := tracestest.NewGen(uint64(h), t0.Add(time.Duration(h)*time.Hour), time.Second)
		batches, infos := gen.Batches(10, 20, 10)
		for _, td := range batches {
			require.NoError(t, s.ConsumeTraces(t.Context(), td))
		}
		hours[h] = infos
		require.NoError(t, s.db.Flush())
	}
	full, err := s.tableBytes()
	require.NoError(t, err)
	require.NoError(t, s.EnforceRetention(t.Context()), "no bound: nothing deleted")
	require.Len(t, s.partsSnapshot(), 4)

	// Room for about two hours: the oldest two go.
	s.cfg.MaxBytes = int64(full / 2)
	require.NoError(t, s.EnforceRetention(t.Context()))
	size, err := s.tableBytes()
	require.NoError(t, err)
	require.LessOrEqual(t, size, uint64(s.cfg.MaxBytes))
	left := s.partsSnapshot()
	require.NotEmpty(t, left)
	require.Less(t, len(left), 4)
	require.Equal(t, partOf(uint64(t0.Add(3*time.Hour).UnixNano())), left[len(left)-1], "the newest hour stays")
	for h, infos := range hours {
		kept := partOf(uint64(t0.Add(time.Duration(h)*time.Hour).UnixNano())) >= left[0]
		for _, in := range infos {
			_, err := s.Trace(t.Context(), in.ID)
			if kept {
				require.NoError(t, err, "hour %d", h)
			} else {
				require.ErrorIs(t, err, ErrNotFound, "hour %d", h)
			}
		}
	}
	require.Equal(t, float64(4-len(left)), testutil.ToFloat64(s.m.retentionParts.WithLabelValues("size")))
	require.Positive(t, testutil.ToFloat64(s.m.retentionBytes.WithLabelValues("size")))

	// However small the bound, the newest hour is kept.
	s.cfg.MaxBytes = 1
	require.NoError(t, s.EnforceRetention(t.Context()))
	require.Len(t, s.partsSnapshot(), 1)
	for _, in := range hours[3] {
		_, err := s.Trace(t.Context(), in.ID)
		require.NoError(t, err)
	}
}

func TestDiskBytesGauge(t *testing.T) {
	s := open(t, nil)
	gen := tracestest.NewGen(1, t0.Add(time.Minute), time.Second)
	td, _ := gen.Batch(10, 10)
	require.NoError(t, s.ConsumeTraces(t.Context(), td))
	mfs, err := s.reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	require.Positive(t, got["vigil_traces_disk_bytes"])
	require.Equal(t, 100.0, got["vigil_traces_spans_stored_total"])
	require.Contains(t, got, "vigil_traces_logs_stored_total")
	require.Contains(t, got, "vigil_traces_retention_deleted_total")
}
