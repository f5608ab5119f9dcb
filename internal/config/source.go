package config

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// SourceConfig is the backend an attached `vigil serve` reads: the
// Prometheus, Thanos, Mimir or VictoriaMetrics a team already runs. Its
// evaluation cycles read it merged with Vigil's own store. Empty URL: Vigil
// reads only its own store.
type SourceConfig struct {
	// URL is the API root, the part before /api/v1 (http://prometheus:9090,
	// http://mimir/prometheus).
	URL string `yaml:"url"`
	// Timeout bounds one request to it.
	Timeout model.Duration `yaml:"timeout"`
	// Selector is a series selector added to every read ({cluster="a"}),
	// so that one Vigil watches one cluster or namespace of a shared
	// backend.
	Selector string `yaml:"selector"`
	// HTTPClient holds the headers (http_headers, e.g. X-Scope-OrgID),
	// basic_auth, authorization, oauth2, tls_config and proxy settings, in
	// Prometheus's own format and through its own client.
	HTTPClient commoncfg.HTTPClientConfig `yaml:",inline"`
}

// DefaultSource is the source section's defaults: no backend.
func DefaultSource() SourceConfig {
	return SourceConfig{Timeout: model.Duration(time.Minute), HTTPClient: commoncfg.DefaultHTTPClientConfig}
}

// Matchers returns the parsed Selector (nil when empty).
func (s SourceConfig) Matchers() ([]*labels.Matcher, error) {
	if strings.TrimSpace(s.Selector) == "" {
		return nil, nil
	}
	return parser.NewParser(parser.Options{}).ParseMetricSelector(s.Selector)
}

// Validate reports the first invalid field, named by its YAML path.
func (s SourceConfig) Validate() error {
	if s.URL == "" {
		return nil
	}
	u, err := url.Parse(s.URL)
	switch {
	case err != nil:
		return fieldErr("source.url", "%q is not a URL: %v", s.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fieldErr("source.url", "%q: the scheme must be http or https", u.Redacted())
	case u.Host == "":
		return fieldErr("source.url", "%q has no host", u.Redacted())
	case s.Timeout <= 0:
		return fieldErr("source.timeout", "must be positive, got %s", s.Timeout)
	}
	if _, err := s.Matchers(); err != nil {
		return fieldErr("source.selector", "%q is not a series selector: %v", s.Selector, err)
	}
	if err := s.HTTPClient.Validate(); err != nil {
		return fieldErr("source", "%v", err)
	}
	return nil
}

// UnmarshalYAML reads the section with yaml's own decoder, since the HTTP
// client settings are Prometheus's types, refusing fields it does not have.
// It takes DESIGN.md's form too, the backend under its kind:
// source: {prometheus: {url, headers, http_config, timeout, selector}}.
func (s *SourceConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode && len(n.Content) >= 2 && n.Content[0].Value == "prometheus" {
		if len(n.Content) > 2 {
			k := n.Content[2]
			return &lineError{line: k.Line, err: fieldErr("source."+k.Value, "source.prometheus takes the backend's settings: nothing may stand next to it")}
		}
		return s.unmarshalPrometheus(n.Content[1])
	}
	if n.Kind == yaml.MappingNode {
		names := sourceFields()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if !slices.Contains(names, k.Value) {
				return &lineError{line: k.Line, err: fieldErr("source."+k.Value, "unknown field (source has %s)", strings.Join(names, ", "))}
			}
		}
	}
	type plain SourceConfig
	p := plain(*s)
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = SourceConfig(p)
	return nil
}

// prometheusSource is DESIGN.md's form of the section: source.prometheus.
type prometheusSource struct {
	URL      string            `yaml:"url"`
	Headers  map[string]string `yaml:"headers"`
	Timeout  model.Duration    `yaml:"timeout"`
	Selector string            `yaml:"selector"`
	// HTTPConfig is Prometheus's HTTP client settings (basic_auth,
	// authorization, tls_config, http_headers, ...).
	HTTPConfig commoncfg.HTTPClientConfig `yaml:"http_config"`
}

// unmarshalPrometheus reads source.prometheus into s: headers join the
// HTTP client's http_headers (a header named in both is an error).
func (s *SourceConfig) unmarshalPrometheus(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		names := []string{"url", "headers", "timeout", "selector", "http_config"}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(names, k.Value) {
				return &lineError{line: k.Line, err: fieldErr("source.prometheus."+k.Value, "unknown field (source.prometheus has %s)", strings.Join(names, ", "))}
			}
		}
	}
	p := prometheusSource{Timeout: s.Timeout, HTTPConfig: s.HTTPClient}
	if err := n.Decode(&p); err != nil {
		return err
	}
	if len(p.Headers) > 0 {
		if p.HTTPConfig.HTTPHeaders == nil {
			p.HTTPConfig.HTTPHeaders = &commoncfg.Headers{Headers: map[string]commoncfg.Header{}}
		}
		for name, v := range p.Headers {
			if _, dup := p.HTTPConfig.HTTPHeaders.Headers[name]; dup {
				return &lineError{line: n.Line, err: fieldErr("source.prometheus.headers", "%s is set in http_config.http_headers too", name)}
			}
			p.HTTPConfig.HTTPHeaders.Headers[name] = commoncfg.Header{Values: []string{v}}
		}
	}
	s.URL, s.Timeout, s.Selector, s.HTTPClient = p.URL, p.Timeout, p.Selector, p.HTTPConfig
	return nil
}

// sourceFields lists the YAML names of SourceConfig, the inlined HTTP
// client's included.
func sourceFields() []string {
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case strings.Contains(opts, "inline"):
				walk(f.Type)
			case name != "" && name != "-":
				out = append(out, name)
			}
		}
	}
	walk(reflect.TypeOf(SourceConfig{}))
	return out
}
