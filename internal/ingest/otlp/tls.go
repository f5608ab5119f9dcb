package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
)

// TLSConfig is otlp.tls in vigil.yaml: the receiver's certificate and,
// for mutual TLS, the CAs its clients' certificates must chain to. It is
// read with exporter-toolkit's tls_server_config rules (the --web.config.file
// of the HTTP listener), so the same files serve both; the certificate and
// key are read again at every handshake, so a renewed certificate (by
// cert-manager, say) is taken without a restart.
type TLSConfig struct {
	// CertFile and KeyFile are the server's certificate and private key
	// (PEM).
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile is a PEM bundle of the CAs that sign the clients'
	// certificates; with it the receiver asks every client for a
	// certificate (client_auth_type RequireAndVerifyClientCert unless set).
	ClientCAFile string `yaml:"client_ca_file"`
	// ClientAuthType is exporter-toolkit's: NoClientCert,
	// RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or
	// RequireAndVerifyClientCert.
	ClientAuthType string `yaml:"client_auth_type"`
	// MinVersion is the oldest TLS version accepted: "1.2" or "1.3" (the
	// Collector's form) or TLS12, TLS13 (exporter-toolkit's); default 1.2.
	MinVersion string `yaml:"min_version"`
}

// Enabled reports whether TLS is configured.
func (c *TLSConfig) Enabled() bool { return c != nil && (c.CertFile != "" || c.KeyFile != "") }

// UnmarshalYAML reads the section strictly.
func (c *TLSConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain TLSConfig
	return strictDecode(n, (*plain)(c))
}

// Validate reports the first invalid setting without reading the files
// (they may exist only where the server runs): ServerConfig reads them,
// at start.
func (c *TLSConfig) Validate() error {
	if c == nil {
		return nil
	}
	if !c.Enabled() {
		if c.ClientCAFile != "" || c.ClientAuthType != "" || c.MinVersion != "" {
			return errors.New("set cert_file and key_file: the other settings need a certificate")
		}
		return nil
	}
	switch {
	case c.CertFile == "":
		return errors.New("key_file is set without cert_file")
	case c.KeyFile == "":
		return errors.New("cert_file is set without key_file")
	}
	switch c.ClientAuthType {
	case "", "NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert":
	default:
		return fmt.Errorf("client_auth_type %q: use NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert", c.ClientAuthType)
	}
	if c.ClientAuthType != "" && c.ClientAuthType != "NoClientCert" && c.ClientAuthType != "RequestClientCert" && c.ClientAuthType != "RequireAnyClientCert" && c.ClientCAFile == "" {
		return fmt.Errorf("client_auth_type %s needs client_ca_file", c.ClientAuthType)
	}
	if c.MinVersion != "" {
		if _, err := parseTLSVersion(c.MinVersion); err != nil {
			return err
		}
	}
	return nil
}

// ServerConfig returns the crypto/tls configuration of the receiver; nil
// without TLS.
func (c *TLSConfig) ServerConfig() (*tls.Config, error) {
	if err := c.Validate(); err != nil || !c.Enabled() {
		return nil, err
	}
	wc := &web.TLSConfig{
		TLSCertPath: c.CertFile,
		TLSKeyPath:  c.KeyFile,
		ClientCAs:   c.ClientCAFile,
		ClientAuth:  c.ClientAuthType,
		MinVersion:  web.TLSVersion(tls.VersionTLS12),
		MaxVersion:  web.TLSVersion(tls.VersionTLS13),
	}
	if wc.ClientAuth == "" && c.ClientCAFile != "" {
		wc.ClientAuth = "RequireAndVerifyClientCert"
	}
	if c.MinVersion != "" {
		v, err := parseTLSVersion(c.MinVersion)
		if err != nil {
			return nil, err
		}
		wc.MinVersion = v
	}
	cfg, err := web.ConfigToTLSConfig(wc)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "failed to "))
	}
	if c.ClientCAFile != "" {
		// The toolkit takes a file of no certificate as a pool of none,
		// which would refuse every client: say so instead.
		b, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("read client_ca_file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("client_ca_file %s holds no PEM certificate", c.ClientCAFile)
		}
	}
	return cfg, nil
}

// parseTLSVersion reads "1.2", "1.3", "TLS12" or "TLS13".
func parseTLSVersion(s string) (web.TLSVersion, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "1.2", "TLS12", "TLS1.2":
		return web.TLSVersion(tls.VersionTLS12), nil
	case "1.3", "TLS13", "TLS1.3":
		return web.TLSVersion(tls.VersionTLS13), nil
	case "1.0", "1.1", "TLS10", "TLS11":
		return 0, fmt.Errorf("min_version %q: TLS 1.0 and 1.1 are not accepted; use 1.2 or 1.3", s)
	}
	return 0, fmt.Errorf("min_version %q: use 1.2 or 1.3", s)
}
