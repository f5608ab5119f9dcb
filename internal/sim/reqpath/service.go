package reqpath

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// pod is one replica as requests see it.
type pod struct {
	res *resInfo
	ip  string
}

// service is a deployment of the path with its pods and, when a bad_rollout
// targets it, the pods of the new version.
type service struct {
	Deployment
	pods []pod
	// newPods replace pods one by one from rollout.Onset.
	newPods    []pod
	rollout    Fault
	hasRollout bool
}

// modelService is a model server.
type modelService struct {
	*service
	model ModelServer
}

// newService builds the pods of d; n numbers the service for pod IPs.
func (g *Generator) newService(r *rand.Rand, d Deployment, lang string, n int) *service {
	s := &service{Deployment: d}
	for i, p := range d.Pods {
		s.pods = append(s.pods, pod{res: newResInfo(g.cfg, d, d.Version, p, lang), ip: fmt.Sprintf("10.42.%d.%d", n+1, 10+i)})
	}
	f, ok := g.faults.rollout(d.Name)
	if !ok {
		return s
	}
	s.rollout, s.hasRollout = f, true
	if len(f.Rollout) == len(d.Pods) {
		for i, np := range f.Rollout {
			s.newPods = append(s.newPods, pod{res: newResInfo(g.cfg, d, f.Entity["version"], np.Pod, lang), ip: fmt.Sprintf("10.42.%d.%d", n+1, 100+i)})
		}
		return s
	}
	hash := k8sName(r, 9)
	for i, p := range d.Pods {
		np := p
		if _, sts := statefulSetOf(d.Name, p.Name); !sts {
			np.Name = d.Name + "-" + hash + "-" + k8sName(r, 5)
		}
		s.newPods = append(s.newPods, pod{res: newResInfo(g.cfg, d, f.Entity["version"], np, lang), ip: fmt.Sprintf("10.42.%d.%d", n+1, 100+i)})
	}
	return s
}

// k8sName draws n characters of the alphabet Kubernetes uses for generated
// names.
func k8sName(r *rand.Rand, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// pick chooses the pod that serves a request at t and reports whether it
// runs the version a bad_rollout brought.
func (s *service) pick(r *rand.Rand, t time.Time) (pod, bool) {
	i := r.IntN(len(s.pods))
	if s.hasRollout && len(s.rollout.Rollout) == len(s.pods) {
		if !t.Before(s.rollout.Rollout[i].At) {
			return s.newPods[i], true
		}
		return s.pods[i], false
	}
	if s.hasRollout && !t.Before(s.rollout.Onset) {
		up := 1 + int(t.Sub(s.rollout.Onset)/rolloutStep)
		if i < up {
			return s.newPods[i], true
		}
	}
	return s.pods[i], false
}

// rolloutFactors are the latency multiplier and the added failure
// probability of a request served by the new version (1 and 0 otherwise).
func (s *service) rolloutFactors(isNew bool) (latency, failure float64) {
	if !isNew {
		return 1, 0
	}
	return 1 + 2*s.rollout.Severity, s.rollout.Severity
}

// rolloutSlowdown multiplies the prefill time and the time per output
// token of a request served by the new version (1 and 1 otherwise).
func (s *service) rolloutSlowdown(isNew bool) (prefill, decode float64) {
	lat, _ := s.rolloutFactors(isNew)
	prefill, decode = lat, lat
	if isNew && s.rollout.PrefillFactor > 0 {
		prefill = s.rollout.PrefillFactor
	}
	if isNew && s.rollout.DecodeFactor > 0 {
		decode = s.rollout.DecodeFactor
	}
	return prefill, decode
}
