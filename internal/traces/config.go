package traces

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Config is the user's configuration of the trace and log store (the
// "traces" section of vigil.yaml).
type Config struct {
	// Dir is the store's directory; the caller sets it, by default to
	// <data_dir>/traces. Open fails without one.
	Dir string `yaml:"dir"`
	// Retention is how long spans and logs are kept, counted from their own
	// start time (spans) or time (logs). Data is deleted an hour at a time,
	// so it may stay up to an hour longer.
	Retention model.Duration `yaml:"retention"`
	// MaxBytes bounds the store's tables on disk; when they grow past it the
	// oldest hours are deleted first, never the newest. 0 means no bound.
	MaxBytes int64 `yaml:"max_bytes"`
	// CacheBytes sizes the block cache; memtables take up to as much again.
	CacheBytes int64 `yaml:"cache_bytes"`
	// TenantAttribute is the span or resource attribute naming the tenant.
	TenantAttribute string `yaml:"tenant_attribute"`
	// CorrelationKeys are the attribute and body keys (matched without
	// regard to case) that carry a request or correlation id. An empty list
	// turns correlation off.
	CorrelationKeys []string `yaml:"correlation_keys"`
}

// DefaultCorrelationKeys are the keys that carry a request id by default.
var DefaultCorrelationKeys = []string{
	"request_id", "correlation_id", "x-request-id", "requestId", "http.request.header.x-request-id",
}

// DefaultConfig returns the defaults; Dir is left for the caller to set.
func DefaultConfig() Config {
	return Config{
		Retention:       model.Duration(7 * 24 * time.Hour),
		MaxBytes:        10 << 30,
		CacheBytes:      64 << 20,
		TenantAttribute: "tenant.id",
		CorrelationKeys: append([]string(nil), DefaultCorrelationKeys...),
	}
}

// minCacheBytes is the smallest block cache Validate accepts.
const minCacheBytes = 1 << 20

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

// Validate reports the first invalid field, named by its YAML key. An
// empty Dir is valid here: the caller fills it in before Open.
func (c Config) Validate() error {
	switch {
	case c.Retention <= 0:
		return fmt.Errorf("traces: retention must be positive, got %s", fmtDuration(c.Retention))
	case c.MaxBytes < 0:
		return fmt.Errorf("traces: max_bytes must not be negative (0 means no bound), got %d", c.MaxBytes)
	case c.CacheBytes < minCacheBytes:
		return fmt.Errorf("traces: cache_bytes must be at least %d (1 MiB), got %d", minCacheBytes, c.CacheBytes)
	case strings.TrimSpace(c.TenantAttribute) == "":
		return fmt.Errorf("traces: tenant_attribute must not be empty")
	}
	seen := make(map[string]bool, len(c.CorrelationKeys))
	for i, k := range c.CorrelationKeys {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("traces: correlation_keys[%d] is empty", i)
		}
		if seen[strings.ToLower(k)] {
			return fmt.Errorf("traces: correlation_keys[%d] %q repeats an earlier key (keys match without regard to case)", i, k)
		}
		seen[strings.ToLower(k)] = true
	}
	return nil
}

// fmtDuration prints d as Prometheus does, and negative durations with
// their sign.
func fmtDuration(d model.Duration) string {
	if d < 0 {
		return "-" + (-d).String()
	}
	return d.String()
}
