package sim

import (
	"fmt"
	"time"
)

// nodeRebootFor is how long the reboot variant of node_down keeps the node
// off.
const nodeRebootFor = 4 * time.Minute

// buildNodeDown turns a training node off: its exporters stop answering,
// its series vanish, the node turns Ready=Unknown after the grace period
// and the job hangs until the NCCL watchdog kills it. reboot: the node
// comes back after four minutes with every counter reset, its rank's
// container restarts and the job restarts from its checkpoint. Subtle: the
// node drops off the management network for 75 seconds (scrapes fail,
// Ready=Unknown briefly) while its work runs on.
func buildNodeDown(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	f := &activeFault{truth: Fault{Entity: nodeEntity(n), Severity: 1,
		Summary: fmt.Sprintf("%s goes down; its rank dies and the job hangs", n.name)}}
	if spec.Variant == Subtle {
		off := b.span(75*time.Second, 30*time.Second)
		f.truth.Severity = 0.05
		f.truth.Summary = fmt.Sprintf("%s drops off the management network for %s", n.name, off)
		f.apply = func(_ *world, since time.Duration) {
			if since < off {
				n.cond.notReady, n.cond.dcgmDown, n.cond.nodeExpDown = true, true, true
			}
		}
		return f, nil
	}
	if spec.Variant == "reboot" {
		f.truth.Summary = fmt.Sprintf("%s goes down and reboots after %s; the job hangs, then restarts", n.name, nodeRebootFor)
		var at time.Time
		back := once(func() {
			n.reboot(at)
			for _, p := range n.pods {
				p.st.restarts++
				p.st.lastReason, p.st.lastTerminated = "Error", at
			}
		})
		f.apply = func(w *world, since time.Duration) {
			if since < nodeRebootFor {
				n.cond.down = true
				return
			}
			at = w.at(w.k)
			back()
		}
		return f, nil
	}
	f.apply = func(*world, time.Duration) { n.cond.down = true }
	return f, nil
}

// buildStraggler slows one rank of the training job with no hardware
// signal of why: every peer waits for it. Subtle: two spreads slower.
func buildStraggler(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	speed := 0.72
	if spec.Variant == Subtle {
		speed = 1 - subtleShift*stepNoise
	}
	speed = b.toward(1, speed, 0.2, 1)
	f := &activeFault{truth: Fault{Entity: nodeEntity(n), Severity: round(1-speed, 4)}}
	f.truth.Summary = fmt.Sprintf("the rank on %s runs %.0f%% slow and the job waits for it", n.name, 100*(1-speed))
	f.apply = func(*world, time.Duration) {
		for _, g := range n.gpus {
			g.cond.speed = min(g.cond.speed, speed)
		}
	}
	return f, nil
}

// buildExporterDown stops a training node's dcgm-exporter: its GPU series
// vanish and up goes 0 while the node and its work carry on. Subtle: the
// exporter answers but has lost one GPU, whose series vanish.
func buildExporterDown(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	n, err := b.node(spec, b.trainingNodes())
	if err != nil {
		return nil, err
	}
	if spec.Variant == Subtle {
		g, err := b.gpuOf(spec, n, nil)
		if err != nil {
			return nil, err
		}
		f := &activeFault{truth: Fault{Entity: gpuEntity(g), Severity: 0.1,
			Summary: fmt.Sprintf("dcgm-exporter on %s stops reporting GPU %d while the GPU works", n.name, g.idx)}}
		f.apply = func(*world, time.Duration) { g.cond.hidden = true }
		return f, nil
	}
	f := &activeFault{truth: Fault{Entity: nodeEntity(n), Severity: 1,
		Summary: fmt.Sprintf("dcgm-exporter on %s stops answering: Vigil is blind to its GPUs", n.name)}}
	f.apply = func(*world, time.Duration) { n.cond.dcgmDown = true }
	return f, nil
}
