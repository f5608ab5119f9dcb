package spanmetrics

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// DefaultBuckets are the duration histograms' upper bounds in seconds: the
// spanmetrics and servicegraph connectors' defaults, extended with 30, 60
// and 120 s for model inference.
var DefaultBuckets = []float64{
	0.002, 0.004, 0.006, 0.008, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.4, 2, 5, 10, 15,
	30, 60, 120,
}

// Config is the user's configuration of span metrics and the service graph.
type Config struct {
	// TenantAttribute is the span or resource attribute whose value is the
	// tenant label; empty leaves the label out.
	TenantAttribute string `yaml:"tenant_attribute"`
	// MaxSeries bounds the span-metric series (a calls counter and its
	// duration histogram count as one); spans of new series past it go to
	// the overflow series.
	MaxSeries int `yaml:"max_series"`
	// MaxEdges bounds the service-graph series (one per client, server and
	// connection type); requests of new edges past it go to the overflow
	// edge.
	MaxEdges int `yaml:"max_edges"`
	// MaxPendingEdges bounds the client and server spans waiting for their
	// other half; spans past it are dropped from the graph (and counted).
	MaxPendingEdges int `yaml:"max_pending_edges"`
	// EdgeWait is how long a client or server span waits for its other
	// half before it expires (becoming a virtual-node edge, or dropped).
	EdgeWait model.Duration `yaml:"edge_wait"`
	// FlushInterval is how often the running totals are written; 0 writes
	// them after every batch of spans.
	FlushInterval model.Duration `yaml:"flush_interval"`
	// Buckets are the duration histograms' upper bounds in seconds,
	// increasing (+Inf is implied).
	Buckets []float64 `yaml:"buckets"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		TenantAttribute: "tenant.id",
		MaxSeries:       10_000,
		MaxEdges:        2_000,
		MaxPendingEdges: 100_000,
		EdgeWait:        model.Duration(10 * time.Second),
		FlushInterval:   model.Duration(15 * time.Second),
		Buckets:         append([]float64(nil), DefaultBuckets...),
	}
}

// UnmarshalYAML copies the defaults in, decodes the fields the document
// sets over them, then validates.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig()
	type plain Config
	if err := unmarshal((*plain)(c)); err != nil {
		return err
	}
	return c.Validate()
}

// Validate reports the first invalid field, named by its YAML key.
func (c Config) Validate() error {
	switch {
	case c.TenantAttribute != strings.TrimSpace(c.TenantAttribute):
		return fmt.Errorf("spanmetrics: tenant_attribute %q has surrounding spaces", c.TenantAttribute)
	case c.MaxSeries < 1:
		return fmt.Errorf("spanmetrics: max_series must be at least 1, got %d", c.MaxSeries)
	case c.MaxEdges < 1:
		return fmt.Errorf("spanmetrics: max_edges must be at least 1, got %d", c.MaxEdges)
	case c.MaxPendingEdges < 0:
		return fmt.Errorf("spanmetrics: max_pending_edges must not be negative, got %d", c.MaxPendingEdges)
	case c.EdgeWait < 0:
		return fmt.Errorf("spanmetrics: edge_wait must not be negative, got %s", c.EdgeWait)
	case c.FlushInterval < 0:
		return fmt.Errorf("spanmetrics: flush_interval must not be negative, got %s", c.FlushInterval)
	case len(c.Buckets) == 0:
		return fmt.Errorf("spanmetrics: buckets must not be empty")
	}
	for i, b := range c.Buckets {
		switch {
		case math.IsNaN(b) || math.IsInf(b, 0) || b <= 0:
			return fmt.Errorf("spanmetrics: buckets[%d] must be a positive finite number of seconds, got %v", i, b)
		case i > 0 && b <= c.Buckets[i-1]:
			return fmt.Errorf("spanmetrics: buckets must increase, but buckets[%d]=%v follows %v", i, b, c.Buckets[i-1])
		}
	}
	return nil
}
