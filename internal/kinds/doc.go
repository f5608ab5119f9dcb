// Package kinds is Vigil's knowledge as data: one registered definition
// per cause or finding kind of DESIGN.md — its name, layer, prior, the
// catalog signals its detector reads, its title and its action — and one
// per symptom kind with the signals that show it. The diagnosis engine
// derives its hypotheses, priors, headlines and prefetch list from it; the
// signal catalog, the simulator and the evaluation take the kind names
// from it; tests fail when any of them, or DESIGN.md, disagrees.
//
// It is a leaf: it imports nothing of Vigil's, and holds no detector code
// (internal/diagnose registers one detector per kind against these
// names). Adding a kind is one definition here, one detector file, one
// script test and one simulator fault.
package kinds
