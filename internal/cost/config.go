package cost

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the cost section of vigil.yaml: the prices inline (the prices
// file's fields), or the path of a prices file. A currency with no price
// reads OpenCost's node_gpu_hourly_cost in that currency. Empty: `vigil
// serve` computes no cost.
type Config struct {
	// PricesFile is a prices file (see Prices); it excludes inline prices.
	PricesFile string `yaml:"prices_file"`
	// Prices are inline prices.
	Prices `yaml:",inline"`
	// Window is the span each evaluation cycle's hourly cost is averaged
	// over.
	Window time.Duration `yaml:"window"`
}

// DefaultWindow is Config.Window's default: ten dcgm-exporter samples.
const DefaultWindow = 5 * time.Minute

// DefaultConfig is the section's defaults: no prices, no cost.
func DefaultConfig() Config { return Config{Window: DefaultWindow} }

// Enabled reports whether the section asks for cost.
func (c Config) Enabled() bool {
	return c.PricesFile != "" || c.Currency != "" || len(c.GPUHourly) > 0 || len(c.NodeOverrides) > 0
}

// OpenCost reports whether the prices come from OpenCost's
// node_gpu_hourly_cost: a currency and no price.
func (c Config) OpenCost() bool {
	return c.PricesFile == "" && c.Currency != "" && len(c.GPUHourly) == 0 && len(c.NodeOverrides) == 0
}

// Validate reports the first invalid field, named by its path in the
// section.
func (c Config) Validate() error {
	switch {
	case c.Window <= 0:
		return fieldErr("window", "must be positive, got %s", c.Window)
	case !c.Enabled():
		return nil
	case c.PricesFile != "" && (c.Currency != "" || len(c.GPUHourly) > 0 || len(c.NodeOverrides) > 0):
		return fieldErr("prices_file", "excludes inline prices (currency, gpu_hourly, node_overrides): give one or the other")
	case c.PricesFile != "":
		return nil
	case c.OpenCost():
		p := Prices{Currency: c.Currency, GPUHourly: map[string]float64{DefaultKey: 0}}
		return p.Validate()
	}
	p := c.Prices
	return p.Validate()
}

// Load returns the prices the section names: the file's, or the inline
// ones; nil with OpenCost (a currency and no price).
func (c Config) Load() (*Prices, error) {
	switch {
	case c.PricesFile != "":
		return LoadPrices(c.PricesFile)
	case c.OpenCost():
		return nil, nil
	}
	p := c.Prices
	p.Currency = strings.ToUpper(p.Currency)
	return &p, p.Validate()
}

// configFields are the section's YAML field names.
var configFields = []string{"prices_file", "currency", "gpu_hourly", "node_overrides", "window"}

// UnmarshalYAML decodes the section, refusing fields it does not have.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; !slices.Contains(configFields, k) {
				return fmt.Errorf("unknown field %q at line %d (cost has %s)", k, n.Content[i].Line, strings.Join(configFields, ", "))
			}
		}
	}
	type plain Config
	p := plain(*c)
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = Config(p)
	c.Currency = strings.ToUpper(strings.TrimSpace(c.Currency))
	return nil
}
