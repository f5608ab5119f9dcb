package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/topology"
)

// small is a small cluster for tests that go through a store sample by
// sample.
func small(seed uint64) Config {
	return Config{Seed: seed, Duration: 5 * time.Minute, Nodes: 3, TrainingNodes: 2, GPUsPerNode: 4, Replicas: 1, NodeCPUs: 2}
}

// TestRunMatchesFile: Run appends exactly the samples WriteOpenMetrics
// writes, moving the clock to each round and calling back after each
// commit.
func TestRunMatchesFile(t *testing.T) {
	cfg := small(5)
	sc, err := ParseScenario("node_down")
	require.NoError(t, err)
	file := simulateScenario(t, cfg, sc)

	s, err := New(cfg, sc)
	require.NoError(t, err)
	clock := NewClock(time.Time{})
	cfgR := s.Config()
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clock.Now, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	var rounds []Scrape
	err = s.Run(t.Context(), st, RunOptions{Clock: clock, OnScrape: func(ctx context.Context, sc Scrape) error {
		require.Equal(t, sc.At, clock.Now(), "the clock is at the round")
		// The round is committed when the callback runs.
		v := (&run{sim: s, store: nil}).countAt(t, st, sc.At)
		require.Equal(t, sc.Samples, v)
		rounds = append(rounds, sc)
		return nil
	}})
	require.NoError(t, err)
	require.Len(t, rounds, int(cfgR.Duration/cfgR.ScrapeInterval)+1)
	require.Equal(t, cfgR.Start, rounds[0].At)
	require.Equal(t, cfgR.Start.Add(cfgR.Duration), rounds[len(rounds)-1].At)
	require.Equal(t, len(rounds), rounds[0].Rounds)
	require.Equal(t, allSamples(t, file.store), allSamples(t, st))

	stop := errors.New("stop")
	n := 0
	err = s.Run(t.Context(), storage.AppendableV2(st), RunOptions{OnScrape: func(context.Context, Scrape) error {
		n++
		return stop
	}})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n, "an error from OnScrape stops the run")
}

// countAt counts the samples stored at exactly at.
func (*run) countAt(t testing.TB, q storage.Queryable, at time.Time) int {
	t.Helper()
	qr, err := q.Querier(at.UnixMilli(), at.UnixMilli())
	require.NoError(t, err)
	defer qr.Close()
	ss := qr.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			n++
		}
	}
	require.NoError(t, ss.Err())
	return n
}

// allSamples reads every sample of a store, by series.
func allSamples(t testing.TB, q storage.Queryable) map[string][][2]float64 {
	t.Helper()
	qr, err := q.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer qr.Close()
	ss := qr.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	out := map[string][][2]float64{}
	for ss.Next() {
		it := ss.At().Iterator(nil)
		var pts [][2]float64
		for it.Next() != 0 {
			ts, v := it.At()
			pts = append(pts, [2]float64{float64(ts), v})
		}
		out[ss.At().Labels().String()] = pts
	}
	require.NoError(t, ss.Err())
	return out
}

// TestTopologyOfSimulation: Vigil's own topology reads the simulated
// cluster as it is — every node under its Kubernetes name, every GPU with
// its model, the pods on them — whichever label variants the seed drew.
func TestTopologyOfSimulation(t *testing.T) {
	for _, l := range []Labels{
		{DCGMHost: HostnameUpper, DCGMPod: PodLabelsNew, NVLinkType: NVLinkCounter, NodeInstance: InstanceIP},
		{DCGMHost: HostnameLower, DCGMPod: PodLabelsOld, NVLinkType: NVLinkGauge, NodeInstance: InstanceName},
	} {
		t.Run(l.DCGMHost+"-"+l.DCGMPod+"-"+l.NodeInstance, func(t *testing.T) {
			r := simulateScenario(t, Config{Seed: 2, Duration: 2 * time.Minute, Labels: l}, Scenario{Name: Healthy})
			topo, err := topology.Build(t.Context(), r.store, catalog.Default(), r.end(), topology.DefaultOptions())
			require.NoError(t, err)
			require.Len(t, topo.Nodes, 10)
			gpus, pods := 0, map[string]bool{}
			for _, n := range topo.Nodes {
				require.Regexp(t, `^gpu-node-\d\d$`, n.Name)
				for _, g := range n.GPUs {
					gpus++
					require.Equal(t, "NVIDIA H100 80GB HBM3", g.Model)
					for _, p := range g.Pods {
						pods[p.Namespace+"/"+p.Pod] = true
					}
				}
			}
			require.Equal(t, 80, gpus)
			require.True(t, pods["ml-train/llm-pretrain-worker-5"], "training ranks are on their GPUs: %v", keys(pods))
			require.True(t, pods["research/notebook-0"])
			require.Len(t, pods, 8+4+1)
		})
	}
}
