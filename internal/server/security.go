package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/ingest/otlp"
)

// unauthenticatedWarning is logged for a listener that every host of the
// network may reach and that asks no one for credentials.
const unauthenticatedWarning = "listening on all interfaces without authentication; see --web.config.file"

// otlpSecurity returns the OTLP receiver's TLS configuration and
// authenticator (nil when off); a bad certificate, key, CA, token file or
// htpasswd line is the user's to fix.
func otlpSecurity(cfg config.OTLPConfig) (*tls.Config, *otlp.Authenticator, error) {
	tc, err := cfg.TLS.ServerConfig()
	if err != nil {
		return nil, nil, UsageError{fmt.Errorf("otlp.tls: %w", err)}
	}
	auth, err := otlp.NewAuthenticator(cfg.Auth)
	if err != nil {
		return nil, nil, UsageError{fmt.Errorf("otlp.auth: %w", err)}
	}
	return tc, auth, nil
}

// warnOpen logs unauthenticatedWarning when ln binds more than the
// loopback interface and authenticates no one. what names the listener.
func warnOpen(logger *slog.Logger, what string, ln net.Listener, authenticates bool, see string) {
	if ln == nil || authenticates {
		return
	}
	addr := ln.Addr().String()
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return
	}
	msg := unauthenticatedWarning
	if see != "" {
		msg = "listening on all interfaces without authentication; see " + see
	}
	logger.Warn(msg, "listener", what, "address", addr)
}
