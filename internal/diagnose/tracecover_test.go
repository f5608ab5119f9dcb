package diagnose_test

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// coverScene writes, over 40 minutes, a CPU seconds counter per service (front,
// cart, pay, labelled service) every 30 s, and the span metrics' calls of
// each service (labelled service_name, as the connector writes them)
// every 15 s from traceFrom to traceTo only: the traces cover a short
// stretch, as a data set that keeps spans around its faults, or a
// pipeline that was down, has them. From minute 30 pay's CPU rises by
// rise cores (0: no fault). A service in stopped is no longer called from
// minute 30: the writer still flushes its total, unchanged. The diagnosis
// is at minute 40 over window.
func coverScene(t *testing.T, rise float64, traceFrom, traceTo time.Duration, stopped string, window time.Duration) *diagnose.Report {
	t.Helper()
	start := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	end := start.Add(40 * time.Minute)
	st, app, add := sceneStore(t, end)
	cpu := map[string]float64{"front": 0.4, "cart": 0.2, "pay": 0.3}
	calls, used := map[string]float64{}, map[string]float64{}
	for i := 0; !start.Add(time.Duration(i) * 15 * time.Second).After(end); i++ {
		off := time.Duration(i) * 15 * time.Second
		ts := start.Add(off)
		wiggle := 1 + 0.04*float64(i%5-2)
		if i%2 == 0 {
			for svc, c := range cpu {
				v := c * wiggle
				if svc == "pay" && off >= 30*time.Minute {
					v += rise
				}
				used[svc] += 30 * v
				add(labels.FromStrings("__name__", "svc_cpu_seconds_total", "service", svc), ts, used[svc])
			}
		}
		for svc := range cpu {
			if svc != stopped || off < 30*time.Minute {
				calls[svc] += 20 * wiggle
			}
		}
		if off < traceFrom || off > traceTo {
			continue
		}
		for svc := range cpu {
			add(labels.FromStrings("__name__", "traces_span_metrics_calls_total", "service_name", svc,
				"span_name", "GET /"+svc, "span_kind", "SPAN_KIND_SERVER", "status_code", "STATUS_CODE_UNSET"), ts, calls[svc])
		}
	}
	require.NoError(t, app.Commit())
	e, err := diagnose.New(diagnose.Options{EntityLabel: "service", Window: window})
	require.NoError(t, err)
	rep, err := e.Diagnose(t.Context(), st, end)
	require.NoError(t, err)
	return rep
}

// TestTracesReadWhereTheyCover: the traces cover minutes 23.5 to 33 and
// the diagnosis is at minute 40 over the 16 minutes since minute 24, so
// the CPU and the calls have the same history before the onset. Where no calls series of any service has a
// sample, the traces do not cover the time: the totals held over the
// lookback are not every service's calls falling to zero, and pay's CPU
// rise ranks it first, at half the rise too, with the CPU as its evidence.
// With traces from the start to the end, the same. Decoy: a service whose
// calls stop while the writer goes on flushing (its total unchanged, the
// others' rising) did stop being called, and ranks first.
func TestTracesReadWhereTheyCover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rise     float64
		from, to time.Duration
	}{
		{"traces around the onset", 0.6, 23*time.Minute + 30*time.Second, 33 * time.Minute},
		{"half the rise", 0.3, 23*time.Minute + 30*time.Second, 33 * time.Minute},
		{"traces throughout", 0.6, 0, 40 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := coverScene(t, tc.rise, tc.from, tc.to, "", 16*time.Minute)
			require.NotEmpty(t, rep.Causes)
			first := rep.Causes[0]
			require.Equal(t, diagnose.Entity{"service": "pay"}, first.Entity, brief(rep))
			require.NotEmpty(t, first.Evidence)
			require.Equal(t, "svc_cpu_seconds_total", first.Evidence[0].Signal, brief(rep))
			for _, c := range rep.Causes {
				for _, ev := range c.Evidence {
					require.NotContains(t, ev.Signal, "traces_span_metrics_calls", "no service's calls fell: the traces ended (%s)", brief(rep))
				}
			}
		})
	}
	t.Run("decoy: one service's calls stop", func(t *testing.T) {
		rep := coverScene(t, 0, 0, 40*time.Minute, "cart", 16*time.Minute)
		require.NotEmpty(t, rep.Causes)
		require.Equal(t, diagnose.Entity{"service": "cart"}, rep.Causes[0].Entity, brief(rep))
		require.Contains(t, rep.Causes[0].Evidence[0].Signal, "traces_span_metrics_calls", brief(rep))
	})
}
