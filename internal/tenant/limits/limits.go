package limits

import (
	"fmt"
	"math"
)

// Limits are one tenant's limits. The zero value limits nothing: 0 in any
// field means unlimited. The YAML names follow Grafana Mimir's where Mimir
// has the same limit.
type Limits struct {
	// IngestionRate is the samples per second a tenant may store, on
	// average (a token bucket refilled at this rate).
	IngestionRate float64 `yaml:"ingestion_rate"`
	// IngestionBurstSize is the bucket's size: the most samples accepted at
	// once, and so the largest write request that can ever be accepted.
	// 0 with a rate set means one second of the rate.
	IngestionBurstSize int `yaml:"ingestion_burst_size"`
	// SpansRate is the spans and log records per second a tenant may send
	// over OTLP, on average.
	SpansRate float64 `yaml:"spans_rate"`
	// SpansBurstSize is the spans and log records accepted at once. 0 with
	// a rate set means one second of the rate.
	SpansBurstSize int `yaml:"spans_burst_size"`
	// MaxActiveSeries bounds the series a tenant has written to within the
	// idle timeout (Mimir's max_global_series_per_user, counted over
	// active series).
	MaxActiveSeries int `yaml:"max_active_series"`
	// MaxSeriesPerMetric bounds the active series of one metric name.
	MaxSeriesPerMetric int `yaml:"max_series_per_metric"`
	// MaxRequestBytes bounds the body of one write request, as received.
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// MaxQuerySamples bounds the samples one query may load into memory
	// at once (PromQL's max samples, per tenant).
	MaxQuerySamples int `yaml:"max_query_samples"`
	// MaxQueryConcurrency bounds the tenant's queries running at once;
	// more wait for a slot.
	MaxQueryConcurrency int `yaml:"max_query_concurrency"`
	// MaxPushGroups bounds the tenant's push groups (Pushgateway-style
	// job and grouping labels).
	MaxPushGroups int `yaml:"max_push_groups"`
}

// The limits' YAML names, which LimitError.Limit and the metrics' labels
// carry.
const (
	IngestionRate       = "ingestion_rate"
	IngestionBurstSize  = "ingestion_burst_size"
	SpansRate           = "spans_rate"
	SpansBurstSize      = "spans_burst_size"
	MaxActiveSeries     = "max_active_series"
	MaxSeriesPerMetric  = "max_series_per_metric"
	MaxRequestBytes     = "max_request_bytes"
	MaxQuerySamples     = "max_query_samples"
	MaxQueryConcurrency = "max_query_concurrency"
	MaxPushGroups       = "max_push_groups"
)

// fieldNames lists the YAML names in the struct's order, for messages.
func fieldNames() []string {
	return []string{
		IngestionRate, IngestionBurstSize, SpansRate, SpansBurstSize,
		MaxActiveSeries, MaxSeriesPerMetric, MaxRequestBytes,
		MaxQuerySamples, MaxQueryConcurrency, MaxPushGroups,
	}
}

// Validate reports the first field that is negative, or a rate that is not
// a finite number.
func (l Limits) Validate() error {
	for _, f := range fieldNames() {
		if err := l.validateField(f); err != nil {
			return err
		}
	}
	return nil
}

// validateField checks the field named f.
func (l Limits) validateField(f string) error {
	switch f {
	case IngestionRate:
		return checkRate(f, l.IngestionRate)
	case SpansRate:
		return checkRate(f, l.SpansRate)
	}
	if v := l.intField(f); v < 0 {
		return fmt.Errorf("%s: must be 0 (unlimited) or more, not %d", f, v)
	}
	return nil
}

func checkRate(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: must be a finite number, not %v", name, v)
	}
	if v < 0 {
		return fmt.Errorf("%s: must be 0 (unlimited) or more, not %v", name, v)
	}
	return nil
}

// intField returns the integer field named f (0 for the rates).
func (l Limits) intField(f string) int64 {
	switch f {
	case IngestionBurstSize:
		return int64(l.IngestionBurstSize)
	case SpansBurstSize:
		return int64(l.SpansBurstSize)
	case MaxActiveSeries:
		return int64(l.MaxActiveSeries)
	case MaxSeriesPerMetric:
		return int64(l.MaxSeriesPerMetric)
	case MaxRequestBytes:
		return l.MaxRequestBytes
	case MaxQuerySamples:
		return int64(l.MaxQuerySamples)
	case MaxQueryConcurrency:
		return int64(l.MaxQueryConcurrency)
	case MaxPushGroups:
		return int64(l.MaxPushGroups)
	}
	return 0
}

// burst returns the bucket size for rate r and configured burst b: b, or
// one second of r (at least 1) when b is 0.
func burst(r float64, b int) int {
	if b > 0 {
		return b
	}
	c := math.Ceil(r)
	if c >= math.MaxInt32 {
		return math.MaxInt32
	}
	return max(int(c), 1)
}
