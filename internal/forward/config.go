package forward

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/vigil-obs/vigil/internal/yamlstrict"
)

// Protocols of Config.Protocol.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// Signals of Config.Signals.
const (
	SignalTraces = "traces"
	SignalLogs   = "logs"
)

// Compressions of Config.Compression.
const (
	CompressionGzip = "gzip"
	CompressionNone = "none"
)

// Defaults.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultQueueSize = 1000
)

// Config is the user's configuration of forwarding (a section of
// vigil.yaml). An empty Endpoint turns forwarding off; other zero values
// mean the defaults.
type Config struct {
	// Endpoint is the OTLP backend's base URL: http://tempo:4318 or
	// https://… for OTLP/HTTP (POST to <endpoint>/v1/traces and
	// /v1/logs), grpc://collector:4317 (plaintext) or grpcs://… (TLS) for
	// OTLP/gRPC. A user and password in it become HTTP basic auth and are
	// never logged.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http" or "grpc"; empty means the endpoint's scheme
	// decides. With "grpc", an http:// endpoint is plaintext gRPC and an
	// https:// one gRPC over TLS, as the OpenTelemetry exporters read it.
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export, each "Name: value" (e.g.
	// "Authorization: Bearer …", "X-Scope-OrgID: tenant-1"). Their values
	// are never logged.
	Headers []string `yaml:"headers"`
	// Timeout bounds one export attempt (default 10s).
	Timeout model.Duration `yaml:"timeout"`
	// QueueSize bounds the batches waiting to be sent (default 1000); when
	// it is full the oldest batch is dropped.
	QueueSize int `yaml:"queue_size"`
	// Signals are what is forwarded: "traces", "logs" (default both).
	Signals []string `yaml:"signals"`
	// Compression is "gzip" (the default) or "none".
	Compression string `yaml:"compression"`
	// TLS is Prometheus's tls_config for an https:// or grpcs:// endpoint:
	// ca_file, cert_file and key_file (mutual TLS), server_name,
	// insecure_skip_verify, min_version. Empty: the system's CAs.
	TLS TLSConfig `yaml:"tls_config"`
	// Authorization sends "<type> <credentials>" with every export (type
	// Bearer by default), the credentials read from credentials_file
	// before each export, so that a rotated token is taken — as
	// Prometheus's authorization does.
	Authorization Authorization `yaml:"authorization"`
}

// TLSConfig is Prometheus's TLS client configuration, read strictly.
type TLSConfig struct {
	commoncfg.TLSConfig `yaml:",inline"`
}

// UnmarshalYAML reads Prometheus's tls_config, refusing keys it does not
// have.
func (t *TLSConfig) UnmarshalYAML(n *yaml.Node) error {
	return yamlstrict.Decode(n, &t.TLSConfig)
}

// set reports whether any TLS setting is given.
func (t TLSConfig) set() bool { return t.TLSConfig != (commoncfg.TLSConfig{}) }

// Authorization is the credentials of every export, from a file.
type Authorization struct {
	// Type is the scheme; default Bearer.
	Type string `yaml:"type"`
	// CredentialsFile holds the credentials (a token), read before each
	// export; surrounding blanks are trimmed.
	CredentialsFile string `yaml:"credentials_file"`
}

// DefaultConfig returns the defaults, forwarding off.
func DefaultConfig() Config {
	return Config{
		Timeout:     model.Duration(DefaultTimeout),
		QueueSize:   DefaultQueueSize,
		Signals:     []string{SignalTraces, SignalLogs},
		Compression: CompressionGzip,
	}
}

// Enabled reports whether an endpoint is set.
func (c Config) Enabled() bool { return c.Endpoint != "" }

// withDefaults fills the zero values.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.QueueSize == 0 {
		c.QueueSize = d.QueueSize
	}
	if len(c.Signals) == 0 {
		c.Signals = d.Signals
	}
	if c.Compression == "" {
		c.Compression = d.Compression
	}
	return c
}

// FieldError is a validation error of one field, named by its YAML key,
// with an index for list items ("headers[2]").
type FieldError struct {
	// Field is the YAML key, e.g. "endpoint".
	Field string
	// Msg says what is wrong with the value; it never quotes a header
	// value or a password.
	Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports the first invalid field as a *FieldError. A config
// without an endpoint is valid (forwarding off) when the rest is.
func (c Config) Validate() error {
	switch {
	case c.Timeout < 0:
		return fieldErr("timeout", "must not be negative, got %s", c.Timeout)
	case c.QueueSize < 0:
		return fieldErr("queue_size", "must not be negative, got %d", c.QueueSize)
	case c.Protocol != "" && c.Protocol != ProtocolHTTP && c.Protocol != ProtocolGRPC:
		return fieldErr("protocol", "must be %q or %q, got %q", ProtocolHTTP, ProtocolGRPC, c.Protocol)
	case c.Compression != "" && c.Compression != CompressionGzip && c.Compression != CompressionNone:
		return fieldErr("compression", "must be %q or %q, got %q", CompressionGzip, CompressionNone, c.Compression)
	}
	for i, s := range c.Signals {
		switch {
		case s != SignalTraces && s != SignalLogs:
			return fieldErr(fmt.Sprintf("signals[%d]", i), "must be %q or %q, got %q", SignalTraces, SignalLogs, s)
		case slices.Contains(c.Signals[:i], s):
			return fieldErr(fmt.Sprintf("signals[%d]", i), "%q is listed twice", s)
		}
	}
	for i := range c.Headers {
		if _, _, err := parseHeader(c.Headers[i]); err != nil {
			return fieldErr(fmt.Sprintf("headers[%d]", i), "%v", err)
		}
	}
	if c.Authorization.Type != "" && c.Authorization.CredentialsFile == "" {
		return fieldErr("authorization", "type is set without credentials_file")
	}
	if c.Endpoint == "" {
		return nil
	}
	ep, err := parseEndpoint(c.Endpoint, c.Protocol)
	if err != nil {
		return fieldErr("endpoint", "%s: %v", redactURL(c.Endpoint), err)
	}
	if c.TLS.set() && !ep.tls {
		return fieldErr("tls_config", "the endpoint %s is plain text: use https:// or grpcs://", redactURL(c.Endpoint))
	}
	if err := c.TLS.Validate(); err != nil {
		return fieldErr("tls_config", "%v", err)
	}
	if c.Authorization.CredentialsFile != "" {
		if ep.hasAuth {
			return fieldErr("authorization", "the endpoint has a user and password too: keep one")
		}
		for i, h := range c.Headers {
			if name, _, _ := parseHeader(h); strings.EqualFold(name, "Authorization") {
				return fieldErr(fmt.Sprintf("headers[%d]", i), "Authorization is set by authorization too: keep one")
			}
		}
	}
	return nil
}

// header returns the Authorization header value of a, read from its
// file now; "" without one.
func (a Authorization) header() (string, error) {
	if a.CredentialsFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(a.CredentialsFile)
	if err != nil {
		return "", fmt.Errorf("read authorization.credentials_file: %w", err)
	}
	typ := a.Type
	if typ == "" {
		typ = "Bearer"
	}
	return typ + " " + strings.TrimSpace(string(b)), nil
}

// parseHeader splits "Name: value". Its errors never quote the value.
func parseHeader(h string) (name, value string, err error) {
	name, value, ok := strings.Cut(h, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	switch {
	case !ok:
		return "", "", errors.New(`not "Name: value": no colon`)
	case name == "":
		return "", "", errors.New(`not "Name: value": no name before the colon`)
	case !httpguts.ValidHeaderFieldName(name):
		return "", "", errors.New("the name before the colon is not a valid header name")
	case !httpguts.ValidHeaderFieldValue(value):
		return "", "", fmt.Errorf("the value of %s holds a character not allowed in a header", name)
	case isReservedHeader(name):
		return "", "", fmt.Errorf("%s is set by the exporter", name)
	}
	return name, value, nil
}

// isReservedHeader reports headers the exporter sets itself.
func isReservedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "content-type", "content-encoding", "content-length", "te", "grpc-encoding", "grpc-timeout", "host", "connection", "transfer-encoding":
		return true
	}
	return false
}

// endpoint is a parsed Config.Endpoint.
type endpoint struct {
	protocol string
	// base is the OTLP/HTTP base URL without user information.
	base *url.URL
	// target is the gRPC target (host:port); tls says whether to use TLS.
	target string
	tls    bool
	// user and password, when the endpoint has user information.
	user, password string
	hasAuth        bool
}

// parseEndpoint checks the endpoint against the protocol.
func parseEndpoint(raw, protocol string) (*endpoint, error) {
	if !strings.Contains(raw, "://") {
		return nil, errors.New("no scheme: give http://host:4318, https://…, grpc://host:4317 or grpcs://…")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, ue.Err
		}
		return nil, err
	}
	ep := &endpoint{}
	switch u.Scheme {
	case "http", "https":
		ep.protocol, ep.tls = ProtocolHTTP, u.Scheme == "https"
		if protocol == ProtocolGRPC {
			ep.protocol = ProtocolGRPC
		}
	case "grpc", "grpcs":
		if protocol == ProtocolHTTP {
			return nil, fmt.Errorf("scheme %s:// with protocol %q: give http:// or https://", u.Scheme, protocol)
		}
		ep.protocol, ep.tls = ProtocolGRPC, u.Scheme == "grpcs"
	default:
		return nil, fmt.Errorf("the scheme must be http, https, grpc or grpcs, not %q", u.Scheme)
	}
	switch {
	case u.Host == "":
		return nil, errors.New("no host")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("a query or fragment has no meaning here")
	case ep.protocol == ProtocolGRPC && strings.Trim(u.Path, "/") != "":
		return nil, errors.New("a gRPC endpoint has no path")
	case ep.protocol == ProtocolGRPC && u.Port() == "":
		return nil, errors.New("no port (OTLP/gRPC listens on 4317)")
	}
	if u.User != nil {
		ep.user = u.User.Username()
		ep.password, _ = u.User.Password()
		ep.hasAuth = true
	}
	ep.target = u.Host
	base := *u
	base.User = nil
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawPath = ""
	ep.base = &base
	return ep, nil
}

// redactURL returns raw without user information, query and fragment,
// for logs and errors.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return "<unparsable URL>"
		}
		return raw
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
