package microsvc

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// deviations returns every service's deviation of the metric kind moves,
// at the run's onset.
func (r *run) deviations(t testing.TB, kind string) map[string]float64 {
	t.Helper()
	split := r.onsetIndex()
	out := map[string]float64{}
	for _, svc := range r.gen.Services() {
		out[svc] = deviation(r.metric(t, kind, svc), split)
	}
	return out
}

// top returns the service of largest absolute deviation.
func top(dev map[string]float64) (string, float64) {
	best, bv := "", -1.0
	for s, v := range dev {
		if math.Abs(v) > bv || (math.Abs(v) == bv && s < best) {
			best, bv = s, math.Abs(v)
		}
	}
	return best, bv
}

// TestSignature: after the onset the faulty service's own metric moves
// more, in its own robust scales, than any other service's; a plain fault
// moves it by more than 6 scales, a subtle one by 1 to 3 healthy spreads
// (against the healthy run of the same seed); a CPU hog or a delay also
// slows a caller.
func TestSignature(t *testing.T) {
	type tc struct {
		app, style, kind string
		subtle           bool
		seed             uint64
		fault, noise     float64 // scales; 0 is 1
	}
	var cases []tc
	for _, kind := range []string{FaultCPU, FaultMemory, FaultLatency} {
		for _, subtle := range []bool{false, true} {
			for seed := uint64(1); seed <= 6; seed++ {
				cases = append(cases, tc{AppSockShop, StylePrometheus, kind, subtle, seed, 0, 0})
			}
			cases = append(cases,
				tc{AppOnlineBoutique, StylePrometheus, kind, subtle, 7, 0, 0},
				tc{AppOnlineBoutique, StylePrometheus, kind, subtle, 8, 0, 0},
				tc{AppSockShop, StyleRCAEval, kind, subtle, 9, 0, 0},
				tc{AppOnlineBoutique, StyleRCAEval, kind, subtle, 10, 0, 0})
		}
		// The evaluation's corners: half the effect in 1.5× the noise, and
		// the other way round.
		cases = append(cases,
			tc{AppSockShop, StylePrometheus, kind, false, 11, 0.5, 1.5},
			tc{AppOnlineBoutique, StylePrometheus, kind, false, 12, 0.5, 1.5},
			tc{AppSockShop, StylePrometheus, kind, false, 13, 1.5, 0.5})
	}
	for _, c := range cases {
		variant := c.kind
		if c.subtle {
			variant += "/subtle"
		}
		t.Run(fmt.Sprintf("%s/%s/%s/seed=%d/scales=%g,%g", c.app, c.style, variant, c.seed, c.fault, c.noise), func(t *testing.T) {
			cfg := Config{Seed: c.seed, App: c.app, Style: c.style, FaultScale: c.fault, NoiseScale: c.noise}
			r := generate(t, cfg, FaultSpec{Kind: c.kind, Subtle: c.subtle})
			truth := r.gen.Truth()
			require.Len(t, truth, 1)
			svc := truth[0].Entity["service"]
			dev := r.deviations(t, c.kind)
			best, bv := top(dev)
			require.Equal(t, svc, best, "the faulty service's %s deviates most: %v", c.kind, dev)
			require.Greater(t, dev[svc], 0.0, "it rises")
			if !c.subtle {
				require.Greater(t, bv, 6.0, "a plain fault is large")
			} else {
				h := generate(t, cfg, FaultSpec{})
				split := r.onsetIndex()
				fv, hv := r.metric(t, c.kind, svc), h.metric(t, c.kind, svc)
				diff := make([]float64, 0, len(fv)-split)
				for i := split; i < len(fv); i++ {
					diff = append(diff, fv[i]-hv[i])
				}
				effect := median(diff[len(diff)/2:]) / scaleOf(hv[:split])
				require.InDelta(t, 2, effect, 1, "a subtle fault is within 3× the healthy spread")
				require.Less(t, bv, 3.5, "and so is what the data show")
			}
			// Propagation is checked at full size: at half size a rarely
			// called service (checkout, 0.05 calls per page) barely moves
			// its caller, as in life.
			if c.subtle || c.kind == FaultMemory || c.fault != 0 {
				return
			}
			callers := r.gen.g.syncCallers(r.gen.g.idx[svc])
			if len(callers) == 0 {
				return
			}
			lat := r.deviations(t, FaultLatency)
			rise := slices.ContainsFunc(callers, func(i int) bool { return lat[r.gen.g.app.services[i].name] > 3 })
			require.True(t, rise, "a caller of %s slows down too: %v", svc, lat)
		})
	}
}
