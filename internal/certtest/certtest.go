package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// Files are the paths of the PEM files New writes.
type Files struct {
	// Dir holds them all.
	Dir string
	// CA is the certificate of the CA that signs Server and Client.
	CA string
	// Server and ServerKey are valid for 127.0.0.1, ::1 and localhost.
	Server, ServerKey string
	// Client and ClientKey are a client certificate CA signs.
	Client, ClientKey string
	// BadClient and BadClientKey are a client certificate of another CA.
	BadClient, BadClientKey string
	// BadCA is the certificate of that other CA.
	BadCA string
}

// New writes a CA, a server certificate and two client certificates
// (one of the CA, one of another CA) into a temporary directory of t.
func New(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	f := Files{Dir: dir}
	ca, caKey := authority(t, "vigil test CA")
	f.CA = write(t, dir, "ca.pem", "CERTIFICATE", ca.Raw)
	bad, badKey := authority(t, "another CA")
	f.BadCA = write(t, dir, "bad-ca.pem", "CERTIFICATE", bad.Raw)

	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	f.Server, f.ServerKey = leaf(t, dir, "server", srv, ca, caKey)
	cl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	f.Client, f.ClientKey = leaf(t, dir, "client", cl, ca, caKey)
	badCl := *cl
	badCl.SerialNumber = big.NewInt(4)
	f.BadClient, f.BadClientKey = leaf(t, dir, "bad-client", &badCl, bad, badKey)
	return f
}

// Pool returns a certificate pool of the CA.
func (f Files) Pool(t testing.TB) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(f.CA)
	require.NoError(t, err)
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM(b))
	return p
}

// ClientTLS returns a client configuration that trusts the CA, with the
// client certificate when withCert.
func (f Files) ClientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	c := &tls.Config{RootCAs: f.Pool(t), MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(f.Client, f.ClientKey)
		require.NoError(t, err)
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// BadClientTLS returns a client configuration that trusts the CA and
// shows the certificate of the other CA.
func (f Files) BadClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.BadClient, f.BadClientKey)
	require.NoError(t, err)
	return &tls.Config{RootCAs: f.Pool(t), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// Hash returns the bcrypt hash of password at the lowest cost (tests
// need not be slow).
func Hash(t testing.TB, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

// WriteFile writes content to name in f.Dir and returns its path.
func (f Files) WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(f.Dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func authority(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

func leaf(t testing.TB, dir, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return write(t, dir, name+".pem", "CERTIFICATE", der), write(t, dir, name+"-key.pem", "PRIVATE KEY", kb)
}

func write(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return p
}
