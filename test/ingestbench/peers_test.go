package ingestbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// peer is a server that receives remote write at /api/v1/write.
type peer struct {
	name  string
	start func(tb testing.TB, dataDir string) *peertest.Proc
}

// vigilConfig is Vigil's default configuration without self-monitoring
// and evaluation (its rules record series), so that, as in the peers, the
// store holds only the benchmark's series.
const vigilConfig = `self_monitoring:
  enabled: false
evaluation:
  enabled: false
`

// peers returns Vigil, Prometheus 2.42 with its receiver switched on, and
// VictoriaMetrics 1.79, each with its default settings otherwise.
func peers(tb testing.TB) (vigil, prometheus, victoriaMetrics peer) {
	tb.Helper()
	cfg := filepath.Join(tb.TempDir(), "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(vigilConfig), 0o644); err != nil {
		tb.Fatalf("write vigil config: %v", err)
	}
	peertest.Vigil(tb) // build it before anything is timed
	vigil = peer{"vigil", func(tb testing.TB, dir string) *peertest.Proc {
		return peertest.StartVigil(tb, "--config", cfg, "--data-dir", dir)
	}}
	prometheus = peer{"prometheus", func(tb testing.TB, dir string) *peertest.Proc {
		return peertest.StartPrometheus(tb, dir, "", "--web.enable-remote-write-receiver")
	}}
	victoriaMetrics = peer{"victoriametrics", func(tb testing.TB, dir string) *peertest.Proc {
		return peertest.StartVictoriaMetrics(tb, dir)
	}}
	return vigil, prometheus, victoriaMetrics
}

// machine describes where the benchmark runs, for its summary.
func machine() string {
	mem := "unknown memory"
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if kb, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB", float64(n)/(1<<20))
				}
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%d CPUs, %s; the load generator and the server share the machine, the same for every peer", runtime.NumCPU(), mem)
}

// queryScalar runs an instant query that returns one sample and returns
// its value (NaN for an empty result).
func queryScalar(ctx context.Context, base, expr string, at time.Time) (float64, error) {
	params := url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}, "nocache": {"1"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?"+params.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return 0, fmt.Errorf("query %s: decode answer: %w", expr, err)
	}
	if ans.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", expr, ans.Error)
	}
	if len(ans.Data.Result) == 0 {
		return math.NaN(), nil
	}
	s, _ := ans.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// waitStored polls base until expr at `at` equals want: VictoriaMetrics
// makes what it received searchable after a second or so.
func waitStored(ctx context.Context, base, expr string, at time.Time, want float64) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := queryScalar(ctx, base, expr, at)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s = %v, want %v", expr, got, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stats are the median and the range of values.
type stats struct{ median, min, max float64 }

func summarize(v []float64) stats {
	if len(v) == 0 {
		return stats{math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{median: m, min: s[0], max: s[len(s)-1]}
}

// ratios divides a[i] by b[i].
func ratios(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] / b[i]
	}
	return out
}

func (s stats) String() string { return fmt.Sprintf("%.3f (%.3f–%.3f)", s.median, s.min, s.max) }

// stop stops p and removes its data directory.
func stop(tb testing.TB, p *peertest.Proc, name, dir string) {
	tb.Helper()
	if err := p.Stop(); err != nil {
		tb.Errorf("stop %s: %v\n%s", name, err, p.Output())
	}
	if err := os.RemoveAll(dir); err != nil {
		tb.Errorf("remove %s: %v", dir, err)
	}
}
