package remotewrite

import "fmt"

// Limits bound what one client can make the server do. Zero means no limit,
// except where Validate says otherwise.
type Limits struct {
	// MaxActiveSeries bounds the series in the head; samples of new series
	// beyond it are rejected, those of existing series still stored.
	MaxActiveSeries uint64 `yaml:"max_active_series"`
	// MaxSamplesPerRequest bounds samples, histograms and exemplars in one request.
	MaxSamplesPerRequest int `yaml:"max_samples_per_request"`
	// MaxBodyBytes bounds the compressed request body.
	MaxBodyBytes int64 `yaml:"max_request_body_bytes"`
	// MaxDecodedBytes bounds the body after snappy decompression.
	MaxDecodedBytes int64 `yaml:"max_decoded_body_bytes"`
	// MaxLabelsPerSeries bounds the labels of one series, the name included.
	MaxLabelsPerSeries int `yaml:"max_labels_per_series"`
	// MaxLabelNameLength and MaxLabelValueLength bound label sizes in bytes.
	MaxLabelNameLength  int `yaml:"max_label_name_length"`
	MaxLabelValueLength int `yaml:"max_label_value_length"`
	// MaxInflightRequests bounds requests being stored at once; more get 503.
	MaxInflightRequests int `yaml:"max_inflight_requests"`
}

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxActiveSeries:      2_000_000,
		MaxSamplesPerRequest: 500_000,
		MaxBodyBytes:         16 << 20,
		MaxDecodedBytes:      64 << 20,
		MaxLabelsPerSeries:   256,
		MaxLabelNameLength:   1024,
		MaxLabelValueLength:  16 * 1024,
		MaxInflightRequests:  64,
	}
}

// LimitError names the invalid limit by its YAML field.
type LimitError struct {
	Field string
	Msg   string
}

func (e *LimitError) Error() string { return e.Field + " " + e.Msg }

// Validate reports the first invalid limit as a *LimitError.
func (l Limits) Validate() error {
	bad := func(field, format string, v any) error {
		return &LimitError{Field: field, Msg: fmt.Sprintf(format, v)}
	}
	switch {
	case l.MaxSamplesPerRequest < 0:
		return bad("max_samples_per_request", "must not be negative, got %d", l.MaxSamplesPerRequest)
	case l.MaxBodyBytes <= 0:
		return bad("max_request_body_bytes", "must be positive, got %d", l.MaxBodyBytes)
	case l.MaxDecodedBytes <= 0:
		return bad("max_decoded_body_bytes", "must be positive, got %d", l.MaxDecodedBytes)
	case l.MaxLabelsPerSeries < 0:
		return bad("max_labels_per_series", "must not be negative, got %d", l.MaxLabelsPerSeries)
	case l.MaxLabelNameLength < 0:
		return bad("max_label_name_length", "must not be negative, got %d", l.MaxLabelNameLength)
	case l.MaxLabelValueLength < 0:
		return bad("max_label_value_length", "must not be negative, got %d", l.MaxLabelValueLength)
	case l.MaxInflightRequests <= 0:
		return bad("max_inflight_requests", "must be positive, got %d", l.MaxInflightRequests)
	}
	return nil
}
