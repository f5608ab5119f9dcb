// Package peertest starts the real components Vigil's tests run against —
// Debian's Prometheus and promtool, VictoriaMetrics, and the vigil binary
// itself — as separate processes on free 127.0.0.1 ports, waits until they
// are ready and stops them when the test ends.
//
// It is for tests only. The components are installed by `make test`; a
// missing binary fails the test with that hint rather than skipping it.
package peertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proc is a running component.
type Proc struct {
	// URL is the component's HTTP root, e.g. http://127.0.0.1:41234.
	URL string
	// Addr is host:port of URL.
	Addr string
	cmd  *exec.Cmd
	out  *SyncBuffer
	done chan struct{}
	// stopped is set once Stop or Kill ends the process on purpose.
	stopped atomic.Bool
}

// Output returns what the process printed so far (stdout and stderr).
func (p *Proc) Output() string { return p.out.String() }

// PID returns the process id, e.g. to read /proc/PID/status.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stop sends SIGINT (as Ctrl-C does) and waits up to 30 s, then kills. It
// returns an error when the process exits unsuccessfully, or when it had
// already exited on its own (a crash) before Stop or Kill. It is safe to call
// twice.
func (p *Proc) Stop() error {
	select {
	case <-p.done:
		if !p.stopped.Load() && p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
			return fmt.Errorf("%s had already exited on its own: %s", filepath.Base(p.cmd.Path), p.cmd.ProcessState)
		}
		return nil
	default:
	}
	p.stopped.Store(true)
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
		return fmt.Errorf("%s exited with %s", filepath.Base(p.cmd.Path), p.cmd.ProcessState)
	}
	return nil
}

// Kill sends SIGKILL and waits.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.stopped.Store(true)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// LookPath returns the path of a component, failing the test with the
// install hint when it is missing.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run `make deps` (it installs the Debian packages the tests need)", name)
	}
	return p
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Vigil builds the vigil binary once per test process and returns its path.
func Vigil(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "vigil")
		root := moduleRoot()
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/vigil")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build vigil: %v", buildErr)
	}
	return buildPath
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Start runs bin with args, its output captured, and registers Stop with
// t.Cleanup. ready is polled until it returns true or 60 s pass.
func Start(t testing.TB, url, addr string, ready func() bool, bin string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &Proc{URL: url, Addr: addr, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.Stop() })
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready: %s\n%s", filepath.Base(bin), cmd.ProcessState, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 60s:\n%s", filepath.Base(bin), out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

// StatusOK returns a ready check that wants HTTP 200 from url.
func StatusOK(url string) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// StartVigil runs `vigil serve --listen <free> args...` and waits for
// /-/ready. The OTLP receivers listen on free 127.0.0.1 ports unless args
// name them.
func StartVigil(t testing.TB, args ...string) *Proc {
	t.Helper()
	addr := FreeAddr(t)
	url := "http://" + addr
	full := append([]string{"serve", "--listen", addr}, OTLPFlags(args)...)
	full = append(full, args...)
	return Start(t, url, addr, StatusOK(url+"/-/ready"), Vigil(t), full...)
}

// OTLPFlags returns the flags that put the OTLP receivers of `vigil serve`
// on free 127.0.0.1 ports (tests never bind the default 0.0.0.0:4317), for
// each one args do not set.
func OTLPFlags(args []string) []string {
	var out []string
	for _, f := range []string{"--otlp-grpc-listen", "--otlp-http-listen"} {
		set := false
		for _, a := range args {
			set = set || a == f || strings.HasPrefix(a, f+"=")
		}
		if !set {
			out = append(out, f+"=127.0.0.1:0")
		}
	}
	return out
}

// StartPrometheus runs Debian's Prometheus on dataDir with a configuration
// (YAML text; empty means no scrape jobs) and waits for /-/ready.
func StartPrometheus(t testing.TB, dataDir, config string, extra ...string) *Proc {
	t.Helper()
	bin := LookPath(t, "prometheus")
	cfgPath := filepath.Join(t.TempDir(), "prometheus.yml")
	if config == "" {
		config = "global:\n  scrape_interval: 15s\n"
	}
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatalf("write prometheus config: %v", err)
	}
	addr := FreeAddr(t)
	url := "http://" + addr
	args := append([]string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + dataDir,
		"--web.listen-address=" + addr,
		"--storage.tsdb.retention.time=100y",
		"--log.level=warn",
	}, extra...)
	return Start(t, url, addr, StatusOK(url+"/-/ready"), bin, args...)
}

// StartVictoriaMetrics runs Debian's VictoriaMetrics on dataDir and waits
// for /health.
func StartVictoriaMetrics(t testing.TB, dataDir string, extra ...string) *Proc {
	t.Helper()
	bin := LookPath(t, "victoria-metrics")
	addr := FreeAddr(t)
	url := "http://" + addr
	args := append([]string{
		"-httpListenAddr=" + addr,
		"-storageDataPath=" + dataDir,
		"-retentionPeriod=100y",
		"-search.latencyOffset=0s",
		"-loggerLevel=WARN",
	}, extra...)
	return Start(t, url, addr, StatusOK(url+"/health"), bin, args...)
}

// Run runs bin with args to completion and returns its combined output,
// failing the test when it exits non-zero.
func Run(t testing.TB, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// SyncBuffer is a bytes.Buffer safe for a writer and readers in other
// goroutines (a process's output read while it runs).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartNodeExporter runs Debian's node-exporter and waits for /metrics.
func StartNodeExporter(t testing.TB, extra ...string) *Proc {
	t.Helper()
	bin := LookPath(t, "prometheus-node-exporter")
	addr := FreeAddr(t)
	url := "http://" + addr
	args := append([]string{"--web.listen-address=" + addr, "--log.level=warn"}, extra...)
	return Start(t, url, addr, StatusOK(url+"/metrics"), bin, args...)
}
