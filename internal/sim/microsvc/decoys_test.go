package microsvc

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHealthyDecoys: a healthy run holds every decoy — the traffic spike
// at the entry, the restart's counter resets (the pod's network counters
// go on), the steadily noisy latency — and nothing that looks like a
// fault: no service's CPU, memory or latency moves between the halves of
// the run.
func TestHealthyDecoys(t *testing.T) {
	for _, app := range []string{AppSockShop, AppOnlineBoutique} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", app, seed), func(t *testing.T) {
				r := generate(t, Config{Seed: seed, App: app}, FaultSpec{})
				step := r.gen.Config().Step
				dec, p := r.gen.Decoys(), r.gen.dec
				require.Equal(t, []string{DecoySpike, DecoyRestart, DecoyNoisyLatency}, []string{dec[0].Kind, dec[1].Kind, dec[2].Kind})
				entry := r.gen.Services()[0]

				// The spike: rate index i is scrape i+1.
				load := rate(r.one(t, "http_requests_total", "service", entry, "code", "200"), step)
				m := median(load)
				for k := p.spikeAt; k < p.spikeAt+decoySpikeSteps; k++ {
					require.Greater(t, load[k-1], 1.5*m, "spike at scrape %d", k)
				}

				// The restart.
				svc := dec[1].Entity["service"]
				k := p.restartAt
				for _, name := range []string{"container_cpu_usage_seconds_total", "http_server_request_duration_seconds_count"} {
					v := r.one(t, name, "service", svc)
					require.Less(t, v[k], v[k-1], "%s resets at the restart", name)
				}
				rx := r.one(t, "container_network_receive_bytes_total", "service", svc)
				require.Greater(t, rx[k], rx[k-1], "the pod's network counter goes on")

				// The noisy latency: the largest relative spread, the same
				// in both halves.
				noisy := dec[2].Entity["service"]
				cv := map[string]float64{}
				for _, s := range r.gen.Services() {
					lat := r.metric(t, FaultLatency, s)
					cv[s] = scaleOf(lat) / median(lat)
					if s == noisy {
						half := len(lat) / 2
						ratio := scaleOf(lat[:half]) / scaleOf(lat[half:])
						require.Less(t, math.Abs(math.Log(ratio)), math.Log(2), "stable variance: %.2f", ratio)
					}
				}
				best, _ := top(cv)
				require.Equal(t, noisy, best, "%v", cv)

				// Nothing moves.
				for _, kind := range []string{FaultCPU, FaultMemory, FaultLatency} {
					for _, s := range r.gen.Services() {
						xs := r.metric(t, kind, s)
						require.Less(t, math.Abs(deviation(xs, len(xs)/2)), 3.0, "%s of %s", kind, s)
					}
				}
			})
		}
	}
}
