package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Config is the content of vigil.yaml.
type Config struct {
	Storage StorageConfig `yaml:"storage"`
	Query   QueryConfig   `yaml:"query"`
	Web     WebConfig     `yaml:"web"`
	Self    SelfConfig    `yaml:"self_monitoring"`
}

// StorageConfig configures the embedded store.
type StorageConfig struct {
	// DataDir is the TSDB directory.
	DataDir string `yaml:"data_dir"`
	// Retention is how long samples are kept.
	Retention model.Duration `yaml:"retention"`
	// OutOfOrderWindow is how far behind the newest sample live ingestion
	// still accepts samples; older history is imported as blocks.
	OutOfOrderWindow model.Duration `yaml:"out_of_order_window"`
	// MaxExemplars sizes the exemplar buffer; 0 turns exemplars off.
	MaxExemplars int64 `yaml:"max_exemplars"`
}

// QueryConfig sets the limits of the PromQL engine.
type QueryConfig struct {
	MaxSamples     int            `yaml:"max_samples"`
	Timeout        model.Duration `yaml:"timeout"`
	MaxConcurrency int            `yaml:"max_concurrency"`
	LookbackDelta  model.Duration `yaml:"lookback_delta"`
}

// WebConfig configures the HTTP API.
type WebConfig struct {
	// Listen is the address of the HTTP API.
	Listen string `yaml:"listen"`
	// ReadTimeout bounds reading one request; queries have their own timeout.
	ReadTimeout model.Duration `yaml:"read_timeout"`
	// MaxConnections bounds simultaneous connections; 0 means no bound.
	MaxConnections int `yaml:"max_connections"`
}

// SelfConfig configures how Vigil stores its own metrics.
type SelfConfig struct {
	// Enabled stores Vigil's own metrics in its store.
	Enabled bool `yaml:"enabled"`
	// Interval is how often they are stored.
	Interval model.Duration `yaml:"interval"`
}

// Default returns the configuration used when no file is given.
func Default() Config {
	return Config{
		Storage: StorageConfig{
			DataDir:          "data",
			Retention:        model.Duration(15 * 24 * time.Hour),
			OutOfOrderWindow: model.Duration(24 * time.Hour),
			MaxExemplars:     100_000,
		},
		Query: QueryConfig{
			MaxSamples:     50_000_000,
			Timeout:        model.Duration(2 * time.Minute),
			MaxConcurrency: 20,
			LookbackDelta:  model.Duration(5 * time.Minute),
		},
		Web: WebConfig{
			Listen:         ":9700",
			ReadTimeout:    model.Duration(5 * time.Minute),
			MaxConnections: 512,
		},
		Self: SelfConfig{
			Enabled:  true,
			Interval: model.Duration(15 * time.Second),
		},
	}
}

// FieldError is a validation error of one field, named by its YAML path.
type FieldError struct {
	// Field is the dotted YAML path, e.g. "storage.retention".
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	s, q, w := c.Storage, c.Query, c.Web
	switch {
	case strings.TrimSpace(s.DataDir) == "":
		return fieldErr("storage.data_dir", "must not be empty")
	case s.Retention <= 0:
		return fieldErr("storage.retention", "must be positive, got %s", s.Retention)
	case s.OutOfOrderWindow < 0:
		return fieldErr("storage.out_of_order_window", "must not be negative, got %s", s.OutOfOrderWindow)
	case s.OutOfOrderWindow > s.Retention:
		return fieldErr("storage.out_of_order_window", "%s is longer than storage.retention (%s)", s.OutOfOrderWindow, s.Retention)
	case s.MaxExemplars < 0:
		return fieldErr("storage.max_exemplars", "must not be negative, got %d", s.MaxExemplars)
	case q.MaxSamples <= 0:
		return fieldErr("query.max_samples", "must be positive, got %d", q.MaxSamples)
	case q.Timeout <= 0:
		return fieldErr("query.timeout", "must be positive, got %s", q.Timeout)
	case q.MaxConcurrency <= 0:
		return fieldErr("query.max_concurrency", "must be positive, got %d", q.MaxConcurrency)
	case q.LookbackDelta <= 0:
		return fieldErr("query.lookback_delta", "must be positive, got %s", q.LookbackDelta)
	case w.ReadTimeout <= 0:
		return fieldErr("web.read_timeout", "must be positive, got %s", w.ReadTimeout)
	case w.MaxConnections < 0:
		return fieldErr("web.max_connections", "must not be negative, got %d", w.MaxConnections)
	case c.Self.Enabled && c.Self.Interval < model.Duration(time.Second):
		return fieldErr("self_monitoring.interval", "must be at least 1s, got %s", c.Self.Interval)
	}
	if _, _, err := net.SplitHostPort(w.Listen); err != nil {
		return fieldErr("web.listen", "%q is not host:port: %v", w.Listen, err)
	}
	return nil
}

// Load reads and validates the file at path; fields it does not set keep
// their defaults.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes and validates b; name prefixes errors.
func Parse(name string, b []byte) (*Config, error) {
	cfg := Default()
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if root.Kind != 0 {
		// Decode the node again with unknown fields rejected.
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	if err := cfg.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			if line := lineOf(&root, strings.Split(fe.Field, ".")); line > 0 {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &cfg, nil
}

// lineOf returns the line of the value at path in the document, or 0.
func lineOf(n *yaml.Node, path []string) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var found *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				found = n.Content[i+1]
				break
			}
		}
		if found == nil {
			return 0
		}
		n = found
	}
	return n.Line
}
