package alert

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-obs/vigil/internal/yamlstrict"
)

// Config is the alerting section of vigil.yaml: where alerts go and how
// they are sent.
type Config struct {
	// Alertmanagers are the root URLs of the Alertmanagers that get every
	// alert over the API v2, e.g. http://127.0.0.1:9093 or
	// https://user:pass@am.example.com/prefix. A user and password become
	// HTTP basic auth and are never logged.
	Alertmanagers []string `yaml:"alertmanagers"`
	// Webhooks are URLs that get Alertmanager's webhook payload (version
	// "4"), one POST per alert.
	Webhooks []string `yaml:"webhooks"`
	// ResendInterval is how often the owner of the alerts re-sends the
	// firing ones, as Prometheus's --rules.alert.resend-delay; a firing
	// alert's endsAt is 4 intervals ahead of its send time.
	ResendInterval model.Duration `yaml:"resend_interval"`
	// Timeout bounds one HTTP request to a receiver.
	Timeout model.Duration `yaml:"timeout"`
	// QueueCapacity bounds the alerts queued for each receiver; when it is
	// full the oldest are dropped.
	QueueCapacity int `yaml:"queue_capacity"`
	// ExternalURL is the URL people reach Vigil at, the base of the
	// incident links in alerts (empty: no link).
	ExternalURL string `yaml:"external_url"`
	// ExternalLabels are added to every alert that lacks the name, as
	// Prometheus adds its global.external_labels: the shard's or the
	// cluster's identity, so that two Vigils watching two clusters of one
	// shared Alertmanager page apart, and the two of an HA pair (the same
	// labels) page once.
	ExternalLabels map[string]string `yaml:"external_labels"`
	// HTTPConfig is Prometheus's HTTP client settings (basic_auth,
	// authorization with credentials_file, tls_config, http_headers,
	// proxy_url) for every Alertmanager and webhook, as an Alertmanager
	// entry of Prometheus's alerting section takes them. A user and
	// password in a URL are that receiver's basic auth instead.
	HTTPConfig HTTPClient `yaml:"http_config"`
}

// HTTPClient is Prometheus's HTTP client configuration, read strictly
// from vigil.yaml (an unknown key is an error) with Prometheus's
// defaults.
type HTTPClient struct {
	commoncfg.HTTPClientConfig `yaml:",inline"`
}

// UnmarshalYAML reads Prometheus's HTTP client settings over its
// defaults, refusing keys it does not have.
func (h *HTTPClient) UnmarshalYAML(n *yaml.Node) error {
	h.HTTPClientConfig = commoncfg.DefaultHTTPClientConfig
	return yamlstrict.Decode(n, &h.HTTPClientConfig)
}

// authenticates reports whether the settings send credentials of their
// own.
func (h HTTPClient) authenticates() bool {
	c := h.HTTPClientConfig
	return c.BasicAuth != nil || c.Authorization != nil || c.OAuth2 != nil || c.BearerToken != "" || c.BearerTokenFile != ""
}

// Default returns the configuration of an empty alerting section:
// no receivers, Prometheus's resend delay, timeout and queue capacity.
func Default() Config {
	return Config{
		ResendInterval: model.Duration(time.Minute),
		Timeout:        model.Duration(10 * time.Second),
		QueueCapacity:  10_000,
		HTTPConfig:     HTTPClient{commoncfg.DefaultHTTPClientConfig},
	}
}

// FieldError is a validation error of one field, named by its YAML key.
type FieldError struct {
	// Field is the YAML key, e.g. "alertmanagers".
	Field string
	// Msg says what is wrong with the value.
	Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports the first invalid field as a *FieldError.
func (c *Config) Validate() error {
	switch {
	case c.ResendInterval <= 0:
		return fieldErr("resend_interval", "must be positive, got %s", c.ResendInterval)
	case c.Timeout <= 0:
		return fieldErr("timeout", "must be positive, got %s", c.Timeout)
	case c.QueueCapacity <= 0:
		return fieldErr("queue_capacity", "must be positive, got %d", c.QueueCapacity)
	}
	for _, k := range slices.Sorted(maps.Keys(c.ExternalLabels)) {
		if !model.UTF8Validation.IsValidLabelName(k) || strings.HasPrefix(k, "__") {
			return fieldErr("external_labels", "%q is not a label name", k)
		}
		if c.ExternalLabels[k] == "" {
			return fieldErr("external_labels", "%s has an empty value: leave it out", k)
		}
	}
	if err := validateURLs("alertmanagers", c.Alertmanagers, true); err != nil {
		return err
	}
	if err := validateURLs("webhooks", c.Webhooks, false); err != nil {
		return err
	}
	if err := c.HTTPConfig.Validate(); err != nil {
		return fieldErr("http_config", "%v", err)
	}
	if c.HTTPConfig.authenticates() {
		for i, s := range append(slices.Clone(c.Alertmanagers), c.Webhooks...) {
			if u, err := url.Parse(s); err == nil && u.User != nil {
				return fieldErr("http_config", "entry %d %q has a user in its URL and http_config sends credentials too: keep one", i+1, redactString(s))
			}
		}
	}
	if c.ExternalURL != "" {
		if _, err := parseHTTPURL(c.ExternalURL, true); err != nil {
			return fieldErr("external_url", "%q: %v", redactString(c.ExternalURL), err)
		}
	}
	return nil
}

// validateURLs checks a list of receiver URLs: each absolute http(s) and
// none twice. Alertmanager URLs are roots, so they take no query.
func validateURLs(field string, urls []string, root bool) error {
	seen := map[string]int{}
	for i, s := range urls {
		if _, err := parseHTTPURL(s, root); err != nil {
			return fieldErr(field, "entry %d %q: %v", i+1, redactString(s), err)
		}
		if first, dup := seen[s]; dup {
			return fieldErr(field, "entry %d %q is entry %d again", i+1, redactString(s), first)
		}
		seen[s] = i + 1
	}
	return nil
}

// parseHTTPURL parses an absolute http or https URL with a host; a root
// URL (an Alertmanager's or Vigil's own) has no query or fragment.
func parseHTTPURL(s string, root bool) (*url.URL, error) {
	if s != "" && !strings.Contains(s, "://") {
		return nil, errors.New("no scheme: give http://host:port or https://host:port")
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, ue.Err
		}
		return nil, err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("the scheme must be http or https, not %q", u.Scheme)
	case u.Host == "":
		return nil, errors.New("no host")
	case u.Fragment != "":
		return nil, errors.New("a fragment (#...) has no meaning here")
	case root && u.RawQuery != "":
		return nil, errors.New("a query (?...) has no meaning here: give the root URL")
	}
	return u, nil
}

// redact returns u without its user information and query, which may
// carry credentials: the form receiver URLs are logged and labelled in.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	return c.String()
}

// redactString is redact for a string that may not parse; one that does
// not parse is shown only when it has no "@", the mark of a credential.
func redactString(s string) string {
	u, err := url.Parse(s)
	switch {
	case err == nil:
		return redact(u)
	case strings.Contains(s, "@"):
		return "<unparsable URL>"
	}
	return s
}

// IncidentURL returns the link to the incident id under ExternalURL, or
// "" when ExternalURL is empty. The path is the incident API of the
// running Vigil.
func (c Config) IncidentURL(id string) string {
	if c.ExternalURL == "" || id == "" {
		return ""
	}
	u, err := url.Parse(c.ExternalURL)
	if err != nil {
		return ""
	}
	return u.JoinPath("api", "v1", "incidents", url.PathEscape(id)).String()
}
