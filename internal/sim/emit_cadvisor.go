package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The kubelet's cAdvisor endpoint, as kube-prometheus-stack's kubelet
// ServiceMonitor scrapes it.
const (
	jobKubelet      = "kubelet"
	cadvisorPath    = "/metrics/cadvisor"
	kubeletEndpoint = "https-metrics"
	kubeletService  = "kube-prometheus-stack-kubelet"
	// cfsPeriod is the CFS period: a container with a CPU limit runs ten
	// periods a second.
	cfsPeriod = 0.1
)

// containerSpec is what cAdvisor knows of a pod's container: its image,
// limits and usual usage.
type containerSpec struct {
	image string
	// memLimit is the memory limit in bytes (0: none, as cAdvisor reports
	// a container without one); cpuLimit in cores (0: none, and no CFS
	// series).
	memLimit, cpuLimit float64
	// guaranteed: the pod's cgroup sits under kubepods.slice itself.
	guaranteed bool
}

// specOf is the container spec of a pod.
func specOf(p *pod, l Labels) containerSpec {
	switch {
	case p.training:
		// Training pods request memory and CPU but set no limits.
		return containerSpec{image: "nvcr.io/nvidia/pytorch:24.09-py3"}
	case p.namespace == InferenceNamespace:
		image := "docker.io/vllm/vllm-openai:" + vllmVersion(l)
		if p.image != "" {
			image = p.image
		}
		return containerSpec{image: image, memLimit: p.memRequest, cpuLimit: p.cpuRequest, guaranteed: true}
	}
	return containerSpec{image: "quay.io/jupyter/pytorch-notebook:cuda12-2024-10-07", memLimit: 2 * p.memRequest, cpuLimit: 2 * p.cpuRequest}
}

// cadvisorFams are cAdvisor's families the simulator emits.
type cadvisorFams struct {
	cpu, ws, limit, oom, periods, throttled *family
}

// cadvisorSeries are the series of one cgroup: a container, or the pod's
// own cgroup (no container, image or name label).
type cadvisorSeries struct {
	cpu, ws, limit, oom, periods, throttled *series
	// counters since the cgroup was made
	cpuSecs, nPeriods, nThrottled float64
}

// cadvisor is the kubelet's /metrics/cadvisor endpoint of one node.
type cadvisor struct {
	n        *node
	cfg      Config
	f        cadvisorFams
	r        *rng
	instance string
	pods     map[*pod]*cadvisorSeries
	// ctrs holds each pod's container by restart count: a restarted
	// container has a new ID and so new series.
	ctrs map[*pod]map[float64]*cadvisorSeries
}

func newCAdvisor(reg *registry, n *node, cfg Config) *cadvisor {
	c := func(name, help string) *family { return reg.family(name, typeCounter, help) }
	return &cadvisor{
		n: n, cfg: cfg, r: newRand(cfg, "cadvisor", n.name), instance: n.ip + ":10250",
		pods: map[*pod]*cadvisorSeries{}, ctrs: map[*pod]map[float64]*cadvisorSeries{},
		f: cadvisorFams{
			cpu:       c("container_cpu_usage_seconds", "Cumulative cpu time consumed in seconds."),
			ws:        reg.family("container_memory_working_set_bytes", typeGauge, "Current working set in bytes."),
			limit:     reg.family("container_spec_memory_limit_bytes", typeGauge, "Memory limit for the container."),
			oom:       c("container_oom_events", "Count of out of memory events observed for the container"),
			periods:   c("container_cpu_cfs_periods", "Number of elapsed enforcement period intervals."),
			throttled: c("container_cpu_cfs_throttled_periods", "Number of throttled period intervals."),
		},
	}
}

// series makes the series of one cgroup; container is "" for the pod's.
func (c *cadvisor) series(p *pod, container, id, image, name string, spec containerSpec) *cadvisorSeries {
	kv := []string{"container", container, "endpoint", kubeletEndpoint, "id", id, "image", image, "instance", c.instance,
		"job", jobKubelet, "metrics_path", cadvisorPath, "name", name, "namespace", p.namespace, "node", c.n.name,
		"pod", p.name, "service", kubeletService}
	s := &cadvisorSeries{
		cpu:   c.f.cpu.newSeries("container_cpu_usage_seconds_total", kv...),
		ws:    c.f.ws.newSeries("container_memory_working_set_bytes", kv...),
		limit: c.f.limit.newSeries("container_spec_memory_limit_bytes", kv...),
		oom:   c.f.oom.newSeries("container_oom_events_total", kv...),
	}
	if spec.cpuLimit > 0 {
		s.periods = c.f.periods.newSeries("container_cpu_cfs_periods_total", kv...)
		s.throttled = c.f.throttled.newSeries("container_cpu_cfs_throttled_periods_total", kv...)
	}
	return s
}

// podSlice is the cgroup of a pod, as the systemd driver names it.
func podSlice(p *pod, spec containerSpec) string {
	uid := strings.ReplaceAll(p.uid, "-", "_")
	if spec.guaranteed {
		return "/kubepods.slice/kubepods-pod" + uid + ".slice"
	}
	return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice"
}

// containerID is the ID containerd gives the restarts-th container of p.
func (c *cadvisor) containerID(p *pod) string {
	return hexID(newRand(c.cfg, "container", p.uid, fmt.Sprint(p.st.restarts)), 64)
}

// running reports whether p's container runs.
func running(p *pod) bool {
	return p.st.phase == "Running" && p.st.waitingReason == "" && !p.node.cond.down
}

// usage is a container's CPU cores and working set this tick.
func (c *cadvisor) usage(p *pod, spec containerSpec) (cores, ws float64) {
	switch {
	case p.training:
		// The dataloaders and the rank's host threads; a leak on the node
		// (node_memory_pressure) is in them.
		cores = 40 * (1 + gauss(c.r, 0.03))
		ws = 0.8*c.n.host.baseMemUsed*memTotal + c.n.cond.memUsed*memTotal + gauss(c.r, 0.002*memTotal)
	case p.rep != nil:
		cores = (2 + 4*p.rep.load) * (1 + gauss(c.r, 0.05))
		ws = (96<<30)*(1+gauss(c.r, 0.005)) + 8*(1<<30)*p.rep.load
	default:
		cores = 0.6 * (1 + gauss(c.r, 0.2))
		ws = (18 << 30) * (1 + gauss(c.r, 0.01))
	}
	if spec.memLimit > 0 {
		// A leak climbs toward the limit; the kernel kills at it.
		ws += (spec.memLimit*0.995 - ws) * p.memLeak
		ws = math.Min(ws, spec.memLimit)
	}
	return math.Max(0, cores), math.Round(math.Max(ws, 0))
}

// scrape emits the node's pods' cgroups: the pod's own and its running
// container's.
func (c *cadvisor) scrape(o *scrapeOut) {
	dt := c.cfg.ScrapeInterval.Seconds()
	for _, p := range c.n.pods {
		if p.st.phase != "Running" {
			continue
		}
		spec := specOf(p, c.cfg.Labels)
		ps := c.pods[p]
		if ps == nil {
			ps = c.series(p, "", podSlice(p, spec), "", "", spec)
			c.pods[p] = ps
			age := c.at(o).Sub(p.created).Seconds()
			ps.cpuSecs, ps.nPeriods = age*c.meanCores(p), age/cfsPeriod
			ps.nThrottled = math.Floor(ps.nPeriods * 0.004)
		}
		cores, ws := 0.0, 0.0
		if running(p) {
			cores, ws = c.usage(p, spec)
			cs := c.container(o, p, spec)
			c.advance(cs, cores, spec, dt)
			c.emit(o, cs, ws, spec, 0)
		}
		// The pod's cgroup holds its containers and a little of its own.
		c.advance(ps, cores, spec, dt)
		c.emit(o, ps, ws+(2<<20), spec, p.st.oomKills)
	}
}

// container returns the series of p's current container, made when it
// starts with its counters since then.
func (c *cadvisor) container(o *scrapeOut, p *pod, spec containerSpec) *cadvisorSeries {
	m := c.ctrs[p]
	if m == nil {
		m = map[float64]*cadvisorSeries{}
		c.ctrs[p] = m
	}
	if s, ok := m[p.st.restarts]; ok {
		return s
	}
	cid := c.containerID(p)
	s := c.series(p, p.container, podSlice(p, spec)+"/cri-containerd-"+cid+".scope", spec.image, cid, spec)
	m[p.st.restarts] = s
	started := p.created
	if p.st.lastTerminated.After(started) {
		started = p.st.lastTerminated
	}
	if age := c.at(o).Sub(started).Seconds(); age > 60 {
		// A container that ran before the run began.
		s.cpuSecs, s.nPeriods = age*c.meanCores(p), age/cfsPeriod
		s.nThrottled = math.Floor(s.nPeriods * 0.004)
	}
	return s
}

func (c *cadvisor) at(o *scrapeOut) time.Time { return time.UnixMilli(o.t) }

// meanCores is a pod's long-run CPU use, for counters that began before
// the run.
func (c *cadvisor) meanCores(p *pod) float64 {
	switch {
	case p.training:
		return 38
	case p.rep != nil:
		return 3.5
	}
	return 0.5
}

// advance moves a cgroup's counters by dt seconds of cores.
func (c *cadvisor) advance(s *cadvisorSeries, cores float64, spec containerSpec, dt float64) {
	s.cpuSecs += cores * dt
	if spec.cpuLimit > 0 {
		n := dt / cfsPeriod
		s.nPeriods += n
		// Request bursts (tokenization, detokenization) hit the quota in a
		// few periods, more under load.
		s.nThrottled += float64(poisson(c.r, n*clamp(0.004+0.03*cores/spec.cpuLimit, 0, 1)))
	}
}

func (c *cadvisor) emit(o *scrapeOut, s *cadvisorSeries, ws float64, spec containerSpec, ooms float64) {
	o.add(s.cpu, round(s.cpuSecs, 6))
	o.add(s.ws, ws)
	o.add(s.limit, spec.memLimit)
	o.add(s.oom, ooms)
	if s.periods != nil {
		o.add(s.periods, math.Round(s.nPeriods))
		o.add(s.throttled, s.nThrottled)
	}
}
