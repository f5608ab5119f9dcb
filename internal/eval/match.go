package eval

import (
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
)

// canonicalKeys are DESIGN.md's canonical entity keys: the ones compared
// when two entities are matched.
var canonicalKeys = []string{"node", "gpu", "gpu_instance", "uuid", "pod", "namespace", "container", "workload", "service", "model", "tenant"}

// identifyingKeys name a thing on their own; two entities that share none
// of them are about different things, whatever else they share. A tenant
// is one: tenant_failure's truth names only the tenant.
var identifyingKeys = []string{"node", "pod", "workload", "model", "service", "tenant"}

// EntityMatch tells whether a called entity names the truth's entity: every
// canonical key present in both has the same value, and they share at
// least one identifying key. A node-level call of a GPU fault matches
// ({node} against {node, gpu}); a call of another GPU of the same node does
// not.
func EntityMatch(truth, call map[string]string) bool {
	for _, k := range canonicalKeys {
		tv, inTruth := truth[k]
		cv, inCall := call[k]
		if inTruth && inCall && tv != cv {
			return false
		}
	}
	for _, k := range identifyingKeys {
		_, inTruth := truth[k]
		_, inCall := call[k]
		if inTruth && inCall {
			return true
		}
	}
	return false
}

// matches tells whether a cause or finding names the fault: the same kind
// and a matching entity.
func matches(f sim.Fault, c diagnose.Cause) bool {
	return f.Kind == c.Kind && EntityMatch(f.Entity, c.Entity)
}

// effectiveRank is the rank at which list names truth[i], not counting the
// entries before it that name another fault of the same run (two faults of
// one run can both be "first"); 0 when list does not name it.
func effectiveRank(truth []sim.Fault, i int, list []diagnose.Cause) int {
	rank := 0
	for _, c := range list {
		if matches(truth[i], c) {
			return rank + 1
		}
		other := false
		for j, f := range truth {
			if j != i && matches(f, c) {
				other = true
				break
			}
		}
		if !other {
			rank++
		}
	}
	return 0
}

// bestRank is the better of the effective ranks of truth[i] among the
// report's causes and among its findings; 0 when neither names it.
func bestRank(truth []sim.Fault, i int, rep *diagnose.Report) int {
	a := effectiveRank(truth, i, rep.Causes)
	b := effectiveRank(truth, i, rep.Findings)
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// correct tells whether a cause or finding names one of the run's faults.
func correct(truth []sim.Fault, c diagnose.Cause) bool {
	for _, f := range truth {
		if matches(f, c) {
			return true
		}
	}
	return false
}
