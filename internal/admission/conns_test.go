package admission

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveConns serves handler behind LimitConns(max, reserve) on a free
// port of 127.0.0.1 and returns its address.
func serveConns(t *testing.T, max, reserve int, handler http.Handler) (string, *Conns) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute}
	l := LimitConns(ln, max, reserve, srv, func(p string) bool { return p == "/-/ready" }, nil)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), l
}

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A crowd of half-sent requests at the connection limit does not lock out
// a new client: the oldest half-sent one makes room.
func TestConnsEvictHalfSent(t *testing.T) {
	addr, l := serveConns(t, 4, 2, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	var loris []net.Conn
	for range 6 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET /api/v1/query HTTP/1.1\r\nHost: x\r\n") // never ends the header
		loris = append(loris, c)
		time.Sleep(20 * time.Millisecond)
	}
	defer func() {
		for _, c := range loris {
			_ = c.Close()
		}
	}()
	for _, path := range []string{"/-/ready", "/api/v1/query"} {
		if code, body := get(t, addr, path); code != http.StatusOK || body != "ok" {
			t.Fatalf("%s behind %d half-sent requests: %d %q", path, len(loris), code, body)
		}
	}
	if got := counterValue(l.evicted); got < 2 {
		t.Fatalf("evictions: %v, want at least 2", got)
	}
	// The first half-sent connection was closed by the server.
	_ = loris[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := loris[0].Read(make([]byte, 1)); err == nil {
		t.Fatal("the oldest half-sent connection is still open")
	}
}

// With every connection being answered, the reserve serves the probes
// and 503 to anything else.
func TestConnsReserveForProbes(t *testing.T) {
	release := make(chan struct{})
	addr, _ := serveConns(t, 2, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer close(release)
	for range 2 {
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if resp, err := c.Get("http://" + addr + "/slow"); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if code, _ := get(t, addr, "/-/ready"); code != http.StatusOK {
		t.Fatalf("probe with every connection busy: %d, want 200", code)
	}
	code, body := get(t, addr, "/api/v1/query")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "web.max_connections") {
		t.Fatalf("query on a reserve connection: %d %q, want 503 naming web.max_connections", code, body)
	}
}
