package authbench

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/vigil-obs/vigil/internal/certtest"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
)

// BenchmarkWebConfigRequest isolates the per-request cost of the web
// configuration from the store: one remote-write body of 1,000 series
// (as Prometheus batches them), POSTed over a kept-alive connection to a
// handler that only reads it, behind exporter-toolkit's web.Serve as
// vigil serve runs it — with no web configuration, and with TLS 1.3 and
// a bcrypt basic-auth user (the toolkit re-reads the file and checks the
// remembered password on every request). The modes alternate five
// times, 2,000 requests each; it reports the median µs per request of
// each and the median of the per-pair ratios. Client and server share
// the process, so TLS is paid on both ends.
//
//	go test ./test/authbench -run '^$' -bench WebConfigRequest -benchtime 1x
func BenchmarkWebConfigRequest(b *testing.B) {
	const (
		requests = 2000
		rounds   = 5
	)
	certs := certtest.New(b)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		b.Fatal(err)
	}
	webFile := certs.WriteFile(b, "web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  min_version: TLS13\n"+
		"basic_auth_users:\n  bench: "+string(hash)+"\n")
	load, err := remotewritetest.NewLoad(1000, 1000, 1, interval, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	body := load.Body(0, 0)
	off := startEcho(b, "", "http", &http.Client{Transport: &http.Transport{}})
	on := startEcho(b, webFile, "https", &http.Client{Transport: &basicAuth{next: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: certs.Pool(b), MinVersion: tls.VersionTLS13}}}})
	var offUS, onUS, ratios []float64
	b.ReportAllocs()
	for b.Loop() {
		offUS, onUS, ratios = offUS[:0], onUS[:0], ratios[:0]
		for range rounds {
			a, c := off.time(b, body, requests), on.time(b, body, requests)
			offUS, onUS, ratios = append(offUS, a), append(onUS, c), append(ratios, c/a)
		}
	}
	b.ReportMetric(median(offUS), "off-µs/request")
	b.ReportMetric(median(onUS), "tls+basic-µs/request")
	b.ReportMetric(median(ratios), "on/off")
	fmt.Printf("\nper request, %d-byte remote-write body, kept-alive: off %.1f µs, tls+basic %.1f µs (median of %d × %d); on/off per pair %s → median %.2f\n",
		len(body), median(offUS), median(onUS), rounds, requests, fmtRatios(ratios), median(ratios))
}

// echo is a handler that reads the body, served by web.Serve.
type echo struct {
	url    string
	client *http.Client
}

// startEcho serves a body-reading handler on 127.0.0.1 behind web.Serve
// with the web configuration file ("" none), until the benchmark ends.
func startEcho(b *testing.B, file, scheme string, client *http.Client) *echo {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})}
	done := make(chan error, 1)
	go func() {
		done <- web.Serve(ln, srv, &web.FlagConfig{WebListenAddresses: &[]string{ln.Addr().String()}, WebSystemdSocket: new(bool), WebConfigFile: &file},
			slog.New(slog.DiscardHandler))
	}()
	b.Cleanup(func() {
		client.CloseIdleConnections()
		_ = srv.Close()
		<-done
	})
	e := &echo{url: scheme + "://" + ln.Addr().String() + "/api/v1/write", client: client}
	e.post(b, []byte("warm-up")) // the handshake and the first bcrypt check are not per request
	return e
}

func (e *echo) post(b *testing.B, body []byte) {
	resp, err := e.client.Post(e.url, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b.Fatalf("%s", resp.Status)
	}
}

// time returns the mean µs per request of n requests.
func (e *echo) time(b *testing.B, body []byte, n int) float64 {
	start := time.Now()
	for range n {
		e.post(b, body)
	}
	return float64(time.Since(start).Microseconds()) / float64(n)
}
