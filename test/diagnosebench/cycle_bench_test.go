package diagnosebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/server"
)

// cycleChildEnv makes this test binary a measuring process of
// BenchmarkCycle: it runs serve's pipeline over the cycleSpec (JSON) it
// names and prints a cycleResult.
const cycleChildEnv = "VIGIL_DIAGNOSEBENCH_CYCLE"

// cycles is how many evaluation cycles each measuring process runs, every
// 30 s of data time up to the dataset's end: the first reads the whole
// window, the others what the previous did not. cyclesEnv sets another.
const cycles = 11

// Environment variables of BenchmarkCycle for runs by hand.
const (
	cyclesEnv = "VIGIL_DIAGNOSEBENCH_CYCLES"
	// budgetEnv sets the measuring processes' memory.budget (e.g. 8GiB),
	// which sizes the attached cache (server.CacheSamplesFor).
	budgetEnv = "VIGIL_DIAGNOSEBENCH_BUDGET"
)

// BenchmarkCycle measures what one evaluation cycle of `vigil serve`
// costs (the SLO presets, the symptom detectors, the diagnosis over a 1 h
// window at 30 s) at 16 and 128 nodes × 8 GPUs (and 1,000 with
// VIGIL_DIAGNOSEBENCH_LARGE=1), run by internal/server as serve runs it,
// in two modes over the same data:
//
//   - embedded: the store in serve's data directory holds the data;
//   - attached: Prometheus 2.42 holds it (the simulated blocks are its
//     data directory) and serve reads it as source.url, merged with an
//     empty embedded store, through a proxy that counts the bytes.
//
// Each mode runs in fresh processes, alternating embedded and attached
// three times; each process runs `cycles` cycles at the last instants of
// the data. The summary gives each mode's first cycle (the attached one
// reads the whole window) and its median later cycle (wall, CPU, bytes
// read), its peak RSS, and the median over the pairs of the ratio
// attached / embedded.
//
//	go test ./test/diagnosebench -run '^$' -bench 'Cycle' -benchtime 1x -timeout 90m
func BenchmarkCycle(b *testing.B) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		b.Skip("prometheus is not installed (make deb-deps installs it)")
	}
	for _, n := range []int{16, 128, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			if n > 512 && os.Getenv(largeEnv) != "1" {
				b.Skipf("%d nodes take minutes to simulate: set %s=1", n, largeEnv)
			}
			benchCycle(b, n)
		})
	}
}

func benchCycle(b *testing.B, nodes int) {
	ds := dataset(b, nodes, time.Hour)
	promDir := filepath.Join(b.TempDir(), "prometheus")
	if err := copyBlocks(ds.dir, promDir); err != nil {
		b.Fatal(err)
	}
	prom := peertest.StartPrometheus(b, promDir, "")
	defer func() { _ = prom.Stop() }()
	counter := newCountingProxy(b, prom.URL)
	row := cycleRow{meta: ds}
	n := cycles
	if v := os.Getenv(cyclesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			b.Fatalf("%s=%q: want a whole number of at least 2", cyclesEnv, v)
		}
	}
	for b.Loop() {
		for range processes {
			for _, mode := range []string{"embedded", "attached"} {
				cpu0, err := procCPU(prom.PID())
				if err != nil {
					b.Fatal(err)
				}
				r, err := runCycleChild(b.Context(), cycleSpec{Dir: ds.dir, Mode: mode, URL: counter.URL, Count: counter.Count, Cycles: n, Budget: os.Getenv(budgetEnv)})
				if err != nil {
					b.Fatal(err)
				}
				cpu1, err := procCPU(prom.PID())
				if err != nil {
					b.Fatal(err)
				}
				r.BackendCPU = cpu1 - cpu0
				row.add(mode, r)
			}
		}
	}
	b.StopTimer()
	results.addCycle(row)
	for _, mode := range []string{"embedded", "attached"} {
		rs := row.runs[mode]
		b.ReportMetric(median(later(rs, func(r cycleResult) []time.Duration { return r.Walls })).Seconds(), "s/cycle-"+mode)
		b.ReportMetric(median(later(rs, func(r cycleResult) []time.Duration { return r.CPUs })).Seconds(), "cpu-s/cycle-"+mode)
		b.ReportMetric(float64(maxHWM(rs))/(1<<20), "MiB-peak-RSS-"+mode)
	}
	b.ReportMetric(row.ratio(func(r cycleResult) []time.Duration { return r.Walls }), "wall-ratio")
	b.ReportMetric(row.ratio(func(r cycleResult) []time.Duration { return r.CPUs }), "cpu-ratio")
	for mode, rs := range row.runs {
		for _, r := range rs {
			if !strings.HasPrefix(r.Rank1, "ok") {
				b.Errorf("%s: wrong diagnosis: %s", mode, r.Rank1)
			}
		}
	}
}

// cycleSpec is what a measuring process of BenchmarkCycle runs.
type cycleSpec struct {
	Dir    string `json:"dir"`   // the dataset
	Mode   string `json:"mode"`  // embedded or attached
	URL    string `json:"url"`   // the counting proxy in front of Prometheus
	Count  string `json:"count"` // its counter
	Cycles int    `json:"cycles"`
	Budget string `json:"budget"` // memory.budget, "" for none
}

// cycleResult is what it prints: each cycle's wall, CPU and bytes read
// from the backend, and the process's peak RSS.
type cycleResult struct {
	Walls   []time.Duration `json:"walls"`
	CPUs    []time.Duration `json:"cpus"`
	Bytes   []int64         `json:"bytes"`
	PeakHWM int64           `json:"peak_hwm"`
	Rank1   string          `json:"rank1"`
	// BackendCPU is Prometheus's CPU time while the process ran (all its
	// cycles), measured by the benchmark.
	BackendCPU time.Duration `json:"-"`
}

func runCycleChild(ctx context.Context, spec cycleSpec) (cycleResult, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return cycleResult{}, err
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), cycleChildEnv+"="+string(js))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return cycleResult{}, fmt.Errorf("measuring process %s: %w: %s", js, err, stderr.String())
	}
	var r cycleResult
	if err := json.Unmarshal(out, &r); err != nil {
		return cycleResult{}, fmt.Errorf("measuring process %s: %w: %q", js, err, out)
	}
	return r, nil
}

// cycleChild runs serve's pipeline, headless and driven, over the spec's
// data: its embedded store a copy of the dataset's blocks (embedded), or
// an empty one with the dataset's Prometheus as source.url (attached).
func cycleChild(specJSON string) (err error) {
	var spec cycleSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	ds, err := readMeta(spec.Dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "vigil-cycle-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
	dataDir := filepath.Join(tmp, "data")
	cfg := server.SimulatedConfig(dataDir)
	cfg.Storage.Retention = model.Duration(100 * 365 * 24 * time.Hour)
	if spec.Budget != "" {
		if err := cfg.Memory.Budget.UnmarshalText([]byte(spec.Budget)); err != nil {
			return fmt.Errorf("%s: %w", budgetEnv, err)
		}
	}
	bytesRead := func() (int64, error) { return 0, nil }
	switch spec.Mode {
	case "embedded":
		if err := copyBlocks(spec.Dir, dataDir); err != nil {
			return err
		}
	case "attached":
		cfg.Source.URL = spec.URL
		bytesRead = func() (int64, error) { return proxyBytes(spec.Count) }
	default:
		return fmt.Errorf("mode %q", spec.Mode)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	at := ds.End.Add(-time.Duration(spec.Cycles-1) * 30 * time.Second)
	now := func() time.Time { return at }
	srv := server.New(server.Options{Config: cfg, Now: now, Wall: now, Headless: true, Driven: true})
	ctx := context.Background()
	if err := srv.Start(ctx, server.Host); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Shutdown(ctx)) }()
	var r cycleResult
	for i := range spec.Cycles {
		if i == 1 {
			// The profile (profileEnv) covers the later cycles.
			stop, err := startProfile(fmt.Sprintf("cpu-cycle-%s-%s.pprof", spec.Mode, filepath.Base(spec.Dir)))
			if err != nil {
				return err
			}
			defer stop()
		}
		at = ds.End.Add(-time.Duration(spec.Cycles-1-i) * 30 * time.Second)
		b0, err := bytesRead()
		if err != nil {
			return err
		}
		start, cpu0 := time.Now(), cpuTime()
		if err := srv.Watcher().Cycle(ctx, at); err != nil {
			return fmt.Errorf("cycle at %s: %w", at.Format(time.RFC3339), err)
		}
		r.Walls, r.CPUs = append(r.Walls, time.Since(start)), append(r.CPUs, cpuTime()-cpu0)
		b1, err := bytesRead()
		if err != nil {
			return err
		}
		r.Bytes = append(r.Bytes, b1-b0)
	}
	if r.PeakHWM, err = vmHWM(); err != nil {
		return err
	}
	rep, _ := srv.Watcher().Last()
	r.Rank1 = verdict(rep, ds.Truth)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// startProfile starts a CPU profile into the profileEnv directory under
// name, if that is set; stop ends it.
func startProfile(name string) (stop func(), err error) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// copyBlocks copies the dataset's TSDB blocks (not its meta.json) into
// dst, which a store or Prometheus then opens as its data directory.
func copyBlocks(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if rel == "meta.json" || rel == "lock" {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return errors.Join(err, in.Close())
		}
		_, err = io.Copy(out, in)
		return errors.Join(err, in.Close(), out.Close())
	})
}

// countingProxy forwards TCP connections to Prometheus and counts the
// bytes Prometheus sends (its answers, headers included); its Count
// server answers GET / with the count.
type countingProxy struct {
	URL   string // the proxy, for source.url
	Count string // the counter
	n     atomic.Int64
}

func newCountingProxy(b *testing.B, target string) *countingProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := &countingProxy{URL: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.forward(c, u.Host) })
		}
	})
	counter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, p.n.Load())
	}))
	p.Count = counter.URL
	b.Cleanup(func() {
		counter.Close()
		_ = ln.Close()
		wg.Wait()
	})
	return p
}

// forward copies c to a new connection to host and back, counting what
// comes back; each side's end closes the other.
func (p *countingProxy) forward(c net.Conn, host string) {
	defer c.Close()
	up, err := net.Dial("tcp", host)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, c)
		_ = up.Close()
	}()
	_, _ = io.Copy(countingWriter{c, &p.n}, up)
	_ = c.Close()
	<-done
}

// procCPU is a process's user and system time so far, from /proc.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th, in clock ticks (100 a second).
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("read /proc/%d/stat: %q", pid, data)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// countingWriter counts what it writes, as it writes it.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	k, err := c.w.Write(b)
	c.n.Add(int64(k))
	return k, err
}

func proxyBytes(counter string) (int64, error) {
	resp, err := http.Get(counter)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(body), 10, 64)
}

// cycleRow is one size of the summary: each mode's processes, in the
// order they ran (pairs alternate).
type cycleRow struct {
	meta
	runs map[string][]cycleResult
}

func (r *cycleRow) add(mode string, c cycleResult) {
	if r.runs == nil {
		r.runs = map[string][]cycleResult{}
	}
	r.runs[mode] = append(r.runs[mode], c)
}

// ratio is the median over the pairs of attached / embedded of the median
// later cycle.
func (r *cycleRow) ratio(of func(cycleResult) []time.Duration) float64 {
	var rs []float64
	for i := range min(len(r.runs["embedded"]), len(r.runs["attached"])) {
		e := median(of(r.runs["embedded"][i])[1:])
		a := median(of(r.runs["attached"][i])[1:])
		if e > 0 {
			rs = append(rs, float64(a)/float64(e))
		}
	}
	return median(rs)
}

// later gathers the cycles after the first of every process.
func later(rs []cycleResult, of func(cycleResult) []time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		out = append(out, of(r)[1:]...)
	}
	return out
}

func first(rs []cycleResult, of func(cycleResult) []time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		out = append(out, of(r)[0])
	}
	return out
}

func maxHWM(rs []cycleResult) int64 {
	var m int64
	for _, r := range rs {
		m = max(m, r.PeakHWM)
	}
	return m
}

func medianBytes(rs []cycleResult, firstOnly bool) int64 {
	var bs []int64
	for _, r := range rs {
		if firstOnly {
			bs = append(bs, r.Bytes[0])
			continue
		}
		bs = append(bs, r.Bytes[1:]...)
	}
	return median(bs)
}

func (t *resultTable) addCycle(r cycleRow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cycles = append(t.cycles, r)
}

// printCycles writes the cycle summary.
func printCycles(tw *tabwriter.Writer, rows []cycleRow) {
	fmt.Fprintln(tw, "nodes\tGPUs\tseries\tmode\tfirst cycle\tits CPU\tread\tlater cycles (runs: range)\ttheir CPU\tread each\tpeak RSS\tPrometheus CPU a cycle\t")
	walls := func(r cycleResult) []time.Duration { return r.Walls }
	cpus := func(r cycleResult) []time.Duration { return r.CPUs }
	for _, row := range rows {
		for _, mode := range []string{"embedded", "attached"} {
			rs := row.runs[mode]
			var backend []time.Duration
			for _, r := range rs {
				backend = append(backend, r.BackendCPU/time.Duration(len(r.Walls)))
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%.1f MB\t%s\t%s\t%.1f MB\t%d MiB\t%s\t\n", row.Nodes, row.GPUs, row.Series, mode,
				secs(median(first(rs, walls))), secs(median(first(rs, cpus))), float64(medianBytes(rs, true))/1e6,
				spread(later(rs, walls)), secs(median(later(rs, cpus))), float64(medianBytes(rs, false))/1e6, maxHWM(rs)>>20, secs(median(backend)))
		}
		fmt.Fprintf(tw, "%d\t\t\tattached / embedded, median of %d pairs\t\t\t\twall ×%.2f\tCPU ×%.2f\t\t\t\t\n", row.Nodes,
			min(len(row.runs["embedded"]), len(row.runs["attached"])), row.ratio(walls), row.ratio(cpus))
	}
}

// replayEnv=1 adds BenchmarkReplay's 24 h range (a 25 h simulation of 128
// nodes: about 330 M samples, a quarter of an hour to simulate here);
// replayRangesEnv names other ranges to run (e.g. 6h), comma-separated.
const (
	replayEnv       = "VIGIL_DIAGNOSEBENCH_REPLAY_DAY"
	replayRangesEnv = "VIGIL_DIAGNOSEBENCH_REPLAY_RANGES"
)

// BenchmarkReplay runs `vigil replay --prometheus` (the binary, as a user
// runs it) over the last hour of a 2 h run of 128 nodes (and of 16, for
// the growth with nodes) held by
// Prometheus 2.42, at 30 s: 121 cycles, each reading only what the one
// before did not (the range lies far behind the wall clock: settled). It
// reports the process's wall, CPU and peak RSS, the wall per simulated
// cycle, Prometheus's CPU and the bytes it sent (through a counting
// proxy); the replay must page the injected fault.
//
//	go test ./test/diagnosebench -run '^$' -bench 'Replay' -benchtime 1x -timeout 90m
func BenchmarkReplay(b *testing.B) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		b.Skip("prometheus is not installed (make deb-deps installs it)")
	}
	ranges := []time.Duration{time.Hour}
	if v := os.Getenv(replayRangesEnv); v != "" {
		for _, f := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d < time.Minute {
				b.Fatalf("%s=%q: want durations of a minute or more, comma-separated", replayRangesEnv, v)
			}
			ranges = append(ranges, d)
		}
	}
	ranges = append(ranges, 24*time.Hour)
	// The same hour at 16 nodes, for how a replay grows with the nodes.
	b.Run("nodes=16/range=1h", func(b *testing.B) { benchReplay(b, 16, time.Hour) })
	for _, rng := range ranges {
		b.Run("nodes=128/range="+fmtWindow(rng), func(b *testing.B) {
			if rng == 24*time.Hour && os.Getenv(replayEnv) != "1" {
				b.Skipf("a %s replay takes long here: set %s=1", fmtWindow(rng), replayEnv)
			}
			benchReplay(b, 128, rng)
		})
	}
}

func benchReplay(b *testing.B, nodes int, rng time.Duration) {
	vigil := peertest.Vigil(b)
	ds := dataset(b, nodes, rng+time.Hour)
	promDir := filepath.Join(b.TempDir(), "prometheus")
	if err := copyBlocks(ds.dir, promDir); err != nil {
		b.Fatal(err)
	}
	prom := peertest.StartPrometheus(b, promDir, "")
	defer func() { _ = prom.Stop() }()
	counter := newCountingProxy(b, prom.URL)
	from, to := ds.End.Add(-rng), ds.End
	n := int(rng/(30*time.Second)) + 1
	var walls, cpus, backend []time.Duration
	var hwm, bytes int64
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), vigil, "replay", "--json", "--prometheus", counter.URL,
			"--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--interval", "30s")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cpu0, err := procCPU(prom.PID())
		if err != nil {
			b.Fatal(err)
		}
		b0, err := proxyBytes(counter.Count)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("vigil replay: %v: %s", err, stderr.String())
		}
		walls = append(walls, time.Since(start))
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			hwm = max(hwm, ru.Maxrss<<10)
		}
		cpu1, err := procCPU(prom.PID())
		if err != nil {
			b.Fatal(err)
		}
		backend = append(backend, cpu1-cpu0)
		b1, err := proxyBytes(counter.Count)
		if err != nil {
			b.Fatal(err)
		}
		bytes = max(bytes, b1-b0)
		var rep struct {
			Pages []struct {
				Severity string `json:"severity"`
				Causes   []struct {
					Kind   string            `json:"kind"`
					Entity map[string]string `json:"entity"`
				} `json:"causes"`
			} `json:"pages"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			b.Fatal(err)
		}
		paged := false
		for _, p := range rep.Pages {
			if p.Severity == "page" && len(p.Causes) > 0 && p.Causes[0].Kind == ds.Truth.Kind && p.Causes[0].Entity["node"] == ds.Truth.Entity["node"] {
				paged = true
			}
		}
		if !paged {
			b.Errorf("the replay never paged %s on %s first: %s", ds.Truth.Kind, ds.Truth.Entity["node"], out)
		}
	}
	b.StopTimer()
	results.addReplay(replayRow{meta: ds, rng: rng, cycles: n, walls: walls, cpus: cpus, backend: backend, hwm: hwm, bytes: bytes})
	b.ReportMetric(median(walls).Seconds(), "s/replay")
	b.ReportMetric(median(walls).Seconds()/float64(n), "s/cycle")
	b.ReportMetric(median(cpus).Seconds(), "cpu-s/replay")
	b.ReportMetric(median(backend).Seconds(), "backend-cpu-s/replay")
	b.ReportMetric(float64(bytes)/1e6, "MB-read")
	b.ReportMetric(float64(hwm)/(1<<20), "MiB-peak-RSS")
}

// replayRow is one replay of the summary.
type replayRow struct {
	meta
	rng                  time.Duration
	cycles               int
	walls, cpus, backend []time.Duration
	hwm, bytes           int64
}

func (t *resultTable) addReplay(r replayRow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.replays = append(t.replays, r)
}

func printReplays(tw *tabwriter.Writer, rows []replayRow) {
	fmt.Fprintln(tw, "nodes\tseries\trange\tcycles\treplay (runs: range)\tits CPU\tper cycle (CPU)\tpeak RSS\tread\tPrometheus CPU\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s\t%s (%s)\t%d MiB\t%.0f MB\t%s\t\n", r.Nodes, r.Series, fmtWindow(r.rng), r.cycles,
			spread(r.walls), secs(median(r.cpus)), secs(median(r.walls)/time.Duration(r.cycles)), secs(median(r.cpus)/time.Duration(r.cycles)),
			r.hwm>>20, float64(r.bytes)/1e6, secs(median(r.backend)))
	}
}
