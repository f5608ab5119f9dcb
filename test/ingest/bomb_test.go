package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

const (
	bombSeries     = 3_000_000
	bombPerRequest = 10_000
	bombLimit      = 100_000
	bombTenant     = 50 // series of the well-behaved tenant
)

// bombRequests encodes requests of bombPerRequest new series each, total
// series in all, into out, in order, until all are sent or ctx ends.
func bombRequests(ctx context.Context, total int, ts int64, out chan<- []byte) error {
	defer close(out)
	req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, bombPerRequest)}
	ids := make([]prompb.Label, bombPerRequest*3)
	samples := make([]prompb.Sample, bombPerRequest)
	for first := 0; first < total; first += bombPerRequest {
		for i := range bombPerRequest {
			id := first + i
			l := ids[3*i : 3*i+3 : 3*i+3]
			l[0] = prompb.Label{Name: "__name__", Value: "bomb_series"}
			l[1] = prompb.Label{Name: "id", Value: strconv.Itoa(id)}
			l[2] = prompb.Label{Name: "pod", Value: "bomb-" + strconv.Itoa(id%1000)}
			samples[i] = prompb.Sample{Timestamp: ts, Value: float64(id)}
			req.Timeseries[i] = prompb.TimeSeries{Labels: l, Samples: samples[i : i+1 : i+1]}
		}
		body, err := marshal(req)
		if err != nil {
			return err
		}
		select {
		case out <- body:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestCardinalityBomb sends 3,000,000 distinct series in requests of 10,000
// to a server whose max_active_series is 100,000, while a well-behaved
// tenant keeps writing its existing series. The bomb gets 204 until the
// limit, then 400 naming max_active_series; the head holds exactly the limit
// — the tenant's series and the first bomb series — and no more; the tenant
// gets 204 throughout and its series and queries work; the rejected samples
// are counted by reason on /metrics.
func TestCardinalityBomb(t *testing.T) {
	start := time.Now()
	srv := startVigil(t, t.TempDir(), fmt.Sprintf(`limits:
  # The default (2,000,000) is sized for production servers: a head of 2M
  # series takes GBs of memory and minutes on the 2-core test machine. A
  # lower limit proves the same behaviour: the bomb is still 30 times over.
  max_active_series: %d
# Own metrics and the evaluation (its rules write series) off, so that the
# head holds only what this test writes and its size can be required
# exactly.
self_monitoring:
  enabled: false
evaluation:
  enabled: false
`, bombLimit))
	now := time.Now()
	ts := now.UnixMilli()
	tn := writeTenant(t, srv, "b", bombTenant, now.Add(-time.Second))
	tenantWrite := func(ctx context.Context, k int) (int, string, error) {
		req := &prompb.WriteRequest{}
		for s := range bombTenant {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
				Labels:  labelsOf("tenant_live", "tenant", "b", "series", strconv.Itoa(s)),
				Samples: []prompb.Sample{{Timestamp: ts - 60_000 + int64(k), Value: float64(k)}},
			})
		}
		body, err := marshal(req)
		if err != nil {
			return 0, "", err
		}
		return srv.post(ctx, body, nil)
	}
	// The tenant's live series exist before the bomb: both tenant metrics
	// count, 2*bombTenant series.
	code, msg, err := tenantWrite(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code, msg)
	existing := 2 * bombTenant

	bombStart := time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	bodies := make(chan []byte, 4)
	var wg sync.WaitGroup
	var genErr error
	wg.Go(func() { genErr = bombRequests(ctx, bombSeries, ts, bodies) })

	// The tenant writes its existing series while the bomb goes off; every
	// write must be stored.
	var tenantErr error
	tenantWrites := 0
	bombDone := make(chan struct{})
	wg.Go(func() {
		for k := 1; ; k++ {
			code, msg, err := tenantWrite(ctx, k)
			switch {
			case err != nil:
				tenantErr = err
				return
			case code != http.StatusNoContent:
				tenantErr = fmt.Errorf("tenant write %d during the bomb: status %d: %s", k, code, msg)
				return
			}
			tenantWrites = k
			select {
			case <-bombDone:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})

	var codes []int
	var msgs []string
	for body := range bodies {
		code, msg, err := srv.post(t.Context(), body, nil)
		require.NoError(t, err, "request %d of the bomb", len(codes))
		codes = append(codes, code)
		msgs = append(msgs, msg)
	}
	bombTook := time.Since(bombStart)
	close(bombDone)
	wg.Wait()
	require.NoError(t, genErr)
	require.NoError(t, tenantErr)
	require.Positive(t, tenantWrites)

	// The first requests fit under the limit whole. The one that reaches
	// it is stored in part; a tenant request in flight then may hold back
	// the last few free series (it could create as many), which the next
	// request of the bomb takes. All later requests are refused whole.
	accepted := bombLimit - existing
	full := accepted / bombPerRequest
	require.Len(t, codes, bombSeries/bombPerRequest)
	stored := 0
	for i, code := range codes {
		if i < full {
			require.Equal(t, http.StatusNoContent, code, "request %d, under the limit: %s", i, msgs[i])
			stored += bombPerRequest
			continue
		}
		require.Equal(t, http.StatusBadRequest, code, "request %d, over the limit: %s", i, msgs[i])
		requireOneLine(t, msgs[i], "active_series", fmt.Sprintf("max_active_series=%d", bombLimit))
		var ok, bad int
		_, err := fmt.Sscanf(msgs[i], "stored %d samples, rejected %d:", &ok, &bad)
		require.NoError(t, err, msgs[i])
		require.Equal(t, bombPerRequest, ok+bad)
		stored += ok
	}
	require.Equal(t, accepted, stored, "bomb series stored")
	rejected := bombSeries - accepted

	require.Equal(t, float64(bombLimit), srv.metric(t, "prometheus_tsdb_head_series", nil), "series in the head")
	require.Equal(t, float64(rejected), srv.metric(t, "vigil_remote_write_rejected_samples_total", map[string]string{"reason": "active_series"}))
	require.Equal(t, float64(accepted), srv.scalar(t, `count(bomb_series)`, now))
	require.Equal(t, float64(bombTenant), srv.scalar(t, `count(tenant_live{tenant="b"})`, now))
	tn.requireIntact(t, srv)
	srv.requireReady(t)
	// The tenant still writes; a new series is still refused.
	code, msg, err = tenantWrite(t.Context(), tenantWrites+1)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code, msg)
	code, msg, err = srv.write(t.Context(), t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels: labelsOf("tenant_live", "tenant", "b", "series", "new"), Samples: []prompb.Sample{{Timestamp: ts, Value: 1}},
	}}})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code, msg)
	require.Contains(t, msg, "max_active_series")
	rss := srv.metric(t, "process_resident_memory_bytes", nil)
	require.NoError(t, srv.Stop())
	t.Logf("%d series in %d requests: bomb took %s, %d tenant writes meanwhile, server RSS %.0f MiB after; test took %s",
		bombSeries, len(codes), bombTook.Round(time.Millisecond), tenantWrites, rss/(1<<20), time.Since(start).Round(time.Millisecond))
}

// TestCardinalityBombConcurrent sends 400,000 new series from 8 clients at
// once to a server limited to 100,000: requests stored side by side must
// not each take the same free room under the limit (they did, up to 35 %
// over, before the receiver admitted new series one request at a time).
func TestCardinalityBombConcurrent(t *testing.T) {
	start := time.Now()
	srv := startVigil(t, t.TempDir(), fmt.Sprintf("limits:\n  max_active_series: %d\nself_monitoring:\n  enabled: false\nevaluation:\n  enabled: false\n", bombLimit))
	const total, senders = 400_000, 8
	bodies := make(chan []byte, senders)
	var wg sync.WaitGroup
	var genErr error
	wg.Go(func() { genErr = bombRequests(t.Context(), total, time.Now().UnixMilli(), bodies) })
	codes := make([]map[int]int, senders)
	errs := make([]error, senders)
	for i := range senders {
		codes[i] = map[int]int{}
		wg.Go(func() {
			for body := range bodies {
				code, msg, err := srv.post(t.Context(), body, nil)
				switch {
				case err != nil:
					errs[i] = err
				case code != http.StatusNoContent && !strings.Contains(msg, fmt.Sprintf("max_active_series=%d", bombLimit)):
					errs[i] = fmt.Errorf("status %d: %s", code, msg)
				}
				codes[i][code]++
			}
		})
	}
	wg.Wait()
	require.NoError(t, genErr)
	require.NoError(t, errors.Join(errs...))
	sum := map[int]int{}
	for _, c := range codes {
		for code, n := range c {
			sum[code] += n
		}
	}
	require.Equal(t, total/bombPerRequest, sum[http.StatusNoContent]+sum[http.StatusBadRequest], "answers: %v", sum)
	// A new series admitted near the limit may race one request that
	// began far from it: one series over at most.
	head := srv.metric(t, "prometheus_tsdb_head_series", nil)
	require.LessOrEqual(t, head, float64(bombLimit+1))
	require.Equal(t, head, srv.scalar(t, `count(bomb_series)`, time.Now()))
	require.Equal(t, float64(total)-head, srv.metric(t, "vigil_remote_write_rejected_samples_total", map[string]string{"reason": "active_series"}))
	require.NoError(t, srv.Stop())
	t.Logf("answers %v, head %.0f series; took %s", sum, head, time.Since(start).Round(time.Millisecond))
}
