package cost

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultKey is the gpu_hourly key of the price of GPU models the file
// does not name.
const DefaultKey = "default"

// Prices are hourly prices of one GPU, in one currency: per GPU model
// (dcgm-exporter's modelName), a default, and overrides for the nodes
// whose labels match (instance type, spot).
type Prices struct {
	// Currency is the ISO 4217 code the prices are in (USD, EUR).
	Currency string `yaml:"currency" json:"currency"`
	// GPUHourly maps a GPU model name, as dcgm-exporter's modelName says
	// it, or DefaultKey, to the price of one GPU for one hour.
	GPUHourly map[string]float64 `yaml:"gpu_hourly" json:"gpu_hourly,omitempty"`
	// NodeOverrides price the GPUs of matching nodes; the first match
	// wins over GPUHourly.
	NodeOverrides []NodeOverride `yaml:"node_overrides" json:"node_overrides,omitempty"`
}

// NodeOverride is the price of one GPU on the nodes whose labels match.
type NodeOverride struct {
	// Match maps a Kubernetes node label (node.kubernetes.io/instance-type,
	// as kube_node_labels exports it, or its label_ form), or "node" for
	// the node name, to the value it must have; every pair must match.
	Match map[string]string `yaml:"match" json:"match"`
	// GPUHourly is the price of one of their GPUs for one hour.
	GPUHourly float64 `yaml:"gpu_hourly" json:"gpu_hourly"`
}

// ErrNoPrices means there is no price for the GPUs: no prices file, no cost
// section and no OpenCost node_gpu_hourly_cost series.
var ErrNoPrices = errors.New("no GPU prices")

// LoadPrices reads and validates the prices file at path.
func LoadPrices(path string) (*Prices, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read prices: %w", err)
	}
	return ParsePrices(path, b)
}

// ParsePrices decodes and validates a prices file. Unknown fields, a
// second document, negative or non-finite prices and a missing currency
// are errors that name the field.
func ParsePrices(name string, b []byte) (*Prices, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var p Prices
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty prices file: it needs a currency and gpu_hourly", name)
		}
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, fmt.Errorf("%s: a second YAML document after \"---\": put all prices in one", name)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	p.Currency = strings.ToUpper(strings.TrimSpace(p.Currency))
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

// FieldError is an invalid field of the prices, named by its YAML path.
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports the first invalid field.
func (p *Prices) Validate() error {
	if len(p.Currency) != 3 || strings.IndexFunc(p.Currency, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
		return fieldErr("currency", "must be an ISO 4217 code such as USD or EUR (prices are never guessed to be in one), got %q", p.Currency)
	}
	if len(p.GPUHourly) == 0 && len(p.NodeOverrides) == 0 {
		return fieldErr("gpu_hourly", "names no price: give a price per GPU model (dcgm-exporter's modelName) or a default")
	}
	for _, k := range sortedKeys(p.GPUHourly) {
		if err := checkPrice(fmt.Sprintf("gpu_hourly[%q]", k), p.GPUHourly[k]); err != nil {
			return err
		}
		if strings.TrimSpace(k) == "" {
			return fieldErr("gpu_hourly", "a GPU model name is empty")
		}
	}
	for i, o := range p.NodeOverrides {
		field := fmt.Sprintf("node_overrides[%d]", i)
		if len(o.Match) == 0 {
			return fieldErr(field+".match", "must name at least one node label and its value")
		}
		for k := range o.Match {
			if strings.TrimSpace(k) == "" {
				return fieldErr(field+".match", "a label name is empty")
			}
		}
		if err := checkPrice(field+".gpu_hourly", o.GPUHourly); err != nil {
			return err
		}
	}
	return nil
}

func checkPrice(field string, v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fieldErr(field, "must be a finite number, got %g", v)
	case v < 0:
		return fieldErr(field, "must not be negative, got %g", v)
	}
	return nil
}

// Hourly returns the price of one GPU of model gpuModel for one hour on a
// node with the given labels (kube_node_labels' label_* names, and "node"),
// and where it comes from. ok is false when neither an override, the model
// nor a default prices it.
func (p *Prices) Hourly(gpuModel string, nodeLabels map[string]string) (price float64, from string, ok bool) {
	for i, o := range p.NodeOverrides {
		if o.matches(nodeLabels) {
			return o.GPUHourly, fmt.Sprintf("node_overrides[%d]", i), true
		}
	}
	if v, ok := p.GPUHourly[gpuModel]; ok && gpuModel != "" {
		return v, "gpu_hourly", true
	}
	if v, ok := p.GPUHourly[DefaultKey]; ok {
		return v, DefaultKey, true
	}
	return 0, "", false
}

// matches reports whether every pair of Match holds on the node labels.
func (o NodeOverride) matches(nodeLabels map[string]string) bool {
	for k, want := range o.Match {
		if nodeLabels[NodeLabelName(k)] != want {
			return false
		}
	}
	return true
}

// NodeLabelName is the key of a Kubernetes node label in the node labels
// Hourly reads: "node" and names already in kube-state-metrics' label_
// form stay, others get it ("node.kubernetes.io/instance-type" →
// "label_node_kubernetes_io_instance_type").
func NodeLabelName(k string) string {
	if k == "node" || k == "cluster" || strings.HasPrefix(k, "label_") {
		return k
	}
	var sb strings.Builder
	sb.WriteString("label_")
	for _, r := range k {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// Models returns the GPU model names the prices name, sorted, without the
// default.
func (p *Prices) Models() []string {
	out := sortedKeys(p.GPUHourly)
	return slices.DeleteFunc(out, func(k string) bool { return k == DefaultKey })
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
