package microsvc

import (
	"github.com/vigil-obs/vigil/internal/sim"

	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
)

// Applications and output styles of a Config.
const (
	// AppSockShop is Weaveworks' Sock Shop: 13 services.
	AppSockShop = "sock-shop"
	// AppOnlineBoutique is Google's Online Boutique: 11 services (its load
	// generator is left out).
	AppOnlineBoutique = "online-boutique"
	// StylePrometheus emits what Prometheus scrapes from Kubernetes:
	// cAdvisor's container metrics, the services' HTTP metrics and up.
	StylePrometheus = "prometheus"
	// StyleRCAEval emits the per-service columns of the RCAEval data sets
	// (cpu, mem, load, latency, error) as gauges.
	StyleRCAEval = "rcaeval"
)

// Fault kinds of a FaultSpec; each is a Fault's Variant.
const (
	FaultCPU     = "cpu"     // a CPU hog in the service's container
	FaultMemory  = "memory"  // a memory leak
	FaultLatency = "latency" // a delay injected into the service's responses
	// FaultAvailability makes a share of the service's requests fail; a
	// caller's request fails when one of its calls to it does.
	FaultAvailability = "availability"
)

// KindMetricAnomaly is the DESIGN.md cause kind of every Fault: the
// generic layer's.
const KindMetricAnomaly = "metric_anomaly"

// DefaultStart is the first simulated instant unless a Config says
// otherwise: a fixed date, so that output is reproducible (internal/sim's).
var DefaultStart = time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)

// Defaults of Config.
const (
	DefaultDuration = time.Hour
	DefaultStep     = 15 * time.Second
	DefaultApp      = AppSockShop
	DefaultStyle    = StylePrometheus
)

// Limits that keep a Config from asking for more than a test machine holds.
const (
	maxDuration = 7 * 24 * time.Hour
	maxScale    = 10
	minRounds   = 8
)

// Config describes the application and the run. The zero value of every
// field takes its default in Resolve.
type Config struct {
	// Seed makes a run reproducible: the same Config and FaultSpec give the
	// same bytes.
	Seed uint64
	// Start is the first simulated instant (default DefaultStart).
	Start time.Time
	// Duration is how long the run lasts (default 1h).
	Duration time.Duration
	// Step is the scrape interval (default 15s), a whole number of
	// milliseconds.
	Step time.Duration
	// App is AppSockShop (default) or AppOnlineBoutique.
	App string
	// Style is StylePrometheus (default) or StyleRCAEval.
	Style string
	// Namespace is the Kubernetes namespace (default: the App's name).
	Namespace string
	// FaultScale multiplies the size of the fault's effect (default 1).
	FaultScale float64
	// NoiseScale multiplies every noise (default 1).
	NoiseScale float64
	// Graph also emits the service graph, as the OpenTelemetry Collector's
	// servicegraph connector writes it from the application's traces
	// (traces_service_graph_request_total, ..._failed_total,
	// ..._server_seconds and ..._client_seconds with client and server
	// labels, the virtual client "user" in front of the entry), at the same
	// step as the other series. It draws nothing: the other series are the
	// same with or without it.
	Graph bool
	// Uninstrumented leaves out the request metrics of the databases and
	// the message broker (their http_* series and up in the prometheus
	// style, their load, latency and error in the rcaeval style), as when
	// no exporter runs beside them: only their containers' metrics remain,
	// and, with Graph, the calls to them as their callers' traces see
	// them.
	Uninstrumented bool
}

// Resolve returns c with every zero field set to its default.
func (c Config) Resolve() Config {
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	c.Start = c.Start.UTC()
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Step == 0 {
		c.Step = DefaultStep
	}
	if c.App == "" {
		c.App = DefaultApp
	}
	if c.Style == "" {
		c.Style = DefaultStyle
	}
	if c.Namespace == "" {
		c.Namespace = c.App
	}
	if c.FaultScale == 0 {
		c.FaultScale = 1
	}
	if c.NoiseScale == 0 {
		c.NoiseScale = 1
	}
	return c
}

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("invalid microservice simulator config")

// dnsLabel is a Kubernetes namespace name (RFC 1123 label).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate reports the first problem of a resolved Config (see Resolve).
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Start.IsZero():
		return bad("start is required")
	case c.Duration <= 0 || c.Duration > maxDuration:
		return bad("duration %s is outside (0, %s]", c.Duration, maxDuration)
	case c.Step < time.Second || c.Step%time.Millisecond != 0:
		return bad("step %s must be at least 1s and a whole number of milliseconds", c.Step)
	case c.Duration < minRounds*c.Step:
		return bad("duration %s holds fewer than %d steps of %s", c.Duration, minRounds, c.Step)
	case lookupApp(c.App) == nil:
		return bad("unknown app %q (want %q or %q)", c.App, AppSockShop, AppOnlineBoutique)
	case c.Style != StylePrometheus && c.Style != StyleRCAEval:
		return bad("unknown style %q (want %q or %q)", c.Style, StylePrometheus, StyleRCAEval)
	case !dnsLabel.MatchString(c.Namespace):
		return bad("namespace %q is not a Kubernetes name (lowercase letters, digits and '-', at most 63)", c.Namespace)
	case !(c.FaultScale > 0 && c.FaultScale <= maxScale) || math.IsNaN(c.FaultScale):
		return bad("fault scale %g is outside (0, %d]", c.FaultScale, maxScale)
	case !(c.NoiseScale > 0 && c.NoiseScale <= maxScale) || math.IsNaN(c.NoiseScale):
		return bad("noise scale %g is outside (0, %d]", c.NoiseScale, maxScale)
	}
	return nil
}

// FaultSpec asks for the run's one fault. Zero fields are drawn from the
// seed.
type FaultSpec struct {
	// Kind is FaultCPU, FaultMemory, FaultLatency, FaultAvailability, or ""
	// for a healthy run.
	Kind string
	// Subtle asks for the variant whose effect is within 3× the healthy
	// spread of the metric it moves.
	Subtle bool
	// Service pins the faulty service ("": drawn among all but the entry
	// service and the noisy-latency decoy).
	Service string
	// After is the onset's offset from the start (0: drawn between 40% and
	// 65% of the run), truncated to a step.
	After time.Duration
}

// ErrInvalidFault is wrapped by New's errors about a FaultSpec.
var ErrInvalidFault = errors.New("invalid fault spec")

// Fault is the ground truth of the injected fault: internal/sim's, so that
// truth.json reads the same. Kind is KindMetricAnomaly, Variant the
// FaultSpec's Kind (cpu, memory or latency), Entity the faulty service
// ({"service": NAME}); Severity is 1 for a saturated CPU, a six-fold leak or
// a one-second delay, a few hundredths for a subtle variant.
type Fault = sim.Fault
