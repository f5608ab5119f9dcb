package sim

import (
	"fmt"
	"time"
)

// Healthy spreads of the readings the subtle variants hide in.
const (
	cpuNoise  = 0.005 // a node's CPU utilization across its peers
	memNoise  = 0.004 // a node's memory in use, as a share of the total
	utilNoise = 0.005 // a training GPU's GPU_UTIL, as a share
)

// buildCPUSaturated pins a training node's CPUs (a runaway process): its
// dataloaders starve, its rank's GPUs wait for input and the whole job
// slows. Subtle: two spreads more CPU busy and a step a little slower.
func buildCPUSaturated(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	busy, wait := 0.95, 0.45
	f := &activeFault{truth: Fault{Entity: nodeEntity(n), Severity: 0.6,
		Summary: fmt.Sprintf("a runaway process saturates the CPUs of %s; its dataloaders starve its GPUs and the job slows", n.name)}}
	if spec.Variant == Subtle {
		// The extra share lands on the CPUs' idle 60%.
		busy, wait = subtleShift*cpuNoise/0.6, 0.01
		f.truth.Summary = fmt.Sprintf("a background process takes %.0f%% of the CPUs of %s", 100*b.size(busy), n.name)
	}
	busy, wait = clamp(b.size(busy), 0, 0.98), b.size(wait)
	f.truth.Severity = round(map[bool]float64{true: busy, false: 0.6 * busy / 0.95}[spec.Variant == Subtle], 4)
	f.apply = func(_ *world, since time.Duration) {
		k := ramp(since, time.Minute)
		n.cond.cpuBusy = max(n.cond.cpuBusy, busy*k)
		n.cond.dataWait += wait * k
	}
	return f, nil
}

// buildMemoryPressure fills a training node's memory (a leaking
// dataloader): available memory falls under the kubelet's threshold
// (MemoryPressure), memory stalls (PSI) and the rank's input slows. Subtle:
// memory use two spreads above its peers'.
func buildMemoryPressure(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	extra, wait := 0.535, 0.25
	f := &activeFault{truth: Fault{Entity: nodeEntity(n), Severity: 0.5,
		Summary: fmt.Sprintf("a leak fills the memory of %s: MemoryPressure, memory stalls and a slower rank", n.name)}}
	if spec.Variant == Subtle {
		extra, wait = subtleShift*memNoise, 0
		extra = b.size(extra)
		f.truth.Severity = round(extra, 4)
		f.truth.Summary = fmt.Sprintf("memory use on %s runs %.1f%% above its peers'", n.name, 100*extra)
	} else {
		// Past the kubelet's threshold whatever the scale: the fault is
		// memory pressure; the scale moves how far past and the stall.
		over := memPressureAt + 0.01 - n.host.baseMemUsed
		extra, wait = clamp(over+b.size(extra-over), over, 0.54), b.size(wait)
		f.truth.Severity = round(b.size(0.5), 4)
	}
	f.apply = func(_ *world, since time.Duration) {
		k := ramp(since, 3*time.Minute)
		n.cond.memUsed += extra * k
		if k == 1 {
			n.cond.dataWait += wait
		}
	}
	return f, nil
}

// buildNetwork degrades a training node's InfiniBand: symbol errors climb
// and the job's inter-node collectives slow. port_down: one port goes down
// (state 1, link_downed + 1) and the node's traffic crowds onto the others.
// Subtle: a trickle of symbol errors and collectives 5% slower.
func buildNetwork(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	port := b.r.IntN(n.hcas)
	ib, errs := 0.3, 40.0
	f := &activeFault{truth: Fault{Entity: nodeEntity(n), Severity: 1 - ib,
		Summary: fmt.Sprintf("the InfiniBand fabric of %s degrades (symbol errors); the job's collectives slow", n.name)}}
	switch spec.Variant {
	case "port_down":
		f.truth.Summary = fmt.Sprintf("InfiniBand port mlx5_%d of %s goes down; the job's collectives slow", port, n.name)
	case Subtle:
		ib, errs = 0.95, 0.2
		f.truth.Summary = fmt.Sprintf("the InfiniBand fabric of %s logs a few symbol errors and runs %.0f%% slow", n.name, b.size(5))
	}
	ib, errs = b.toward(1, ib, 0.05, 1), b.size(errs)
	f.truth.Severity = round(1-ib, 4)
	downed := once(func() { n.host.ibDowned[port]++ })
	f.apply = func(*world, time.Duration) {
		n.cond.ib, n.cond.ibErrors = min(n.cond.ib, ib), errs
		if spec.Variant == "port_down" {
			n.cond.ibDownPort = port + 1
			downed()
		}
	}
	return f, nil
}

// buildInputPipeline slows the training job's input (a congested shared
// file system): every rank waits for data, GPU_UTIL drops on every rank,
// I/O pressure rises and the data the nodes receive falls. Subtle: every
// rank idles two spreads of GPU_UTIL more.
func buildInputPipeline(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	nodes := b.trainingNodes()
	wait, io := 0.6, 0.35
	f := &activeFault{truth: Fault{Entity: map[string]string{"namespace": TrainingNamespace, "workload": TrainingJob}, Severity: 0.3,
		Summary: "the shared file system slows: every rank of " + TrainingJob + " waits for its input"}}
	if spec.Variant == Subtle {
		wait, io = b.size(subtleShift*utilNoise*stepHealthy), b.size(0.01)
		f.truth.Severity = round(wait/stepHealthy, 4)
		f.truth.Summary = fmt.Sprintf("the shared file system slows a little: every step of %s waits %.1f%% longer for input", TrainingJob, 100*f.truth.Severity)
	} else {
		wait, io = b.size(wait), clamp(b.size(io), 0, 0.9)
		f.truth.Severity = round(b.size(0.3), 4)
	}
	f.apply = func(_ *world, since time.Duration) {
		k := ramp(since, 2*time.Minute)
		for _, n := range nodes {
			n.cond.dataWait += wait * k
			n.cond.ioWait += io * k
			n.cond.netRx *= 1 - 0.5*k*wait/(wait+stepHealthy)
		}
	}
	return f, nil
}
