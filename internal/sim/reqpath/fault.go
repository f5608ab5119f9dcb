package reqpath

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault kinds the request path shows. They are DESIGN.md's cause kinds.
const (
	// KindDependencySlow multiplies one hop's own latency by Severity from
	// the onset. Entity: {"service": a deployment, model server or the
	// external tool}.
	KindDependencySlow = "dependency_slow"
	// KindTenantFailure makes Severity of one tenant's requests fail in the
	// vector DB (the tenant's shard is unavailable) while the others keep
	// their 1–2%. Entity: {"tenant": name}.
	KindTenantFailure = "tenant_failure"
	// KindBadRollout rolls a new version of the AI application or a model
	// server out from the onset, one pod every 40 s; requests served by the
	// new version fail with probability Severity more and take 1+2×Severity
	// times as long. Entity: {"service": name} and optionally {"version":
	// the new version} (default: the next minor version).
	KindBadRollout = "bad_rollout"
	// KindInferenceCapacitySaturated multiplies one model server's traffic
	// by Severity (the load it is offered against its capacity rises from a
	// healthy 60%): requests queue, time to first token and time per output
	// token grow, and long requests time out. Entity: {"service": name} or
	// {"model": model}.
	KindInferenceCapacitySaturated = "inference_capacity_saturated"
	// KindKVCacheExhausted makes Severity of one model server's requests be
	// preempted for lack of KV-cache blocks and recomputed: time to first
	// token and latency grow, and vLLM logs its preemption warning. Entity:
	// {"service": name} or {"model": model}.
	KindKVCacheExhausted = "kv_cache_exhausted"
)

// VariantSubtle is the Variant of a fault whose effect stays within 3× the
// healthy spread of the signal it moves.
const VariantSubtle = "subtle"

// Kinds lists the fault kinds the request path simulates.
func Kinds() []string {
	return []string{KindDependencySlow, KindTenantFailure, KindBadRollout, KindInferenceCapacitySaturated, KindKVCacheExhausted}
}

// Fault is one injected request-path fault and its ground truth.
type Fault struct {
	// Kind is one of the Kind* constants.
	Kind string
	// Variant is "" (the full fault) or [VariantSubtle].
	Variant string
	// Entity names what is faulty with DESIGN.md's canonical keys:
	// service, namespace, model, tenant (and version for bad_rollout).
	// Missing keys are completed by [Config.WithDefaults].
	Entity map[string]string
	// Onset is when the fault starts; it lasts to the end of the run.
	Onset time.Time
	// Severity is the kind's strength in the unit its Kind constant
	// documents; 0 takes the default for Kind and Variant (see
	// [DefaultSeverity]).
	Severity float64
	// Rollout, for a bad_rollout, are the new version's pods: Rollout[i]
	// replaces the deployment's Pods[i] from Rollout[i].At. Empty: names
	// are drawn and one pod is replaced every 40 s from the onset.
	Rollout []RolloutPod
	// PrefillFactor and DecodeFactor, for a bad_rollout, multiply the new
	// version's prefill time and time per output token; 0 takes
	// 1+2×Severity.
	PrefillFactor, DecodeFactor float64
}

// RolloutPod is one pod of a bad_rollout's new version.
type RolloutPod struct {
	Pod
	// At is when it takes over from the pod it replaces.
	At time.Time
}

// DefaultSeverity is the Severity a fault of kind and variant gets when it
// names none, and 0 for an unknown kind.
func DefaultSeverity(kind, variant string) float64 {
	subtle := variant == VariantSubtle
	pick := func(full, sub float64) float64 {
		if subtle {
			return sub
		}
		return full
	}
	switch kind {
	case KindDependencySlow:
		return pick(5, 1.5) // latency multiplier
	case KindTenantFailure:
		return pick(0.75, 0.05) // the tenant's failure probability
	case KindBadRollout:
		return pick(0.25, 0.03) // added failure probability of the new version
	case KindInferenceCapacitySaturated:
		return pick(2.2, 1.4) // traffic multiplier on a server healthy at 60% load
	case KindKVCacheExhausted:
		return pick(0.6, 0.05) // fraction of requests preempted
	}
	return 0
}

// rolloutStep is how long a rolling update takes per pod.
const rolloutStep = 40 * time.Second

// completeFault fills a fault's Entity and Severity from c's defaults.
func (c Config) completeFault(f Fault) Fault {
	if f.Severity == 0 {
		f.Severity = DefaultSeverity(f.Kind, f.Variant)
	}
	e := make(map[string]string, len(f.Entity)+3)
	for k, v := range f.Entity {
		e[k] = v
	}
	if e["service"] == "" && e["workload"] != "" {
		e["service"] = e["workload"]
	}
	switch f.Kind {
	case KindTenantFailure:
		if e["tenant"] == "" && len(c.Tenants) > 0 {
			e["tenant"] = c.Tenants[min(2, len(c.Tenants)-1)]
		}
	case KindDependencySlow, KindBadRollout, KindInferenceCapacitySaturated, KindKVCacheExhausted:
		if e["service"] == "" && e["model"] != "" {
			for _, m := range c.ModelServers {
				if m.Model == e["model"] {
					e["service"] = m.Name
					break
				}
			}
		}
		if e["service"] == "" {
			switch f.Kind {
			case KindDependencySlow:
				e["service"] = c.VectorDB.Name
			case KindBadRollout:
				e["service"] = c.App.Name
			default:
				if len(c.ModelServers) > 0 {
					e["service"] = c.ModelServers[0].Name
				}
			}
		}
		if d, ok := c.deployment(e["service"]); ok && e["namespace"] == "" {
			e["namespace"] = d.Namespace
		}
		for _, m := range c.ModelServers {
			if m.Name == e["service"] && e["model"] == "" {
				e["model"] = m.Model
			}
		}
		if f.Kind == KindBadRollout && e["version"] == "" {
			if d, ok := c.deployment(e["service"]); ok {
				e["version"] = nextVersion(d.Version)
			}
		}
	}
	f.Entity = e
	return f
}

// validateFault reports what is wrong with a completed fault.
func (c Config) validateFault(f Fault) error {
	if !slices.Contains(Kinds(), f.Kind) {
		return fmt.Errorf("unknown kind; known: %s", strings.Join(Kinds(), ", "))
	}
	if f.Variant != "" && f.Variant != VariantSubtle {
		return fmt.Errorf("unknown variant %q", f.Variant)
	}
	if f.Onset.Before(c.Start) || !f.Onset.Before(c.Start.Add(c.Duration)) {
		return fmt.Errorf("onset %s is outside the run", f.Onset.Format(time.RFC3339))
	}
	s := f.Severity
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return fmt.Errorf("severity %g is not a number", s)
	}
	svc := f.Entity["service"]
	_, isModel := c.modelServer(svc)
	switch f.Kind {
	case KindDependencySlow:
		if _, ok := c.deployment(svc); !ok && svc != c.Tool.Name {
			return fmt.Errorf("service %q is not on the path", svc)
		}
		if s < 1 || s > 1000 {
			return fmt.Errorf("severity %g (a latency multiplier) is outside [1, 1000]", s)
		}
	case KindTenantFailure:
		if !slices.Contains(c.Tenants, f.Entity["tenant"]) {
			return fmt.Errorf("tenant %q is not configured", f.Entity["tenant"])
		}
		if s <= 0 || s > 1 {
			return fmt.Errorf("severity %g (a failure probability) is outside (0, 1]", s)
		}
	case KindBadRollout:
		if svc != c.App.Name && !isModel {
			return fmt.Errorf("service %q is neither the app nor a model server", svc)
		}
		if s <= 0 || s > 1 {
			return fmt.Errorf("severity %g (a failure probability) is outside (0, 1]", s)
		}
		if d, _ := c.deployment(svc); len(f.Rollout) > 0 && len(f.Rollout) != len(d.Pods) {
			return fmt.Errorf("rollout names %d pods for the %d of %q", len(f.Rollout), len(d.Pods), svc)
		}
		for _, x := range []float64{f.PrefillFactor, f.DecodeFactor} {
			if x < 0 || x > 100 || math.IsNaN(x) {
				return fmt.Errorf("latency factor %g is outside [0, 100]", x)
			}
		}
	case KindInferenceCapacitySaturated:
		if !isModel {
			return fmt.Errorf("service %q is not a model server", svc)
		}
		if s < 1 || s > 20 {
			return fmt.Errorf("severity %g (a traffic multiplier) is outside [1, 20]", s)
		}
	case KindKVCacheExhausted:
		if !isModel {
			return fmt.Errorf("service %q is not a model server", svc)
		}
		if s <= 0 || s > 1 {
			return fmt.Errorf("severity %g (a preempted fraction) is outside (0, 1]", s)
		}
	}
	return nil
}

// deployment finds an in-cluster service of the path by name.
func (c Config) deployment(name string) (Deployment, bool) {
	for _, d := range []Deployment{c.Gateway, c.App, c.VectorDB} {
		if d.Name == name {
			return d, true
		}
	}
	if m, ok := c.modelServer(name); ok {
		return m.Deployment, true
	}
	return Deployment{}, false
}

// modelServer finds a model server by service name.
func (c Config) modelServer(name string) (ModelServer, bool) {
	for _, m := range c.ModelServers {
		if m.Name == name {
			return m, true
		}
	}
	return ModelServer{}, false
}

// nextVersion bumps the minor part of a dotted version ("v0.11.0" →
// "v0.12.0"), or appends "-next" when it has none.
func nextVersion(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) >= 2 {
		if n, err := strconv.Atoi(parts[1]); err == nil {
			parts[1] = strconv.Itoa(n + 1)
			for i := 2; i < len(parts); i++ {
				parts[i] = "0"
			}
			return strings.Join(parts, ".")
		}
	}
	return v + "-next"
}

// faultSet answers, for one instant, what the configured faults do.
type faultSet struct {
	faults []Fault
}

// active yields the faults of kind that target key=value and have begun at t.
func (s faultSet) active(kind, key, value string, t time.Time) []Fault {
	var out []Fault
	for _, f := range s.faults {
		if f.Kind == kind && f.Entity[key] == value && !t.Before(f.Onset) {
			out = append(out, f)
		}
	}
	return out
}

// slowdown is the latency multiplier dependency_slow puts on service at t.
func (s faultSet) slowdown(service string, t time.Time) float64 {
	m := 1.0
	for _, f := range s.active(KindDependencySlow, "service", service, t) {
		m *= f.Severity
	}
	return m
}

// tenantFailure is the probability that tenant's request fails at t.
func (s faultSet) tenantFailure(tenant string, t time.Time) float64 {
	p := 0.0
	for _, f := range s.active(KindTenantFailure, "tenant", tenant, t) {
		p = max(p, f.Severity)
	}
	return p
}

// rollout is the bad_rollout of service, if any.
func (s faultSet) rollout(service string) (Fault, bool) {
	for _, f := range s.faults {
		if f.Kind == KindBadRollout && f.Entity["service"] == service {
			return f, true
		}
	}
	return Fault{}, false
}

// load is the traffic multiplier inference_capacity_saturated puts on a
// model server at t; it ramps in over a minute.
func (s faultSet) load(service string, t time.Time) float64 {
	m := 1.0
	for _, f := range s.active(KindInferenceCapacitySaturated, "service", service, t) {
		ramp := min(1, float64(t.Sub(f.Onset))/float64(time.Minute))
		m *= 1 + (f.Severity-1)*ramp
	}
	return m
}

// saturatedSince is how long a model server has been offered more than its
// capacity at t, for the queue that builds up.
func (s faultSet) saturatedSince(service string, t time.Time) time.Duration {
	var d time.Duration
	for _, f := range s.active(KindInferenceCapacitySaturated, "service", service, t) {
		d = max(d, t.Sub(f.Onset))
	}
	return d
}

// preemption is the fraction of a model server's requests preempted at t.
func (s faultSet) preemption(service string, t time.Time) float64 {
	p := 0.0
	for _, f := range s.active(KindKVCacheExhausted, "service", service, t) {
		ramp := min(1, float64(t.Sub(f.Onset))/float64(30*time.Second))
		p = max(p, f.Severity*ramp)
	}
	return p
}
