package tenancybench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/ingest/remotewrite/remotewritetest"
	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/tenant"
)

// baseConfig leaves the store to the benchmark's series, as ingestbench
// and authbench do: no self-monitoring series, no rule evaluation.
const baseConfig = `self_monitoring:
  enabled: false
evaluation:
  enabled: false
`

// server is one `vigil serve` process on its own data directory.
type server struct {
	name string
	dir  string
	proc *peertest.Proc
}

// serve writes config (vigil.yaml text, where $DIR stands for the
// directory) and the named extra files into a fresh directory and starts `vigil serve` on it, its HTTP API on a free
// 127.0.0.1 port and the OTLP receivers off, and waits for /-/ready.
func serve(b *testing.B, name, config string, files map[string]string) *server {
	b.Helper()
	dir, err := os.MkdirTemp(b.TempDir(), name+"-")
	if err != nil {
		b.Fatal(err)
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(config, "$DIR", dir)), 0o600); err != nil {
		b.Fatal(err)
	}
	proc := peertest.StartVigil(b, "--config", cfg, "--data-dir", filepath.Join(dir, "data"),
		"--otlp-grpc-listen", "", "--otlp-http-listen", "")
	return &server{name: name, dir: dir, proc: proc}
}

// stop ends the process (failing the benchmark when it had crashed) and
// removes its directory, so that the next run starts from nothing.
func (s *server) stop(b *testing.B) {
	b.Helper()
	if err := s.proc.Stop(); err != nil {
		b.Errorf("stop vigil (%s): %v\n%s", s.name, err, s.proc.Output())
	}
	_ = os.RemoveAll(s.dir)
}

// orgID sends every request as tenant id (X-Scope-OrgID), or with no
// header when id is empty.
type orgID struct {
	id   string
	next *http.Transport
}

func (o *orgID) RoundTrip(r *http.Request) (*http.Response, error) {
	if o.id != "" {
		r = r.Clone(r.Context())
		r.Header.Set(tenant.Header, o.id)
	}
	return o.next.RoundTrip(r)
}

func (o *orgID) CloseIdleConnections() { o.next.CloseIdleConnections() }

// tenantClient is remotewritetest's client (one kept-alive connection per
// sender) sending as tenant id.
func tenantClient(senders int, id string) *http.Client {
	c := remotewritetest.NewClient(senders)
	c.Transport = &orgID{id: id, next: c.Transport.(*http.Transport)}
	return c
}

// writeAnswer is a remote-write response: its status and the start of
// its body.
type writeAnswer struct {
	code int
	body string
}

// postWrite posts one encoded Remote-Write 1.0 request, as Prometheus
// sends it.
func postWrite(ctx context.Context, c *http.Client, url string, body []byte) (writeAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return writeAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := c.Do(req)
	if err != nil {
		return writeAnswer{}, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	_, _ = io.Copy(io.Discard, resp.Body)
	return writeAnswer{code: resp.StatusCode, body: string(bytes.TrimSpace(msg))}, nil
}

// quantile returns the q-quantile (0 ≤ q < 1) of sorted, by rank: the
// element at index ⌊q·n⌋.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is (max − min) / median of xs: how far repeated runs of the same
// thing fell apart.
func spread(xs []float64) float64 {
	if len(xs) == 0 || median(xs) == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / median(xs)
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, " ")
}

// pairRatios returns b/a for each pair (a from runs[2i], b from
// runs[2i+1]) of the values f gives.
func pairRatios[T any](runs []T, f func(T) float64) []float64 {
	var out []float64
	for i := 0; i+1 < len(runs); i += 2 {
		out = append(out, f(runs[i+1])/f(runs[i]))
	}
	return out
}
