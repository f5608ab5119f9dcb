package config

import (
	"os"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
)

// validateOTLPSecurity checks otlp.tls and otlp.auth without reading the
// files they name (the server reads them at start, before anything
// opens: they may exist only where it runs).
func validateOTLPSecurity(o OTLPConfig) error {
	if err := o.TLS.Validate(); err != nil {
		return fieldErr("otlp.tls", "%s", oneLine(err))
	}
	if err := o.Auth.Validate(); err != nil {
		return fieldErr("otlp.auth", "%s", oneLine(err))
	}
	return nil
}

// WebSecurity is what a web configuration file asks of the HTTP
// listener's clients.
type WebSecurity struct {
	// TLS is set when the listener serves HTTPS.
	TLS bool
	// Users is the number of basic-auth users.
	Users int
	// ClientCerts is set when a client must show a certificate.
	ClientCerts bool
}

// Authenticates reports whether a client must prove who it is.
func (w WebSecurity) Authenticates() bool { return w.Users > 0 || w.ClientCerts }

// LoadWebConfig checks the exporter-toolkit web configuration file at
// path with the toolkit's own rules (web.Validate: its users' bcrypt
// hashes, certificate, key and CAs) and says what it asks for. "" is no
// file: plain HTTP, no authentication. The error is one line naming the
// file; it never quotes a secret.
func LoadWebConfig(path string) (WebSecurity, error) {
	if path == "" {
		return WebSecurity{}, nil
	}
	if err := web.Validate(path); err != nil {
		msg := oneLine(err)
		if strings.HasPrefix(msg, "crypto/bcrypt: ") {
			msg = "basic_auth_users: a password is not a bcrypt hash (make one with htpasswd -nBC 10 USER): " + strings.TrimPrefix(msg, "crypto/bcrypt: ")
		}
		return WebSecurity{}, fieldErr("web.config_file", "%s: %s", path, msg)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return WebSecurity{}, fieldErr("web.config_file", "%v", err)
	}
	var c web.Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		return WebSecurity{}, fieldErr("web.config_file", "%s: %s", path, oneLine(err))
	}
	t := c.TLSConfig
	ws := WebSecurity{TLS: t.IsEnabled(), Users: len(c.Users)}
	switch t.ClientAuth {
	case "RequireAnyClientCert", "RequireClientCert", "RequireAndVerifyClientCert":
		ws.ClientCerts = ws.TLS
	}
	return ws, nil
}

// OTLPAuthenticates reports whether the OTLP receiver asks its clients
// for credentials or for a verified client certificate.
func (o OTLPConfig) OTLPAuthenticates() bool {
	if o.Auth.Enabled() {
		return true
	}
	if !o.TLS.Enabled() || o.TLS.ClientCAFile == "" {
		return false
	}
	switch o.TLS.ClientAuthType {
	case "", "RequireAndVerifyClientCert":
		return true
	}
	return false
}

// oneLine joins the lines of err's message, so that a YAML error stays
// one line.
func oneLine(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n", "")
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
}
