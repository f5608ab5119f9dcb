package ingest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

const (
	crashClients    = 4
	crashSeries     = 100
	crashRounds     = 3
	crashStep       = 100 * time.Millisecond
	crashMinAcks    = 25   // batches each client has acknowledged before a kill
	crashMaxBatches = 6000 // 10 minutes of batches: timestamps stay in the past
)

// crashClient writes batches of crashSeries series to the server, batch k at
// base + k*crashStep, and records which batches were acknowledged.
type crashClient struct {
	id    int
	base  int64 // milliseconds
	next  int   // the next batch to send
	acked map[int]bool
	// sent holds every batch sent, acknowledged or not: those not
	// acknowledged may or may not be stored.
	sent map[int]bool
	// failures counts requests that ended without an answer (the kill).
	failures int
}

// crashValue is the value of series s of client c in batch k: every bit of
// the mantissa is used, so that a value that comes back rounded is caught.
func crashValue(c, s, k int) float64 {
	h := uint64(c+1)*0x9E3779B97F4A7C15 ^ uint64(s+1)*0xBF58476D1CE4E5B9 ^ uint64(k+1)*0x94D049BB133111EB
	h ^= h >> 31
	h *= 0xD6E8FEB86659FD93
	h ^= h >> 32
	return math.Float64frombits(0x3FF<<52|h&(1<<52-1)) * float64(k+1)
}

func (c *crashClient) ts(k int) int64 { return c.base + int64(k)*crashStep.Milliseconds() }

func (c *crashClient) request(k int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, crashSeries)}
	for s := range crashSeries {
		req.Timeseries[s] = prompb.TimeSeries{
			Labels:  labelsOf("crash_test_value", "client", strconv.Itoa(c.id), "series", strconv.Itoa(s)),
			Samples: []prompb.Sample{{Value: crashValue(c.id, s, k), Timestamp: c.ts(k)}},
		}
	}
	return req
}

// run writes batches until a request gets no answer (the server is gone)
// or ctx ends. An answer other than 204 is an error: every batch is valid.
func (c *crashClient) run(ctx context.Context, srv *server, acks *atomic.Int64) error {
	for c.next < crashMaxBatches {
		k := c.next
		body, err := marshal(c.request(k))
		if err != nil {
			return err
		}
		c.sent[k] = true
		code, msg, err := srv.post(ctx, body, nil)
		c.next++
		switch {
		case err != nil:
			c.failures++
			return nil
		case code != http.StatusNoContent:
			return fmt.Errorf("client %d batch %d: status %d: %s", c.id, k, code, msg)
		}
		c.acked[k] = true
		acks.Add(1)
	}
	return fmt.Errorf("client %d: %d batches sent and the server is still up", c.id, crashMaxBatches)
}

// verify requires every acknowledged sample of every client to be stored
// exactly, and every stored sample to be one that was sent. It returns the
// number of acknowledged samples checked.
func (c *crashClient) verify(t *testing.T, srv *server) int {
	t.Helper()
	at := time.UnixMilli(c.ts(c.next))
	rng := at.Sub(time.UnixMilli(c.base)) + time.Second
	res := srv.query(t, fmt.Sprintf(`crash_test_value{client="%d"}[%dms]`, c.id, rng.Milliseconds()), at)
	if len(c.acked) == 0 {
		return 0
	}
	require.Len(t, res, crashSeries, "client %d: series", c.id)
	checked := 0
	for _, sr := range res {
		s, err := strconv.Atoi(sr.Metric["series"])
		require.NoError(t, err)
		got := make(map[int64]point, len(sr.Points))
		for _, p := range sr.Points {
			step := crashStep.Milliseconds()
			k := int((p.T - c.base) / step)
			require.Zero(t, (p.T-c.base)%step, "client %d series %d: a sample at %d that no batch had", c.id, s, p.T)
			require.True(t, c.sent[k], "client %d series %d: batch %d is stored but was never sent", c.id, s, k)
			require.Equal(t, math.Float64bits(crashValue(c.id, s, k)), math.Float64bits(p.value(t)),
				"client %d series %d batch %d: value %s", c.id, s, k, p.Raw)
			got[p.T] = p
		}
		for k := range c.acked {
			_, ok := got[c.ts(k)]
			require.True(t, ok, "client %d series %d: acknowledged batch %d (t=%d) is lost", c.id, s, k, c.ts(k))
			checked++
		}
	}
	return checked
}

// TestKillKeepsAcknowledgedSamples writes with crashClients concurrent
// remote-write clients, SIGKILLs the server while they write, restarts it on
// the same directory and requires every sample any earlier request was
// acknowledged for (204) to come back exactly — series, timestamp and every
// bit of the value — through the query API; crashRounds kills, the checks
// accumulating. It proves that a 204 means the samples are in the
// write-ahead log, not only in memory.
func TestKillKeepsAcknowledgedSamples(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	// Own metrics and the evaluation off: the store holds only what the
	// clients wrote.
	const cfg = "self_monitoring:\n  enabled: false\nevaluation:\n  enabled: false\n"
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second).UnixMilli()
	clients := make([]*crashClient, crashClients)
	for i := range clients {
		clients[i] = &crashClient{id: i, base: base, acked: map[int]bool{}, sent: map[int]bool{}}
	}
	verify := func(srv *server) int {
		n := 0
		for _, c := range clients {
			n += c.verify(t, srv)
		}
		return n
	}
	checked := 0
	for round := range crashRounds {
		srv := startVigil(t, dir, cfg)
		n := verify(srv)
		require.GreaterOrEqual(t, n, checked, "round %d: fewer samples acknowledged than before", round)
		checked = n

		var wg sync.WaitGroup
		acks := make([]atomic.Int64, crashClients)
		errs := make([]error, crashClients)
		for i, c := range clients {
			wg.Go(func() { errs[i] = c.run(t.Context(), srv, &acks[i]) })
		}
		waitFor(t, time.Minute, fmt.Sprintf("round %d: %d acknowledged batches per client", round, crashMinAcks), func() bool {
			for i := range acks {
				if acks[i].Load() < crashMinAcks {
					return false
				}
			}
			return true
		}, srv.Output)
		srv.Kill()
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		for i, c := range clients {
			require.Equal(t, round+1, c.failures, "client %d was writing when the server was killed", i)
		}
		t.Logf("round %d: killed after %v acknowledged batches", round, func() []int64 {
			out := make([]int64, len(acks))
			for i := range acks {
				out[i] = acks[i].Load()
			}
			return out
		}())
	}
	srv := startVigil(t, dir, cfg)
	n := verify(srv)
	require.Greater(t, n, checked)
	acked := 0
	for _, c := range clients {
		acked += len(c.acked)
	}
	require.Equal(t, acked*crashSeries, n)
	require.NoError(t, srv.Stop())
	t.Logf("%d acknowledged samples of %d batches intact after %d kills; took %s", n, acked, crashRounds, time.Since(start).Round(time.Millisecond))
}
