package catalog

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Catalog is the signal table with its lookup indexes. It is read-only once
// built and safe for concurrent use; callers must not modify the signals it
// returns pointers to.
type Catalog struct {
	signals  []*Signal
	byName   map[string]*Signal
	byMetric map[string]Match
	ignored  map[string]Ignored
	aliases  map[Vocabulary][]Alias // own, then target aliases
	own      map[Vocabulary][]Alias
	target   []Alias
	xids     map[int]XID
	opts     Options
}

// Options are the caller's additions to the built-in catalog.
type Options struct {
	// Training names a job's own progress metrics (from vigil.yaml).
	Training []TrainingMetric
	// TenantLabel is the label that names a tenant; empty means none, and
	// the tenant is the namespace (a rule the topology applies).
	TenantLabel string
}

// TrainingMetric is a training job's own progress metric.
type TrainingMetric struct {
	// Metric is the metric name as stored.
	Metric string
	// Signal is train.step (a step counter or the current step, a gauge that
	// grows) or train.throughput (samples or tokens per second).
	Signal string
	// Type is the metric's true type: Counter or Gauge.
	Type Type
	// Scale converts the value into the signal's unit; 0 means 1.
	Scale float64
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	seen := map[string]bool{}
	for i, t := range o.Training {
		switch {
		case t.Metric == "":
			return fmt.Errorf("training metric %d: metric name is empty", i)
		case t.Signal != SignalTrainStep && t.Signal != SignalTrainThroughput:
			return fmt.Errorf("training metric %s: signal must be %s or %s, got %q", t.Metric, SignalTrainStep, SignalTrainThroughput, t.Signal)
		case t.Type != Counter && t.Type != Gauge:
			return fmt.Errorf("training metric %s: type must be counter or gauge, got %q", t.Metric, t.Type)
		case seen[t.Metric]:
			return fmt.Errorf("training metric %s: listed twice", t.Metric)
		}
		seen[t.Metric] = true
	}
	return nil
}

// The canonical names of the configured training signals.
const (
	SignalTrainStep       = "train.step"
	SignalTrainThroughput = "train.throughput"
)

var defaultCatalog = sync.OnceValue(func() *Catalog {
	c, err := New(Options{})
	if err != nil {
		panic("catalog: the built-in table is invalid: " + err.Error()) // caught by TestDefault
	}
	return c
})

// Default returns the built-in catalog, built once and shared.
func Default() *Catalog { return defaultCatalog() }

// New builds the built-in catalog with the additions of opts. It fails when
// opts are invalid or a configured metric collides with a known one.
func New(opts Options) (*Catalog, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Catalog{
		byName:   map[string]*Signal{},
		byMetric: map[string]Match{},
		ignored:  map[string]Ignored{},
		aliases:  map[Vocabulary][]Alias{},
		own:      builtinAliases(),
		target:   targetAliases(opts.TenantLabel),
		xids:     map[int]XID{},
		opts:     opts,
	}
	for v, own := range c.own {
		target := c.target
		if exporterSelf[v] != nil {
			// An exporter's service label names the exporter's Service.
			target = slices.DeleteFunc(slices.Clone(target), func(a Alias) bool { return a.Key == KeyService })
		}
		c.aliases[v] = append(slices.Clone(own), target...)
	}
	var errs []error
	for _, s := range builtinSignals() {
		errs = append(errs, c.add(s))
	}
	for _, s := range trainingSignals(opts.Training) {
		errs = append(errs, c.add(s))
	}
	for _, ig := range builtinIgnored() {
		if _, dup := c.ignored[ig.Metric]; dup {
			errs = append(errs, fmt.Errorf("ignored metric %s listed twice", ig.Metric))
		}
		if _, known := c.byMetric[ig.Metric]; known {
			errs = append(errs, fmt.Errorf("metric %s is both a source and ignored", ig.Metric))
		}
		c.ignored[ig.Metric] = ig
	}
	for _, x := range xidTable() {
		if _, dup := c.xids[x.Code]; dup {
			errs = append(errs, fmt.Errorf("XID %d listed twice", x.Code))
		}
		c.xids[x.Code] = x
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Catalog) add(s Signal) error {
	if err := s.validate(); err != nil {
		return err
	}
	if _, dup := c.byName[s.Name]; dup {
		return fmt.Errorf("signal %s defined twice", s.Name)
	}
	p := &s
	c.byName[s.Name] = p
	c.signals = append(c.signals, p)
	var errs []error
	for _, src := range s.Sources {
		if m, dup := c.byMetric[src.Metric]; dup {
			errs = append(errs, fmt.Errorf("metric %s is a source of both %s and %s", src.Metric, m.Signal.Name, s.Name))
			continue
		}
		c.byMetric[src.Metric] = Match{Signal: p, Source: src}
	}
	return errors.Join(errs...)
}

func (s Signal) validate() error {
	switch {
	case s.Name == "" || !strings.Contains(s.Name, "."):
		return fmt.Errorf("signal %q: name must be <domain>.<what>", s.Name)
	case s.Level == "":
		return fmt.Errorf("signal %s: no level", s.Name)
	case s.Type == "":
		return fmt.Errorf("signal %s: no type", s.Name)
	case s.Unit == "":
		return fmt.Errorf("signal %s: no unit", s.Name)
	case s.Meaning == "":
		return fmt.Errorf("signal %s: no meaning", s.Name)
	case len(s.Sources) == 0:
		return fmt.Errorf("signal %s: no source", s.Name)
	}
	for _, src := range s.Sources {
		if src.Vocabulary == "" || src.Metric == "" {
			return fmt.Errorf("signal %s: source without vocabulary or metric", s.Name)
		}
		if src.Declared != "" && src.Declared == src.TrueType(s) {
			return fmt.Errorf("signal %s: source %s declares its own true type %s; leave Declared empty", s.Name, src.Metric, src.Declared)
		}
	}
	return nil
}

// Signals returns every signal, sorted by name.
func (c *Catalog) Signals() []*Signal {
	out := slices.Clone(c.signals)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Signal returns the signal with a canonical name.
func (c *Catalog) Signal(name string) (*Signal, bool) {
	s, ok := c.byName[name]
	return s, ok
}

// seriesSuffixes are stripped, in order, from a stored name that is not a
// known metric to find its histogram or summary family.
var seriesSuffixes = [...]string{"_bucket", "_sum", "_count"}

// Lookup returns the signal and source of a stored metric name. The name may
// be a histogram's or summary's _bucket, _sum or _count series.
func (c *Catalog) Lookup(metric string) (Match, bool) {
	if m, ok := c.byMetric[metric]; ok {
		return m, true
	}
	for _, suf := range seriesSuffixes {
		base, ok := strings.CutSuffix(metric, suf)
		if !ok {
			continue
		}
		m, ok := c.byMetric[base]
		if !ok {
			continue
		}
		t := m.Source.TrueType(*m.Signal)
		if t == Histogram || (t == Summary && suf != "_bucket") {
			m.Suffix = suf
			return m, true
		}
	}
	return Match{}, false
}

// TrueType returns how to read a stored metric, whatever its # TYPE line
// says: the true type of its source (a histogram's _bucket, _sum and _count
// series all report Histogram).
func (c *Catalog) TrueType(metric string) (Type, bool) {
	m, ok := c.Lookup(metric)
	if !ok {
		return "", false
	}
	return m.Source.TrueType(*m.Signal), true
}

// IgnoredMetric returns the explicit reason a known upstream metric is not
// in the catalog.
func (c *Catalog) IgnoredMetric(metric string) (Ignored, bool) {
	ig, ok := c.ignored[metric]
	return ig, ok
}

// IgnoredMetrics returns every ignored metric, sorted by name.
func (c *Catalog) IgnoredMetrics() []Ignored {
	out := make([]Ignored, 0, len(c.ignored))
	for _, ig := range c.ignored {
		out = append(out, ig)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metric < out[j].Metric })
	return out
}

// Vocabulary returns the vocabulary of a stored metric name, from the
// catalog or, for a name it does not know, from the vocabulary's prefix.
func (c *Catalog) Vocabulary(metric string) (Vocabulary, bool) {
	if m, ok := c.Lookup(metric); ok {
		return m.Source.Vocabulary, true
	}
	if ig, ok := c.ignored[metric]; ok {
		return ig.Vocabulary, true
	}
	for _, p := range vocabularyPrefixes {
		if strings.HasPrefix(metric, p.prefix) {
			return p.vocab, true
		}
	}
	return "", false
}

// vocabularyPrefixes tell a vocabulary by a metric name's prefix, longest
// first where one prefix contains another.
var vocabularyPrefixes = [...]struct {
	prefix string
	vocab  Vocabulary
}{
	{"DCGM_", DCGMExporter},
	{"vllm:", VLLM},
	{"sglang:", SGLang},
	{"tgi_", TGI},
	{"nv_trt_llm_", TRTLLM},
	{"nv_", Triton},
	{"ray_serve_", RayServe},
	{"gen_ai_", OTelGenAI},
	{"kube_", KubeStateMetrics},
	{"node_", NodeExporter},
	{"container_", CAdvisor},
	{"machine_", CAdvisor},
}

func trainingSignals(ts []TrainingMetric) []Signal {
	var step, tput []Source
	for _, t := range ts {
		src := Source{Vocabulary: Training, Metric: t.Metric, Type: t.Type, Scale: t.Scale, Note: "configured in vigil.yaml"}
		if t.Signal == SignalTrainStep {
			step = append(step, src)
		} else {
			tput = append(tput, src)
		}
	}
	var out []Signal
	if len(step) > 0 {
		out = append(out, Signal{Name: SignalTrainStep, Level: LevelPod, Type: Counter, Unit: UnitCount,
			Meaning: "Training steps completed, per pod (rank) of a job; a flat line while its pods run is a stall.", Agg: Max, Sources: step})
	}
	if len(tput) > 0 {
		out = append(out, Signal{Name: SignalTrainThroughput, Level: LevelPod, Type: Gauge, Unit: UnitPerSecond,
			Meaning: "Samples or tokens a training pod (rank) processes per second; a drop against its own past is a slowdown.", Agg: Sum, Sources: tput})
	}
	return out
}
