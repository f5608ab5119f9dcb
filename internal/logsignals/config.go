package logsignals

import "fmt"

// Config is the user's configuration of log-derived signals.
type Config struct {
	// MaxSeries bounds the series of vigil_log_events_total and
	// vigil_log_xid_total together (the templates have their own,
	// Templates.MaxSeries); events of new series past it are counted in
	// the overflow series.
	MaxSeries int `yaml:"max_series"`
	// Templates counts the records' templates.
	Templates TemplatesConfig `yaml:"templates"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxSeries: 10_000, Templates: TemplatesConfig{Enabled: true, MinSeverity: "info", MaxPerService: 200, MaxSeries: 10_000, Successions: true}}
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

// FieldError is a validation error of one field, named by its YAML key.
type FieldError struct {
	// Field is the YAML key, e.g. "max_series".
	Field string
	// Msg says what is wrong with the value.
	Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports the first invalid field as a *FieldError.
func (c Config) Validate() error {
	if c.MaxSeries < 1 {
		return &FieldError{Field: "max_series", Msg: fmt.Sprintf("must be at least 1, got %d", c.MaxSeries)}
	}
	return c.Templates.validate()
}
