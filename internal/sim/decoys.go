package sim

import (
	"fmt"
	"strconv"
	"time"
)

// Decoy kinds: benign events every run holds, healthy or faulty, so that an
// engine that pages on them is caught.
const (
	DecoyWarmGPU  = "warm_gpu"         // the warmest GPU, a few °C under its slowdown temperature
	DecoyRowRemap = "row_remap"        // one correctable row remap (XID 63)
	DecoyPCIeBlip = "pcie_replay_blip" // a few PCIe replays at once
	DecoySpike    = "traffic_spike"    // 75 seconds of 1.8× inference traffic
	DecoyOldXID   = "old_xid"          // an XID value left from days ago
	DecoyOldOOM   = "old_oom_killed"   // an OOMKilled last-terminated reason from an old restart
)

// The decoys' sizes and times.
const (
	decoyWarmUnder = 4.0                // °C under the slowdown temperature
	decoySpikeFor  = 75 * time.Second   // length of the traffic spike
	decoySpikeMul  = 1.8                // traffic multiplier of the spike
	decoyOOMAge    = 3 * 24 * time.Hour // how old the OOM kill is
	decoyOldXID    = 13.0               // the stale XID
	decoyReplays   = 3.0                // PCIe replays of the blip
	decoyEarliest  = 0.1                // earliest timed decoy, share of the run
	decoyLatest    = 0.9                // latest timed decoy, share of the run
)

// Decoy is one benign event of a run, reported with the truth so that tests
// and `vigil eval` can check that nobody pages on it.
type Decoy struct {
	// Kind is one of the Decoy* constants.
	Kind string `json:"kind"`
	// Entity is where it happens, with canonical keys.
	Entity map[string]string `json:"entity"`
	// At is when it happens (for standing decoys, the start of the run).
	At time.Time `json:"at"`
	// Summary says what it is.
	Summary string `json:"summary"`
}

// decoy is a Decoy with its effect, applied at every tick.
type decoy struct {
	Decoy
	apply func(w *world, t time.Time)
}

// newDecoys draws the decoys of a run from the seed. They do not depend on
// the scenario: a healthy and a faulty run of one seed hold the same ones.
func newDecoys(w *world) []decoy {
	c, cfg := w.c, w.cfg
	r := newRand(cfg, "decoys")
	when := func() time.Time {
		f := decoyEarliest + (decoyLatest-decoyEarliest)*r.Float64()
		return cfg.Start.Add(time.Duration(f * float64(cfg.Duration)).Truncate(cfg.ScrapeInterval))
	}
	trainGPU := func() *gpu {
		n := c.nodes[r.IntN(cfg.TrainingNodes)]
		return n.gpus[r.IntN(len(n.gpus))]
	}
	gEnt := func(g *gpu) map[string]string {
		return map[string]string{"node": g.node.name, "gpu": strconv.Itoa(g.idx)}
	}
	var ds []decoy
	warm := trainGPU()
	warmAdd := c.spec.SlowdownTemp - decoyWarmUnder - healthyTemp(warm, c.spec)
	ds = append(ds, decoy{Decoy{DecoyWarmGPU, gEnt(warm), cfg.Start,
		fmt.Sprintf("%s GPU %d runs about %.0f°C, warmer than its peers and %.0f°C under its slowdown temperature",
			warm.node.name, warm.idx, c.spec.SlowdownTemp-decoyWarmUnder, decoyWarmUnder)},
		func(*world, time.Time) { warm.cond.tempAdd += warmAdd }})
	remap, remapAt := trainGPU(), when()
	doRemap := once(func() { remap.st.rowsCorr++; remap.raiseXID(63) })
	ds = append(ds, decoy{Decoy{DecoyRowRemap, gEnt(remap), remapAt,
		fmt.Sprintf("%s GPU %d remaps one row for a correctable error (XID 63)", remap.node.name, remap.idx)},
		func(_ *world, t time.Time) {
			if !t.Before(remapAt) {
				doRemap()
			}
		}})
	blip, blipAt := trainGPU(), when()
	doBlip := once(func() { blip.st.pcieReplays += decoyReplays })
	ds = append(ds, decoy{Decoy{DecoyPCIeBlip, gEnt(blip), blipAt,
		fmt.Sprintf("%s GPU %d replays %.0f PCIe packets once", blip.node.name, blip.idx, decoyReplays)},
		func(_ *world, t time.Time) {
			if !t.Before(blipAt) {
				doBlip()
			}
		}})
	spikeAt := when()
	ds = append(ds, decoy{Decoy{DecoySpike, map[string]string{"namespace": InferenceNamespace, "workload": c.serve.name}, spikeAt,
		fmt.Sprintf("requests to %s spike to %.1f× for %s", c.serve.name, decoySpikeMul, decoySpikeFor)},
		func(w *world, t time.Time) {
			if d := t.Sub(spikeAt); d >= 0 && d < decoySpikeFor {
				w.c.serve.trafficMul *= decoySpikeMul
			}
		}})
	old := c.nodes[r.IntN(len(c.nodes))].gpus[r.IntN(cfg.GPUsPerNode)]
	old.st.xid = decoyOldXID
	ds = append(ds, decoy{Decoy{DecoyOldXID, gEnt(old), cfg.Start,
		fmt.Sprintf("%s GPU %d still shows XID %.0f from days ago", old.node.name, old.idx, decoyOldXID)},
		func(*world, time.Time) {}})
	oomPod := c.serve.replicas[r.IntN(len(c.serve.replicas))].pod
	oomPod.st.restarts, oomPod.st.lastReason, oomPod.st.oomKills = 1, "OOMKilled", 1
	oomPod.st.lastTerminated = cfg.Start.Add(-decoyOOMAge)
	oomPod.created = oomPod.st.lastTerminated.Add(-2 * time.Hour)
	oomPod.st.started = oomPod.created
	ds = append(ds, decoy{Decoy{DecoyOldOOM, podEntity(oomPod), cfg.Start,
		fmt.Sprintf("%s/%s was OOMKilled %s ago and has run since", oomPod.namespace, oomPod.name, decoyOOMAge)},
		func(*world, time.Time) {}})
	return ds
}
