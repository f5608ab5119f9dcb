package sim

import (
	"io"
	"slices"
	"time"

	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// RequestPathSampleRatio is the share of requests the request path writes
// (a head sampler's): enough for per-tenant and per-hop statistics, a
// quarter of the bytes.
const RequestPathSampleRatio = 0.25

// vllmVersion is the vLLM version the deployment runs: 0.11, or 0.9 where
// the run speaks vLLM's old names.
func vllmVersion(l Labels) string {
	if l.VLLM == VLLMOld {
		return "v0.9.2"
	}
	return "v0.11.0"
}

// requestPathConfig is the request path of a cluster, without faults: the
// vLLM deployment with its pods and nodes, the tenants, and the diurnal
// traffic at the deployment's rate.
func requestPathConfig(cfg Config, c *cluster) reqpath.Config {
	var pods []reqpath.Pod
	for _, r := range c.serve.replicas {
		pods = append(pods, reqpath.Pod{Name: r.pod.name, Node: r.pod.node.name})
	}
	return reqpath.Config{
		Seed:              cfg.Seed,
		Start:             cfg.Start,
		Duration:          cfg.Duration,
		RequestsPerMinute: cfg.PeakRequestRate * 60,
		Traffic:           diurnal,
		SampleRatio:       RequestPathSampleRatio,
		Tenants:           slices.Clone(cfg.Tenants),
		ModelServers: []reqpath.ModelServer{{
			Deployment:         reqpath.Deployment{Name: c.serve.name, Namespace: InferenceNamespace, Version: vllmVersion(cfg.Labels), Pods: pods},
			Model:              c.serve.model,
			TimePerOutputToken: time.Duration(baseITL * float64(time.Second)),
		}},
	}
}

// RequestPath returns the request-path config of the run
// (internal/sim/reqpath): the same vLLM deployment, pods, nodes, tenants
// and traffic as the metrics, and the scenario's request-path faults with
// the same onsets.
func (s *Simulator) RequestPath() reqpath.Config {
	c := newCluster(s.cfg)
	rc := requestPathConfig(s.cfg, c)
	for _, f := range s.truth {
		if !slices.Contains(reqpath.Kinds(), f.Kind) {
			continue
		}
		rf := reqpath.Fault{Kind: f.Kind, Onset: f.Onset, Entity: cloneMap(f.Entity)}
		if f.Subtle {
			rf.Variant = reqpath.VariantSubtle
		}
		rf.Severity = requestPathSeverity(f.Kind, rf.Variant, s.cfg.FaultScale)
		switch f.Kind {
		case reqpath.KindInferenceCapacitySaturated:
			rf.Entity = map[string]string{"service": c.serve.name}
		case reqpath.KindKVCacheExhausted:
			// One replica of the deployment preempts.
			rf.Entity = map[string]string{"service": c.serve.name}
			rf.Severity /= float64(len(c.serve.replicas))
		case reqpath.KindBadRollout:
			rf = s.requestPathRollout(c, f, rf)
		}
		rc.Faults = append(rc.Faults, rf)
	}
	return rc
}

// requestPathRollout is the request path's side of the run's bad rollout
// of the vLLM deployment: the same new pods taking over at the same times,
// the same version, as much slower and as many more failed requests as
// the metrics show (at least reqpath's smallest failure probability).
func (s *Simulator) requestPathRollout(c *cluster, f Fault, rf reqpath.Fault) reqpath.Fault {
	plan := planRollout(s.cfg, c)
	eff := rolloutEffectOf(s.cfg, f.Variant)
	rf.Entity = map[string]string{"service": c.serve.name, "namespace": InferenceNamespace, "version": plan.version}
	rf.Severity = max(eff.aborts, 0.001)
	rf.PrefillFactor, rf.DecodeFactor = eff.ttft, eff.itl
	for i, st := range plan.steps {
		rf.Rollout = append(rf.Rollout, reqpath.RolloutPod{
			Pod: reqpath.Pod{Name: st.name, Node: c.serve.replicas[i].pod.node.name},
			At:  f.Onset.Add(st.ready),
		})
	}
	return rf
}

// WriteRequestPath writes the run's request path as OTLP JSON, one export
// request per line, as the OpenTelemetry Collector's file exporter does:
// traces to traces and logs to logs.
func (s *Simulator) WriteRequestPath(traces, logs io.Writer) error {
	return reqpath.WriteFiles(s.RequestPath(), traces, logs)
}

// buildRequestPath makes a fault only the request path shows (the
// metrics are those of a healthy cluster): its entity and severity are
// what internal/sim/reqpath gives the kind by default.
func buildRequestPath(b *faultBuilder, spec FaultSpec) (*activeFault, error) {
	rc := requestPathConfig(b.w.cfg, b.w.c).WithDefaults()
	f := reqpath.Fault{Kind: spec.Kind, Onset: b.w.cfg.Start, Entity: requestPathEntity(b.w.cfg, rc, spec)}
	if spec.Variant == Subtle {
		f.Variant = reqpath.VariantSubtle
	}
	f.Severity = requestPathSeverity(spec.Kind, f.Variant, b.w.cfg.FaultScale)
	rc.Faults = []reqpath.Fault{f}
	done := rc.WithDefaults().Faults[0]
	sev := done.Severity
	summary := ""
	switch spec.Kind {
	case reqpath.KindDependencySlow:
		summary = "the " + done.Entity["service"] + " hop answers " + fmtFactor(sev) + " slower"
		sev = 1 - 1/sev
	case reqpath.KindTenantFailure:
		summary = "requests of " + done.Entity["tenant"] + " fail in the vector DB"
	}
	return &activeFault{truth: Fault{Entity: done.Entity, Severity: sev, Summary: summary + " (request path only)"},
		apply: func(*world, time.Duration) {}}, nil
}

// requestPathEntity draws what a request-path fault hits from the seed (a
// generator of its own, so that the other faults' draws stay as they
// were): dependency_slow one of the hops the application calls — the
// vector DB, the external tool or the model server —, tenant_failure one
// of the tenants. The other kinds keep reqpath's defaults.
func requestPathEntity(cfg Config, rc reqpath.Config, spec FaultSpec) map[string]string {
	r := newRand(cfg, "request-path-entity", spec.Kind, spec.Variant)
	switch spec.Kind {
	case reqpath.KindDependencySlow:
		hops := []string{rc.VectorDB.Name, rc.Tool.Name}
		for _, m := range rc.ModelServers {
			hops = append(hops, m.Name)
		}
		return map[string]string{"service": hops[r.IntN(len(hops))]}
	case reqpath.KindTenantFailure:
		if len(rc.Tenants) > 0 {
			return map[string]string{"tenant": rc.Tenants[r.IntN(len(rc.Tenants))]}
		}
	}
	return nil
}

// requestPathSeverity is a request-path fault's severity (in its kind's
// unit, see internal/sim/reqpath) at the run's fault scale: a multiplier's
// distance from 1 or a probability, scaled.
func requestPathSeverity(kind, variant string, scale float64) float64 {
	sev := reqpath.DefaultSeverity(kind, variant)
	switch kind {
	case reqpath.KindDependencySlow, reqpath.KindInferenceCapacitySaturated:
		return clamp(1+(sev-1)*scale, 1.01, 20)
	}
	return clamp(sev*scale, 0.001, 1)
}

func fmtFactor(f float64) string {
	return string(appendValue(nil, round(f, 2))) + "×"
}
