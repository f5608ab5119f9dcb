package sim

// The online evaluator: a service that scores a sample of the served
// model's answers and exports the model's accuracy as model_accuracy{model}
// (the name DESIGN.md gives model quality).
const (
	jobEvaluator      = "model-evaluator"
	evaluatorInstance = "10.0.0.7:8080"
	// healthyAccuracy and accuracyNoise are the model's accuracy and its
	// spread from one scrape to the next.
	healthyAccuracy = 0.968
	accuracyNoise   = 0.004
)

// evaluator exports the served model's accuracy.
type evaluator struct {
	s   *serving
	rng *rng
	acc *series
}

func newEvaluator(reg *registry, c *cluster) *evaluator {
	f := reg.family("model_accuracy", typeGauge, "Share of sampled answers the evaluator scored correct over its last window.")
	return &evaluator{
		s:   c.serve,
		rng: newRand(c.cfg, "evaluator"),
		acc: f.newSeries("model_accuracy", "model", c.serve.model, "namespace", InferenceNamespace, "instance", evaluatorInstance, "job", jobEvaluator),
	}
}

func (e *evaluator) scrape(o *scrapeOut) {
	o.add(e.acc, round(clamp(healthyAccuracy+gauss(e.rng, accuracyNoise)-e.s.accuracyDrop, 0, 1), 4))
}
