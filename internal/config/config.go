package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/units"
	"github.com/grafana/regexp"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"

	"github.com/vigil-obs/vigil/internal/alert"
	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/drift"
	"github.com/vigil-obs/vigil/internal/forward"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite"
	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/redact"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
	"github.com/vigil-obs/vigil/internal/tenant"
	"github.com/vigil-obs/vigil/internal/traces"
)

// Config is the content of vigil.yaml.
type Config struct {
	Storage StorageConfig `yaml:"storage"`
	Query   QueryConfig   `yaml:"query"`
	Web     WebConfig     `yaml:"web"`
	Self    SelfConfig    `yaml:"self_monitoring"`
	// Limits protect the remote-write receiver.
	Limits remotewrite.Limits `yaml:"limits"`
	// Memory is the memory budget: GOMEMLIMIT and the bytes the ingest
	// requests in flight may hold.
	Memory MemoryConfig `yaml:"memory"`
	// Source is the backend an attached `vigil serve` reads (off without a
	// URL).
	Source SourceConfig `yaml:"source"`
	// Evaluation configures the continuous evaluation: SLO rules,
	// symptoms, diagnosis, incidents.
	Evaluation EvaluationConfig `yaml:"evaluation"`
	// Alerting says where incidents and alerts are sent.
	Alerting alert.Config `yaml:"alerting"`
	// OTLP configures the OTLP receiver.
	OTLP OTLPConfig `yaml:"otlp"`
	// Traces configures the trace and log store (Dir defaults to
	// <data_dir>/traces).
	Traces traces.Config `yaml:"traces"`
	// SpanMetrics configures the span metrics and service graph derived
	// from the traces received.
	SpanMetrics spanmetrics.Config `yaml:"spanmetrics"`
	// Forwarding sends the redacted traces and logs on to another OTLP
	// backend (Jaeger, Tempo, a Collector); off without an endpoint.
	Forwarding forward.Config `yaml:"forwarding"`
	// LogSignals counts NCCL timeouts, CUDA errors, OOM kills, XID lines and
	// HTTP 5xx in the logs received.
	LogSignals logsignals.Config `yaml:"log_signals"`
	// Drift are the scheduled drift evaluations: feature histograms'
	// current windows against their baselines, stored as
	// vigil_feature_drift{model, feature, method}.
	Drift []drift.Job `yaml:"drift"`
	// Redaction configures what is removed from traces, logs and metrics
	// before anything is stored, indexed, logged, returned or forwarded.
	Redaction redact.Config `yaml:"redaction"`
	// Cost prices the GPUs (inline, or a prices file; a currency alone
	// reads OpenCost's node_gpu_hourly_cost): with prices, every
	// evaluation cycle records what the GPUs cost.
	Cost cost.Config `yaml:"cost"`
	// Tenancy makes every request name its tenant (X-Scope-OrgID or an
	// identity mapped to one), stamps what it writes and restricts what it
	// reads (internal/tenant).
	Tenancy tenant.Config `yaml:"tenancy"`
	// Scrape holds the Prometheus sections of the file (global,
	// scrape_configs, scrape_config_files), read by Prometheus's own
	// loader; nil when the file has none.
	Scrape *promconfig.Config `yaml:"-"`
}

// StorageConfig configures the embedded store.
type StorageConfig struct {
	// DataDir is the TSDB directory.
	DataDir string `yaml:"data_dir"`
	// Retention is how long samples are kept.
	Retention model.Duration `yaml:"retention"`
	// OutOfOrderWindow is how far behind the newest sample live ingestion
	// still accepts samples; older history is imported as blocks. A file
	// that does not set it gets the default or Retention, whichever is
	// shorter.
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
	// MaxBytes, MaxDepth and MaxOperators bound an expression before it
	// is parsed (Prometheus's parser is quadratic in nesting and in chains
	// of binary operators, and cannot be stopped): longer, deeper or
	// longer-chained queries get 400.
	MaxBytes     int `yaml:"max_bytes"`
	MaxDepth     int `yaml:"max_depth"`
	MaxOperators int `yaml:"max_operators"`
	// RemoteRead bounds /api/v1/read, as Prometheus's
	// --storage.remote.read-* flags do.
	RemoteRead RemoteReadConfig `yaml:"remote_read"`
}

// RemoteReadConfig bounds the remote-read endpoint.
type RemoteReadConfig struct {
	// MaxConcurrency is how many remote reads run at once; more wait.
	MaxConcurrency int `yaml:"max_concurrency"`
	// SampleLimit is the most samples one read of the samples response
	// type returns (0: no limit).
	SampleLimit int `yaml:"sample_limit"`
	// MaxBytesInFrame is the largest frame of a streamed read.
	MaxBytesInFrame int `yaml:"max_bytes_in_frame"`
}

// WebConfig configures the HTTP API.
type WebConfig struct {
	// Listen is the address of the HTTP API.
	Listen string `yaml:"listen"`
	// ReadTimeout bounds reading one request; queries have their own timeout.
	ReadTimeout model.Duration `yaml:"read_timeout"`
	// ReadHeaderTimeout bounds reading a request's header.
	ReadHeaderTimeout model.Duration `yaml:"read_header_timeout"`
	// MaxConnections bounds simultaneous connections; 0 means no bound.
	// At the bound, a new connection takes the place of the oldest idle
	// or half-sent one, and when every one is being answered 16 more
	// serve only /-/healthy and /-/ready.
	MaxConnections int `yaml:"max_connections"`
	// CORSOrigin is the regular expression (anchored) of the origins a
	// browser may read the API from, as Prometheus's --web.cors.origin:
	// '.*', the default, allows every origin.
	CORSOrigin string `yaml:"cors_origin"`
	// ConfigFile is the exporter-toolkit web configuration (TLS, mutual
	// TLS, bcrypt basic-auth users), as Prometheus's --web.config.file;
	// the --web.config.file flag overrides it. Empty: plain HTTP, no
	// authentication.
	ConfigFile string `yaml:"config_file"`
}

// CORS returns the compiled, anchored CORSOrigin.
func (w WebConfig) CORS() (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + w.CORSOrigin + ")$")
}

// MemoryConfig is the memory budget of `vigil serve`.
type MemoryConfig struct {
	// Budget is the memory the process may use ("2GiB"). GOMEMLIMIT is
	// set to 90% of it, unless the GOMEMLIMIT environment variable is
	// set. 0, the default, takes the cgroup's memory limit when one is
	// set (a container's), and no budget otherwise.
	Budget Bytes `yaml:"budget"`
	// MaxInflightBytes bounds the bytes that the requests of remote
	// write, OTLP and push hold at once while they are decoded and
	// stored, each charged its body as sent plus its decoded size times
	// its decoder's measured expansion; beyond it requests get 503, a
	// client over its fair share 429, both with Retry-After. 0, the
	// default, is half the budget, or 1GiB without one.
	MaxInflightBytes Bytes `yaml:"max_inflight_bytes"`
}

// DefaultInflightBytes is memory.max_inflight_bytes without a budget.
const DefaultInflightBytes = 1 << 30

// InflightBytes is the in-flight byte budget for a memory budget of
// budget bytes (0: none): MaxInflightBytes when set, else half the
// budget, else DefaultInflightBytes.
func (m MemoryConfig) InflightBytes(budget int64) int64 {
	switch {
	case m.MaxInflightBytes > 0:
		return int64(m.MaxInflightBytes)
	case budget > 0:
		return budget / 2
	}
	return DefaultInflightBytes
}

// Bytes is a size in bytes, written with a unit ("512MiB", "2GiB") or as
// a plain number of bytes.
type Bytes int64

// UnmarshalText reads "2GiB", "512MB" (powers of two, as Prometheus reads
// them) or "1048576".
func (b *Bytes) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*b = Bytes(n)
		return nil
	}
	v, err := units.ParseBase2Bytes(s)
	if err != nil {
		return fmt.Errorf("not a size in bytes (like 512MiB or 2GiB): %q", s)
	}
	*b = Bytes(v)
	return nil
}

// MarshalText writes the size with its largest whole unit.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(units.Base2Bytes(b).String()), nil }

// SelfConfig configures how Vigil stores its own metrics.
type SelfConfig struct {
	// Enabled stores Vigil's own metrics in its store.
	Enabled bool `yaml:"enabled"`
	// Interval is how often they are stored.
	Interval model.Duration `yaml:"interval"`
}

// EvaluationConfig configures the continuous evaluation of `vigil serve`.
type EvaluationConfig struct {
	// Enabled runs it.
	Enabled bool `yaml:"enabled"`
	// Interval is how often rules, symptoms and the diagnosis run.
	Interval model.Duration `yaml:"interval"`
	// Window is how far back each diagnosis looks.
	Window model.Duration `yaml:"window"`
	// ResolveAfter is how long an incident must go unseen to resolve.
	ResolveAfter model.Duration `yaml:"resolve_after"`
	// FindingConfidence is the confidence from which a finding (a problem
	// with no symptom yet) opens a ticket.
	FindingConfidence float64 `yaml:"finding_confidence"`
	// SLOFile is an SLO spec (see docs/slo.md); empty: the built-in AI SLO
	// presets.
	SLOFile string `yaml:"slo_file"`
	// SLOPresets evaluates the built-in presets when SLOFile is empty.
	SLOPresets bool `yaml:"slo_presets"`
}

// OTLPConfig configures the OTLP receiver.
type OTLPConfig struct {
	// GRPCListen and HTTPListen are the addresses of OTLP/gRPC and
	// OTLP/HTTP; empty turns that transport off.
	GRPCListen string `yaml:"grpc_listen"`
	HTTPListen string `yaml:"http_listen"`
	// MaxRequestBytes bounds one compressed request body (413 above).
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// MaxInFlight bounds the requests being handled at once (429 above).
	MaxInFlight int `yaml:"max_inflight_requests"`
	// TLS serves both transports over TLS (mutual with client_ca_file).
	TLS otlp.TLSConfig `yaml:"tls"`
	// Auth asks the clients for a bearer token or basic-auth credentials,
	// as the OpenTelemetry Collector's bearertokenauth and basicauth
	// extensions do.
	Auth otlp.AuthConfig `yaml:"auth"`
}

// Default OTLP addresses (DESIGN.md).
const (
	DefaultOTLPGRPCListen = ":4317"
	DefaultOTLPHTTPListen = ":4318"
)

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
			MaxBytes:       1 << 20,
			MaxDepth:       256,
			MaxOperators:   2000,
			RemoteRead:     RemoteReadConfig{MaxConcurrency: 10, SampleLimit: 50_000_000, MaxBytesInFrame: 1 << 20},
		},
		Web: WebConfig{
			Listen:            ":9700",
			ReadTimeout:       model.Duration(5 * time.Minute),
			ReadHeaderTimeout: model.Duration(10 * time.Second),
			MaxConnections:    512,
			CORSOrigin:        ".*",
		},
		Self: SelfConfig{
			Enabled:  true,
			Interval: model.Duration(15 * time.Second),
		},
		Limits: remotewrite.DefaultLimits(),
		Evaluation: EvaluationConfig{
			Enabled:           true,
			Interval:          model.Duration(30 * time.Second),
			Window:            model.Duration(time.Hour),
			ResolveAfter:      model.Duration(2 * time.Minute),
			FindingConfidence: 0.5,
			SLOPresets:        true,
		},
		Alerting: alert.Default(),
		OTLP: OTLPConfig{
			GRPCListen:      DefaultOTLPGRPCListen,
			HTTPListen:      DefaultOTLPHTTPListen,
			MaxRequestBytes: 16 << 20,
			MaxInFlight:     64,
		},
		Traces:      traces.DefaultConfig(),
		SpanMetrics: spanmetrics.DefaultConfig(),
		Forwarding:  forward.DefaultConfig(),
		LogSignals:  logsignals.DefaultConfig(),
		Redaction:   redact.Default(),
		Source:      DefaultSource(),
		Cost:        cost.DefaultConfig(),
		Tenancy:     tenant.DefaultConfig(),
	}
}

// FieldError is a validation error of one field, named by its YAML path.
type FieldError struct {
	// Field is the dotted YAML path, e.g. "storage.retention".
	Field string
	// Msg says what is wrong with the value.
	Msg string
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
		return fieldErr("storage.retention", "must be positive, got %s", fmtDuration(s.Retention))
	case s.OutOfOrderWindow < 0:
		return fieldErr("storage.out_of_order_window", "must not be negative, got %s", fmtDuration(s.OutOfOrderWindow))
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
	case q.MaxBytes <= 0:
		return fieldErr("query.max_bytes", "must be positive, got %d", q.MaxBytes)
	case q.MaxDepth <= 0:
		return fieldErr("query.max_depth", "must be positive, got %d", q.MaxDepth)
	case q.MaxOperators <= 0:
		return fieldErr("query.max_operators", "must be positive, got %d", q.MaxOperators)
	case w.ReadTimeout <= 0:
		return fieldErr("web.read_timeout", "must be positive, got %s", w.ReadTimeout)
	case w.ReadHeaderTimeout <= 0:
		return fieldErr("web.read_header_timeout", "must be positive, got %s", w.ReadHeaderTimeout)
	case c.Memory.Budget < 0:
		return fieldErr("memory.budget", "must not be negative, got %d", c.Memory.Budget)
	case c.Memory.MaxInflightBytes < 0:
		return fieldErr("memory.max_inflight_bytes", "must not be negative, got %d", c.Memory.MaxInflightBytes)
	case w.MaxConnections < 0:
		return fieldErr("web.max_connections", "must not be negative, got %d", w.MaxConnections)
	case q.RemoteRead.MaxConcurrency <= 0:
		return fieldErr("query.remote_read.max_concurrency", "must be positive, got %d", q.RemoteRead.MaxConcurrency)
	case q.RemoteRead.SampleLimit < 0:
		return fieldErr("query.remote_read.sample_limit", "must not be negative, got %d", q.RemoteRead.SampleLimit)
	case q.RemoteRead.MaxBytesInFrame < 1024:
		return fieldErr("query.remote_read.max_bytes_in_frame", "must be at least 1024, got %d", q.RemoteRead.MaxBytesInFrame)
	case c.Self.Enabled && c.Self.Interval < model.Duration(time.Second):
		return fieldErr("self_monitoring.interval", "must be at least 1s, got %s", c.Self.Interval)
	}
	if _, err := regexp.Compile(w.CORSOrigin); err != nil {
		return fieldErr("web.cors_origin", "not a regular expression: %v", err)
	}
	if err := c.Evaluation.validate(); err != nil {
		return err
	}
	if err := c.Source.Validate(); err != nil {
		return err
	}
	for i, j := range c.Drift {
		if err := j.Validate(); err != nil {
			field, msg, _ := strings.Cut(err.Error(), ": ")
			return fieldErr(fmt.Sprintf("drift[%d].%s", i, field), "%s", msg)
		}
	}
	if err := c.SpanMetrics.Validate(); err != nil {
		return fieldErr("spanmetrics"+sectionField("spanmetrics", err.Error()), "%s", sectionMsg("spanmetrics", err.Error()))
	}
	if err := c.Forwarding.Validate(); err != nil {
		var fe *forward.FieldError
		if errors.As(err, &fe) {
			return fieldErr("forwarding."+fe.Field, "%s", fe.Msg)
		}
		return fieldErr("forwarding", "%v", err)
	}
	if err := c.LogSignals.Validate(); err != nil {
		var fe *logsignals.FieldError
		if errors.As(err, &fe) {
			return fieldErr("log_signals."+fe.Field, "%s", fe.Msg)
		}
		return fieldErr("log_signals", "%v", err)
	}
	if err := c.validateOTLP(); err != nil {
		return err
	}
	if err := c.Traces.Validate(); err != nil {
		return fieldErr("traces"+sectionField("traces", err.Error()), "%s", sectionMsg("traces", err.Error()))
	}
	if err := c.Redaction.Validate(); err != nil {
		var fe *redact.FieldError
		if errors.As(err, &fe) {
			return fieldErr("redaction."+fe.Field, "%s", fe.Msg)
		}
		return fieldErr("redaction", "%v", err)
	}
	if err := c.Tenancy.Validate(); err != nil {
		return fieldErr("tenancy", "%v", err)
	}
	if err := c.Cost.Validate(); err != nil {
		var fe *cost.FieldError
		if errors.As(err, &fe) {
			return fieldErr("cost."+fe.Field, "%s", fe.Msg)
		}
		return fieldErr("cost", "%v", err)
	}
	if err := c.Alerting.Validate(); err != nil {
		var fe *alert.FieldError
		if errors.As(err, &fe) {
			return fieldErr("alerting."+fe.Field, "%s", fe.Msg)
		}
		return fieldErr("alerting", "%v", err)
	}
	if err := c.Limits.Validate(); err != nil {
		var le *remotewrite.LimitError
		if errors.As(err, &le) {
			return fieldErr("limits."+le.Field, "%s", le.Msg)
		}
		return fieldErr("limits", "%v", err)
	}
	return validateListen("web.listen", w.Listen)
}

// validateListen checks a listen address: host:port with a numeric port
// (0 picks a free one); an empty host means every interface.
func validateListen(field, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fieldErr(field, "%q is not host:port (%s)", addr, ae.Err)
		}
		return fieldErr(field, "%q is not host:port", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fieldErr(field, "port %q of %q is not a number from 0 to 65535", port, addr)
	}
	return nil
}

// fmtDuration prints d as Prometheus does, and negative durations (which
// model.Duration prints as 0s) with their sign.
func fmtDuration(d model.Duration) string {
	if d < 0 {
		return "-" + (-d).String()
	}
	return d.String()
}

func (e EvaluationConfig) validate() error {
	switch {
	case !e.Enabled:
		return nil
	case e.Interval < model.Duration(time.Second):
		return fieldErr("evaluation.interval", "must be at least 1s, got %s", e.Interval)
	case e.Window < e.Interval:
		return fieldErr("evaluation.window", "%s is shorter than evaluation.interval (%s)", e.Window, e.Interval)
	case e.ResolveAfter <= 0:
		return fieldErr("evaluation.resolve_after", "must be positive, got %s", e.ResolveAfter)
	case e.FindingConfidence <= 0 || e.FindingConfidence > 1:
		return fieldErr("evaluation.finding_confidence", "must be in (0, 1], got %g", e.FindingConfidence)
	}
	return nil
}

func (c *Config) validateOTLP() error {
	o := c.OTLP
	for field, addr := range map[string]string{"otlp.grpc_listen": o.GRPCListen, "otlp.http_listen": o.HTTPListen} {
		if addr == "" {
			continue
		}
		if err := validateListen(field, addr); err != nil {
			return err
		}
	}
	switch {
	case o.MaxRequestBytes <= 0:
		return fieldErr("otlp.max_request_bytes", "must be positive, got %d", o.MaxRequestBytes)
	case o.MaxInFlight <= 0:
		return fieldErr("otlp.max_inflight_requests", "must be positive, got %d", o.MaxInFlight)
	}
	return validateOTLPSecurity(o)
}

// sectionField and sectionMsg split a section's "section: key must ..."
// errors (the trace store's, the span metrics') into the field (".key")
// and the message.
func sectionField(section, msg string) string {
	rest := strings.TrimPrefix(msg, section+": ")
	key, _, _ := strings.Cut(rest, " ")
	key = strings.TrimRight(key, ":")
	if i := strings.IndexByte(key, '['); i > 0 {
		key = key[:i]
	}
	if key == "" || strings.ContainsAny(key, "\"'") {
		return ""
	}
	return "." + key
}

func sectionMsg(section, msg string) string {
	rest := strings.TrimPrefix(msg, section+": ")
	if _, after, ok := strings.Cut(rest, " "); ok {
		return after
	}
	return rest
}

// String writes the size with its largest whole unit.
func (b Bytes) String() string { return units.Base2Bytes(b).String() }
