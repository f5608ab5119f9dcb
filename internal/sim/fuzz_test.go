package sim

import (
	"errors"
	"testing"
	"time"
)

// FuzzParseScenario: a scenario name from the command line never panics;
// a name that parses gives a simulator.
//
//	go test ./internal/sim -run '^$' -fuzz FuzzParseScenario -fuzztime 30s
func FuzzParseScenario(f *testing.F) {
	for _, n := range ScenarioNames() {
		f.Add(n)
	}
	f.Add("nvlink_degraded/subtle+gpu_idle+straggler")
	f.Add("/")
	f.Add("+")
	f.Fuzz(func(t *testing.T, name string) {
		sc, err := ParseScenario(name)
		if err != nil {
			if !errors.Is(err, ErrUnknownScenario) {
				t.Fatalf("%q: %v does not wrap ErrUnknownScenario", name, err)
			}
			return
		}
		if sc.Name != name {
			t.Fatalf("%q parsed as %q", name, sc.Name)
		}
		if len(sc.Faults) > 4 {
			return // more faults than a small cluster has nodes for
		}
		if _, err := New(Config{Seed: 1, Duration: time.Minute}, sc); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
	})
}
