package eval

import (
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
)

// Seconds is a duration in seconds, as the JSON output gives durations.
type Seconds float64

// Duration returns s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// CallThreshold is the confidence from which the engine's rank-1 cause or
// finding counts as a call of the faulty entity (and from which a report
// is not healthy).
const CallThreshold = 0.5

// CaseResult is how the engine did on one case.
type CaseResult struct {
	Suite    string  `json:"suite"`
	Scenario string  `json:"scenario"`
	Seed     uint64  `json:"seed"`
	Duration Seconds `json:"duration_s"`
	// FaultScale and NoiseScale are the simulator's size changes (1 but in
	// the unseen suite).
	FaultScale float64 `json:"fault_scale"`
	NoiseScale float64 `json:"noise_scale"`
	// Faults are the injected faults and how each was diagnosed; none for a
	// healthy run.
	Faults []FaultResult `json:"faults"`
	// Healthy is the end-of-run report's verdict.
	Healthy bool `json:"healthy"`
	// Confident: some cause or finding of the end-of-run report reached
	// CallThreshold.
	Confident bool `json:"confident"`
	// Calls are the entities the engine called at the run's end: its rank-1
	// cause and its rank-1 finding, each when confident enough.
	Calls []Call `json:"calls"`
	// Predictions are every cause and finding of the end-of-run report, for
	// the calibration table.
	Predictions []Prediction `json:"predictions"`
}

// FaultResult is one injected fault and how it was diagnosed.
type FaultResult struct {
	Kind    string            `json:"kind"`
	Variant string            `json:"variant,omitempty"`
	Entity  map[string]string `json:"entity"`
	Onset   time.Time         `json:"onset"`
	// Rank is where the end-of-run report names the fault (kind and
	// entity), among causes or findings, not counting the run's other
	// faults ranked before it; 0 when it does not.
	Rank int `json:"rank"`
	// Called: a call names the fault's entity (kind ignored).
	Called bool `json:"called"`
	// TTD is the time from the onset to the first report that ranks the
	// fault first; nil when none did within the horizon.
	TTD *Seconds `json:"ttd_s"`
}

// Call is an entity the engine called faulty.
type Call struct {
	Kind       string            `json:"kind"`
	Entity     map[string]string `json:"entity"`
	Confidence float64           `json:"confidence"`
	// Correct: the entity is a fault's (kind ignored).
	Correct bool `json:"correct"`
}

// Prediction is one cause or finding of an end-of-run report.
type Prediction struct {
	// Finding: from Report.Findings rather than Report.Causes.
	Finding    bool              `json:"finding,omitempty"`
	Rank       int               `json:"rank"`
	Kind       string            `json:"kind"`
	Entity     map[string]string `json:"entity"`
	Confidence float64           `json:"confidence"`
	// Correct: it names one of the run's faults (kind and entity).
	Correct bool `json:"correct"`
}

// judge scores an end-of-run report against the truth (TTD is left nil).
func judge(c Case, cfg sim.Config, truth []sim.Fault, rep *diagnose.Report) *CaseResult {
	r := &CaseResult{
		Suite: c.Suite, Scenario: c.Scenario, Seed: c.Seed, Duration: Seconds(cfg.Duration.Seconds()),
		FaultScale: cfg.FaultScale, NoiseScale: cfg.NoiseScale,
		Faults: []FaultResult{}, Calls: []Call{}, Predictions: []Prediction{},
		Healthy: rep.Healthy,
	}
	for _, list := range []struct {
		finding bool
		causes  []diagnose.Cause
	}{{false, rep.Causes}, {true, rep.Findings}} {
		for i, cause := range list.causes {
			r.Confident = r.Confident || cause.Confidence >= CallThreshold
			r.Predictions = append(r.Predictions, Prediction{Finding: list.finding, Rank: i + 1, Kind: cause.Kind,
				Entity: cloneEntity(cause.Entity), Confidence: cause.Confidence, Correct: correct(truth, cause)})
		}
		if len(list.causes) > 0 && list.causes[0].Confidence >= CallThreshold {
			first := list.causes[0]
			call := Call{Kind: first.Kind, Entity: cloneEntity(first.Entity), Confidence: first.Confidence}
			for _, f := range truth {
				call.Correct = call.Correct || EntityMatch(f.Entity, first.Entity)
			}
			r.Calls = append(r.Calls, call)
		}
	}
	for i, f := range truth {
		fr := FaultResult{Kind: f.Kind, Variant: f.Variant, Entity: cloneEntity(f.Entity), Onset: f.Onset, Rank: bestRank(truth, i, rep)}
		for _, call := range r.Calls {
			fr.Called = fr.Called || EntityMatch(f.Entity, call.Entity)
		}
		r.Faults = append(r.Faults, fr)
	}
	return r
}

func cloneEntity[M ~map[string]string](m M) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
