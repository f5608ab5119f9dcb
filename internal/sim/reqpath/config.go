package reqpath

import (
	"errors"
	"fmt"
	"time"
)

// Config describes one simulated request path. The zero value of every field
// but Start takes a default (see [Config.WithDefaults]); Start is required
// because the simulator never reads the clock.
type Config struct {
	// Seed makes a run reproducible: the same Config gives the same bytes.
	Seed uint64
	// Start is the first simulated instant (required).
	Start time.Time
	// Duration is how long requests arrive (default 1h). Requests that
	// arrive before Start+Duration are written in full, even if they end
	// after it.
	Duration time.Duration
	// Interval is the span of one batch, i.e. one line of each file
	// (default 1m). A request belongs to the batch in which its root span
	// ends, as a collector's batch processor would see it.
	Interval time.Duration
	// RequestsPerMinute is the mean healthy arrival rate of user requests
	// (default 120). Arrivals are a Poisson process; the
	// inference_capacity_saturated fault adds load on top of it.
	RequestsPerMinute float64
	// Traffic, when set, shapes the arrival rate: at t requests arrive at
	// RequestsPerMinute × Traffic(t), evaluated once a simulated second
	// (values below 0 count as 0). It must be a pure function of t, or the
	// output is not reproducible. Nil is a flat rate.
	Traffic func(t time.Time) float64
	// SampleRatio is the share of requests written, as a head sampler keeps
	// them (default 1: all). A request is kept or dropped whole, with its
	// logs, by a draw of its own that leaves the kept requests unchanged
	// (but for vLLM's cumulative preemption count, which counts kept
	// requests only).
	SampleRatio float64
	// Environment is deployment.environment (default "production").
	Environment string
	// Tenants are the tenant.id values (default tenant-a … tenant-e). Traffic
	// is skewed: the first tenant sends the most.
	Tenants []string
	// Gateway is the API gateway (default api-gateway in namespace gateway).
	Gateway Deployment
	// App is the AI application (default ai-app in namespace ai-apps).
	App Deployment
	// VectorDB is the vector database (default vector-db in namespace rag).
	VectorDB Deployment
	// ModelServers are the vLLM deployments, one model each (default: an 8B
	// and a 70B Llama 3.1 in namespace inference).
	ModelServers []ModelServer
	// Tool is the external HTTP API the application calls as a tool
	// (default web-search-api at api.search.example.com).
	Tool External
	// Faults are injected into the path from their onsets.
	Faults []Fault
	// Spans is how the instrumentation records a call between services
	// (default SpansPaired): real instrumentations differ, and the
	// service graph must be found either way.
	Spans string
}

// How calls are recorded ([Config.Spans]).
const (
	// SpansPaired records every call as a CLIENT span of the caller and a
	// SERVER span of the callee under it (the default).
	SpansPaired = "paired"
	// SpansServerOnly records a call between instrumented services as the
	// callee's SERVER span alone, under the caller's span: no CLIENT span
	// (as some HTTP server instrumentations without client
	// instrumentation do). Calls to what has no spans of its own (the
	// tool) keep their CLIENT span.
	SpansServerOnly = "server-only"
	// SpansNoKind records every span without a kind (SPAN_KIND_UNSPECIFIED),
	// as some tracers and converted traces (Train Ticket's) do.
	SpansNoKind = "no-kind"
)

// Deployment is one in-cluster service of the path: its service name (also
// the Kubernetes workload name), namespace, version and pods.
type Deployment struct {
	// Name is service.name and the workload's name.
	Name string
	// Namespace is k8s.namespace.name and service.namespace.
	Namespace string
	// Version is service.version (a bad_rollout replaces it).
	Version string
	// Pods are the replicas requests are spread over.
	Pods []Pod
}

// Pod is one replica of a [Deployment] and the node it runs on.
type Pod struct {
	// Name is k8s.pod.name.
	Name string
	// Node is k8s.node.name.
	Node string
}

// ModelServer is a vLLM deployment serving one model.
type ModelServer struct {
	Deployment
	// Model is gen_ai.request.model, e.g. meta-llama/Llama-3.1-8B-Instruct.
	Model string
	// TimePerOutputToken is the healthy decode time per token (default
	// 25ms).
	TimePerOutputToken time.Duration
	// Weight is this server's share of the traffic relative to the others
	// (default 1).
	Weight float64
}

// External is a dependency outside the cluster: it has no spans or logs of
// its own, only the application's CLIENT spans to it.
type External struct {
	// Name is peer.service, the service graph's name for it.
	Name string
	// Host is server.address.
	Host string
}

// Default values of [Config].
const (
	DefaultDuration          = time.Hour
	DefaultInterval          = time.Minute
	DefaultRequestsPerMinute = 120
	DefaultEnvironment       = "production"
	defaultTPOT              = 25 * time.Millisecond
)

// DefaultTenants are the tenants of a Config that names none.
func DefaultTenants() []string {
	return []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d", "tenant-e"}
}

// WithDefaults returns a copy of c with every zero field set to its default
// and every fault's Entity and Severity completed (see [Fault]). Callers that
// write ground truth should record the faults of the returned Config.
func (c Config) WithDefaults() Config {
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.RequestsPerMinute == 0 {
		c.RequestsPerMinute = DefaultRequestsPerMinute
	}
	if c.SampleRatio == 0 {
		c.SampleRatio = 1
	}
	if c.Environment == "" {
		c.Environment = DefaultEnvironment
	}
	if c.Spans == "" {
		c.Spans = SpansPaired
	}
	if len(c.Tenants) == 0 {
		c.Tenants = DefaultTenants()
	}
	if c.Gateway.Name == "" {
		c.Gateway = Deployment{Name: "api-gateway", Namespace: "gateway", Version: "1.31.2", Pods: []Pod{
			{Name: "api-gateway-6f9c7d8b4-k2x9p", Node: "cpu-node-01"},
			{Name: "api-gateway-6f9c7d8b4-q7w4m", Node: "cpu-node-02"},
		}}
	}
	if c.App.Name == "" {
		c.App = Deployment{Name: "ai-app", Namespace: "ai-apps", Version: "2.4.1", Pods: []Pod{
			{Name: "ai-app-5d8b9c7f6-h4j2k", Node: "cpu-node-01"},
			{Name: "ai-app-5d8b9c7f6-m9n3b", Node: "cpu-node-02"},
			{Name: "ai-app-5d8b9c7f6-t6v8c", Node: "cpu-node-03"},
		}}
	}
	if c.VectorDB.Name == "" {
		c.VectorDB = Deployment{Name: "vector-db", Namespace: "rag", Version: "1.12.4", Pods: []Pod{
			{Name: "vector-db-0", Node: "cpu-node-02"},
			{Name: "vector-db-1", Node: "cpu-node-03"},
		}}
	}
	if len(c.ModelServers) == 0 {
		c.ModelServers = []ModelServer{
			{
				Deployment: Deployment{Name: "vllm-llama-3-1-8b", Namespace: "inference", Version: "v0.11.0", Pods: []Pod{
					{Name: "vllm-llama-3-1-8b-7c9d6f5b8-2xkqv", Node: "gpu-node-01"},
					{Name: "vllm-llama-3-1-8b-7c9d6f5b8-8mzrt", Node: "gpu-node-02"},
				}},
				Model: "meta-llama/Llama-3.1-8B-Instruct", TimePerOutputToken: 18 * time.Millisecond, Weight: 3,
			},
			{
				Deployment: Deployment{Name: "vllm-llama-3-1-70b", Namespace: "inference", Version: "v0.11.0", Pods: []Pod{
					{Name: "vllm-llama-3-1-70b-64b8f9d7c-w5lp2", Node: "gpu-node-03"},
				}},
				Model: "meta-llama/Llama-3.1-70B-Instruct", TimePerOutputToken: 38 * time.Millisecond, Weight: 1,
			},
		}
	} else {
		c.ModelServers = append([]ModelServer(nil), c.ModelServers...)
	}
	for i := range c.ModelServers {
		m := &c.ModelServers[i]
		if m.TimePerOutputToken == 0 {
			m.TimePerOutputToken = defaultTPOT
		}
		if m.Weight == 0 {
			m.Weight = 1
		}
	}
	if c.Tool.Name == "" {
		c.Tool = External{Name: "web-search-api", Host: "api.search.example.com"}
	}
	if len(c.Faults) > 0 {
		faults := make([]Fault, len(c.Faults))
		for i, f := range c.Faults {
			faults[i] = c.completeFault(f)
		}
		c.Faults = faults
	}
	return c
}

// Limits that keep a Config from asking for more than a test machine holds.
const (
	maxDuration          = 31 * 24 * time.Hour
	maxRequestsPerMinute = 100000
)

// ErrInvalidConfig is wrapped by every error of [Config.Validate].
var ErrInvalidConfig = errors.New("invalid request-path config")

// Validate reports the first problem of a Config whose defaults are already
// in place (see [Config.WithDefaults]).
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Start.IsZero():
		return bad("start is required")
	case c.Duration <= 0 || c.Duration > maxDuration:
		return bad("duration %s is outside (0, %s]", c.Duration, maxDuration)
	case c.Interval <= 0 || c.Interval > c.Duration:
		return bad("interval %s is outside (0, duration]", c.Interval)
	case !(c.RequestsPerMinute > 0 && c.RequestsPerMinute <= maxRequestsPerMinute):
		return bad("requests per minute %g is outside (0, %d]", c.RequestsPerMinute, maxRequestsPerMinute)
	case !(c.SampleRatio > 0 && c.SampleRatio <= 1):
		return bad("sample ratio %g is outside (0, 1]", c.SampleRatio)
	case c.Tool.Name == "" || c.Tool.Host == "":
		return bad("tool needs a name and a host")
	case len(c.ModelServers) == 0:
		return bad("no model server")
	case c.Spans != SpansPaired && c.Spans != SpansServerOnly && c.Spans != SpansNoKind:
		return bad("spans %q is none of %s, %s, %s", c.Spans, SpansPaired, SpansServerOnly, SpansNoKind)
	}
	seen := map[string]bool{}
	for _, t := range c.Tenants {
		if t == "" || seen[t] {
			return bad("tenant %q is empty or repeated", t)
		}
		seen[t] = true
	}
	names := map[string]bool{c.Tool.Name: true}
	check := func(role string, d Deployment) error {
		if d.Name == "" || d.Namespace == "" || d.Version == "" {
			return bad("%s %q needs a name, a namespace and a version", role, d.Name)
		}
		if names[d.Name] {
			return bad("service name %q is used twice", d.Name)
		}
		names[d.Name] = true
		if len(d.Pods) == 0 {
			return bad("%s %q has no pods", role, d.Name)
		}
		for _, p := range d.Pods {
			if p.Name == "" || p.Node == "" {
				return bad("%s %q has a pod without a name or a node", role, d.Name)
			}
		}
		return nil
	}
	for _, d := range []struct {
		role string
		d    Deployment
	}{{"gateway", c.Gateway}, {"app", c.App}, {"vector db", c.VectorDB}} {
		if err := check(d.role, d.d); err != nil {
			return err
		}
	}
	for _, m := range c.ModelServers {
		if err := check("model server", m.Deployment); err != nil {
			return err
		}
		if m.Model == "" || m.TimePerOutputToken <= 0 || m.TimePerOutputToken > time.Second || !(m.Weight > 0) {
			return bad("model server %q needs a model, a time per output token in (0, 1s] and a positive weight", m.Name)
		}
	}
	for i, f := range c.Faults {
		if err := c.validateFault(f); err != nil {
			return bad("fault %d (%s): %v", i, f.Kind, err)
		}
	}
	return nil
}
