package robust

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestDbgVLLM(t *testing.T) {
	seed, _ := strconv.Atoi(os.Getenv("SEED"))
	cfg := Config{Seed: uint64(2_000_000 + seed)}
	r := simulate(t, HealthyScenario, cfg)
	w, _ := newWorld(r.cfg, Scenario{}, false)
	v := w.var_
	fmt.Printf("cfg %+v rollout=%v restart=%v nb=%v reload=%v promgaps=%v\n", r.cfg, v.rollout, v.replicaRestart, v.notebookXIDs, v.driverReload, v.promGaps)
	d := w.c.serve
	fmt.Printf("model %s tp %d replicas %d maxSeqs %g kv %g peak %g cap/rep %g\n", d.model, d.tp, len(d.replicas), d.maxSeqs, d.kvTokens, d.peak, d.capacityPerReplica())
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"} {
		for _, s := range r.find(name) {
			vs := s.between(r.cfg.Start, r.end())
			step := len(vs)/60 + 1
			var out []float64
			for i := 0; i < len(vs); i += step {
				out = append(out, vs[i])
			}
			fmt.Println(name, s.lset.Get("pod"), out)
		}
	}
	_ = time.Second
}
