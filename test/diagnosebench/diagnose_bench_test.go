package diagnosebench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
)

// Environment variables that steer the benchmarks.
const (
	// largeEnv=1 adds the 1,000-node cluster (several minutes to simulate
	// and a few GiB of memory while it is built).
	largeEnv = "VIGIL_DIAGNOSEBENCH_LARGE"
	// dirEnv names a directory that keeps the simulated stores and dumps
	// between runs (default: a temporary directory, removed at the end).
	dirEnv = "VIGIL_DIAGNOSEBENCH_DIR"
	// profileEnv names a directory where each measuring process writes the
	// CPU and allocation profiles of its diagnosis (cpu-*.pprof,
	// allocs-*.pprof).
	profileEnv = "VIGIL_DIAGNOSEBENCH_PROFILE"
	// childEnv makes this test binary a measuring process: it diagnoses the
	// store in the named directory once and prints a childResult as JSON.
	childEnv = "VIGIL_DIAGNOSEBENCH_CHILD"
)

// processes is how many fresh processes measure each case's peak memory
// and wall time (their median wall is reported).
const processes = 3

var (
	root    string // where datasets live
	results = &resultTable{}
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(cycleChildEnv); spec != "" {
		if err := cycleChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(childEnv); dir != "" {
		if err := child(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	root = os.Getenv(dirEnv)
	keep := root != ""
	if !keep {
		var err error
		if root, err = os.MkdirTemp("", "vigil-diagnosebench-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	results.print(os.Stdout)
	if !keep {
		if err := os.RemoveAll(root); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// BenchmarkDiagnoseNodes diagnoses clusters of 16 to 1,000 nodes of eight
// H100s over a 1 h window at 30 s, at the end of the window, half an hour
// after NVLink degraded on one GPU of the training job. s/diagnose is the
// median in-process wall time (the store open, its pages cached);
// s/process is the median wall of the diagnosis in `processes` fresh
// processes and MiB-peak-RSS their highest VmHWM. Targets (issue 6): 128
// nodes ≤ 2 s and ≤ 1 GiB, 1,000 nodes ≤ 15 s. cpu-s/* is the CPU time of
// the same diagnoses, steadier than the wall on a shared machine. Each size
// is simulated once (on 2 shared cores: 16 nodes 2 s, 128 nodes 12 s, 512
// nodes 50 s, 1,000 nodes 2 min); then each diagnosis takes 0.3 s to 25 s.
// The whole package at -benchtime 1x takes about 10 minutes, half of it
// the 128-node import.
//
//	go test ./test/diagnosebench -run '^$' -bench 'DiagnoseNodes' -benchtime 3x -timeout 90m
//	VIGIL_DIAGNOSEBENCH_LARGE=1 go test ./test/diagnosebench -run '^$' -bench 'DiagnoseNodes/nodes=1000$' -benchtime 3x -timeout 90m
func BenchmarkDiagnoseNodes(b *testing.B) {
	for _, n := range []int{16, 64, 128, 512, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			if n > 512 && os.Getenv(largeEnv) != "1" {
				b.Skipf("%d nodes take minutes to simulate: set %s=1", n, largeEnv)
			}
			benchDiagnose(b, n, time.Hour)
		})
	}
}

// BenchmarkDiagnoseWindow diagnoses the 128-node cluster over windows of
// 15 minutes, 1 hour and 3 hours at 30 s (the simulated run is as long as
// the window).
//
//	go test ./test/diagnosebench -run '^$' -bench 'DiagnoseWindow' -benchtime 3x -timeout 90m
func BenchmarkDiagnoseWindow(b *testing.B) {
	for _, w := range []time.Duration{15 * time.Minute, time.Hour, 3 * time.Hour} {
		b.Run("window="+fmtWindow(w), func(b *testing.B) {
			benchDiagnose(b, 128, w)
		})
	}
}

// BenchmarkImport reads the OpenMetrics dump of a 1 h run of 16 and 128
// nodes (fileimport.Read) and writes it as blocks of a temporary store
// (fileimport.OpenTemp): what `vigil diagnose --input` does before it
// diagnoses. It is slow (128 nodes: a 2.8 GiB dump, minutes per import);
// the 1,000-node dump (about 20 GiB) is over the reader's 4 GiB limit and
// is not measured.
//
//	go test ./test/diagnosebench -run '^$' -bench 'Import' -benchtime 3x -timeout 90m
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{16, 128} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			benchImport(b, n, time.Hour)
		})
	}
}

func benchDiagnose(b *testing.B, nodes int, window time.Duration) {
	ds := dataset(b, nodes, window)
	st, err := openStore(ds)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := diagnose.New(diagnose.Options{Window: window})
	if err != nil {
		b.Fatal(errors.Join(err, st.Close()))
	}
	ctx := b.Context()
	var (
		walls, cpus []time.Duration
		rep         *diagnose.Report
	)
	b.ReportAllocs()
	for b.Loop() {
		start, cpu0 := time.Now(), cpuTime()
		if rep, err = eng.Diagnose(ctx, st, ds.End); err != nil {
			b.Fatal(errors.Join(err, st.Close()))
		}
		walls, cpus = append(walls, time.Since(start)), append(cpus, cpuTime()-cpu0)
	}
	b.StopTimer()
	// The measuring processes need the store's lock.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	row := diagnoseRow{meta: ds, walls: walls, cpus: cpus, verdict: verdict(rep, ds.Truth)}
	for range processes {
		c, err := runChild(ctx, ds)
		if err != nil {
			b.Fatal(err)
		}
		row.children = append(row.children, c)
		if v := c.Rank1; v != row.verdict {
			row.verdict += "; process: " + v
		}
	}
	results.addDiagnose(row)
	b.ReportMetric(median(walls).Seconds(), "s/diagnose")
	b.ReportMetric(median(cpus).Seconds(), "cpu-s/diagnose")
	b.ReportMetric(row.processWall().Seconds(), "s/process")
	b.ReportMetric(median(row.processCPUs()).Seconds(), "cpu-s/process")
	b.ReportMetric(float64(row.peakRSS())/(1<<20), "MiB-peak-RSS")
	b.ReportMetric(float64(ds.Series), "series")
	b.ReportMetric(float64(ds.Samples), "samples")
	if !strings.HasPrefix(row.verdict, "ok") || strings.Contains(row.verdict, "process: ") {
		b.Errorf("wrong diagnosis: %s", row.verdict)
	}
}

func benchImport(b *testing.B, nodes int, window time.Duration) {
	ds := dataset(b, nodes, window)
	path, size := dump(b, ds)
	ctx := b.Context()
	now := func() time.Time { return ds.End }
	var reads, opens []time.Duration
	checked := false
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		opts := fileimport.DefaultOptions(ds.End)
		opts.MaxBytes = max(opts.MaxBytes, size)
		file, err := fileimport.Read(filepath.Base(path), bufio.NewReaderSize(f, 1<<20), opts)
		if err := errors.Join(err, f.Close()); err != nil {
			b.Fatal(err)
		}
		read := time.Now()
		ts, err := fileimport.OpenTemp(ctx, []*fileimport.File{file}, now, nil)
		if err != nil {
			b.Fatal(err)
		}
		reads, opens = append(reads, read.Sub(start)), append(opens, time.Since(read))
		b.StopTimer()
		if !checked {
			// The imported data must diagnose like the simulated store.
			checked = true
			eng, err := diagnose.New(diagnose.Options{Window: window})
			if err != nil {
				b.Fatal(err)
			}
			rep, err := eng.Diagnose(ctx, ts, ds.End)
			if err != nil {
				b.Fatal(err)
			}
			if v := verdict(rep, ds.Truth); !strings.HasPrefix(v, "ok") {
				b.Errorf("imported data diagnosed wrong: %s", v)
			}
		}
		if err := ts.Close(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
	}
	row := importRow{nodes: nodes, window: window, bytes: size, samples: ds.Samples, reads: reads, opens: opens}
	results.addImport(row)
	b.ReportMetric(row.total().Seconds(), "s/import")
	b.ReportMetric(float64(ds.Samples)/row.total().Seconds(), "samples/s")
	b.ReportMetric(float64(size)/(1<<20), "MiB-file")
}

// meta describes one simulated dataset; it is stored as meta.json next
// to its TSDB.
type meta struct {
	Nodes   int           `json:"nodes"`
	GPUs    int           `json:"gpus"`
	Window  time.Duration `json:"window"`
	Series  int           `json:"series"`
	Samples int           `json:"samples"`
	// End is the last scrape: the evaluation time.
	End   time.Time `json:"end"`
	Truth sim.Fault `json:"truth"`
	// Simulate is how long the simulation into the store took.
	Simulate time.Duration `json:"simulate"`
	// HeadWall is one diagnosis of the data in the head, before it was
	// persisted (the path of `vigil serve`).
	HeadWall    time.Duration `json:"head_wall"`
	HeadVerdict string        `json:"head_verdict"`

	dir string
}

// simConfig is the simulated cluster: a training job on all but four
// nodes, eight vLLM replicas of two GPUs on the others.
func simConfig(nodes int, window time.Duration) sim.Config {
	return sim.Config{Seed: 1, Nodes: nodes, TrainingNodes: nodes - 4, Replicas: 8, Duration: window, GPUModel: "H100"}
}

var buildMu sync.Mutex

// dataset returns the store of a simulated cluster, simulating it the first
// time it is asked for.
func dataset(b *testing.B, nodes int, window time.Duration) meta {
	b.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	dir := filepath.Join(root, fmt.Sprintf("nodes%d-%s", nodes, fmtWindow(window)))
	if m, err := readMeta(dir); err == nil {
		return m
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	b.Logf("simulating %d nodes over %s into %s", nodes, window, dir)
	m, err := build(b.Context(), dir, nodes, window)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("simulated %d series, %d samples in %s; one diagnosis from the head took %s (%s)",
		m.Series, m.Samples, m.Simulate.Round(time.Millisecond), m.HeadWall.Round(time.Millisecond), m.HeadVerdict)
	return m
}

// build simulates a cluster into an embedded store in dir, diagnoses it
// once from the head, persists the head as a block and writes meta.json.
func build(ctx context.Context, dir string, nodes int, window time.Duration) (_ meta, err error) {
	sc, err := sim.ParseScenario("nvlink_degraded")
	if err != nil {
		return meta{}, err
	}
	s, err := sim.New(simConfig(nodes, window), sc)
	if err != nil {
		return meta{}, err
	}
	cfg := s.Config()
	m := meta{Nodes: nodes, GPUs: nodes * cfg.GPUsPerNode, Window: window, Truth: s.Truth()[0], dir: dir}
	clock := sim.NewClock(cfg.Start)
	scfg := store.DefaultEmbeddedConfig(dir)
	scfg.OutOfOrderWindow = 0
	scfg.MaxExemplars = 0
	st, err := store.OpenEmbedded(scfg, clock.Now, nil, nil)
	if err != nil {
		return meta{}, err
	}
	closed := false
	defer func() {
		if !closed {
			err = errors.Join(err, st.Close())
		}
	}()
	start := time.Now()
	err = s.Run(ctx, st, sim.RunOptions{Clock: clock, OnScrape: func(_ context.Context, sc sim.Scrape) error {
		m.Samples += sc.Samples
		return nil
	}})
	if err != nil {
		return meta{}, fmt.Errorf("simulate: %w", err)
	}
	m.Simulate = time.Since(start)
	m.End = clock.Now()
	head := st.DB().Head()
	m.Series = int(head.NumSeries())

	eng, err := diagnose.New(diagnose.Options{Window: window})
	if err != nil {
		return meta{}, err
	}
	start = time.Now()
	rep, err := eng.Diagnose(ctx, st, m.End)
	if err != nil {
		return meta{}, fmt.Errorf("diagnose the head: %w", err)
	}
	m.HeadWall = time.Since(start)
	m.HeadVerdict = verdict(rep, m.Truth)

	if err := st.DB().CompactHead(tsdb.NewRangeHead(head, head.MinTime(), head.MaxTime())); err != nil {
		return meta{}, fmt.Errorf("persist the head: %w", err)
	}
	var persisted uint64
	for _, blk := range st.DB().Blocks() {
		persisted += blk.Meta().Stats.NumSamples
	}
	if persisted != uint64(m.Samples) {
		return meta{}, fmt.Errorf("persist the head: %d samples in blocks, %d simulated", persisted, m.Samples)
	}
	closed = true
	if err := st.Close(); err != nil {
		return meta{}, err
	}
	// The blocks hold everything: without the WAL (truncated only in part)
	// a store opens as fast and small as `vigil diagnose --input`'s.
	for _, d := range []string{"wal", "chunks_head"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			return meta{}, err
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return meta{}, err
	}
	return m, os.WriteFile(filepath.Join(dir, "meta.json"), data, 0o644)
}

func readMeta(dir string) (meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return meta{}, err
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil {
		return meta{}, fmt.Errorf("read %s: %w", dir, err)
	}
	m.dir = dir
	return m, nil
}

// dump writes the dataset's run as OpenMetrics text next to its store,
// the first time it is asked for, and returns its path and size.
func dump(b *testing.B, ds meta) (string, int64) {
	b.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	path := ds.dir + ".om"
	if fi, err := os.Stat(path); err == nil {
		return path, fi.Size()
	}
	sc, err := sim.ParseScenario("nvlink_degraded")
	if err != nil {
		b.Fatal(err)
	}
	s, err := sim.New(simConfig(ds.Nodes, ds.Window), sc)
	if err != nil {
		b.Fatal(err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = s.WriteOpenMetrics(b.Context(), w)
	if err := errors.Join(err, w.Flush(), f.Close(), os.Rename(tmp, path)); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, fi.Size()
}

// openStore opens a dataset's store as `vigil diagnose --input` opens its
// temporary one (fileimport.OpenTemp), its clock stopped at the end.
func openStore(ds meta) (*store.Embedded, error) {
	cfg := store.DefaultEmbeddedConfig(ds.dir)
	cfg.Retention = time.Duration(math.MaxInt64)
	cfg.OutOfOrderWindow = 0
	return store.OpenEmbedded(cfg, func() time.Time { return ds.End }, nil, nil)
}

// verdict says whether the report names the injected fault first: "ok"
// or what it named instead.
func verdict(rep *diagnose.Report, truth sim.Fault) string {
	if rep == nil || len(rep.Causes) == 0 {
		return "no cause"
	}
	c := rep.Causes[0]
	if c.Kind == truth.Kind && c.Entity["node"] == truth.Entity["node"] {
		return fmt.Sprintf("ok (%s on %s, %.2f)", c.Kind, c.Entity["node"], c.Confidence)
	}
	return fmt.Sprintf("rank 1 is %s on %v, want %s on %s", c.Kind, c.Entity, truth.Kind, truth.Entity["node"])
}

// childResult is what a measuring process prints.
type childResult struct {
	// Wall is the diagnosis alone; CPU its user and system time.
	Wall time.Duration `json:"wall"`
	CPU  time.Duration `json:"cpu"`
	// OpenHWM is VmHWM after the store was opened, PeakHWM after the
	// diagnosis (bytes).
	OpenHWM int64 `json:"open_hwm"`
	PeakHWM int64 `json:"peak_hwm"`
	// Alloc is the bytes the diagnosis allocated.
	Alloc uint64 `json:"alloc"`
	Rank1 string `json:"rank1"`
}

// runChild diagnoses ds once in a fresh process (this test binary).
func runChild(ctx context.Context, ds meta) (childResult, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+ds.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return childResult{}, fmt.Errorf("measuring process on %s: %w: %s", ds.dir, err, stderr.Bytes())
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		return childResult{}, fmt.Errorf("measuring process on %s: %w: %q", ds.dir, err, out)
	}
	return r, nil
}

// child is the measuring process: it opens the store in dir, diagnoses
// it once and prints a childResult.
func child(dir string) (err error) {
	ds, err := readMeta(dir)
	if err != nil {
		return err
	}
	st, err := openStore(ds)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	eng, err := diagnose.New(diagnose.Options{Window: ds.Window})
	if err != nil {
		return err
	}
	runtime.GC()
	var r childResult
	if r.OpenHWM, err = vmHWM(); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc
	prof := os.Getenv(profileEnv)
	name := filepath.Base(dir)
	if prof != "" {
		f, err := os.Create(filepath.Join(prof, "cpu-"+name+".pprof"))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	start, cpu0 := time.Now(), cpuTime()
	rep, err := eng.Diagnose(context.Background(), st, ds.End)
	r.Wall, r.CPU = time.Since(start), cpuTime()-cpu0
	if prof != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	if r.PeakHWM, err = vmHWM(); err != nil {
		return err
	}
	runtime.ReadMemStats(&ms)
	r.Alloc = ms.TotalAlloc - alloc
	r.Rank1 = verdict(rep, ds.Truth)
	if prof != "" {
		f, err := os.Create(filepath.Join(prof, "allocs-"+name+".pprof"))
		if err != nil {
			return err
		}
		err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		if err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// cpuTime is the user and system CPU time of this process so far: on a
// shared machine it varies less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmHWM reads this process's peak resident set size from /proc.
func vmHWM() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read peak RSS: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read peak RSS %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("read peak RSS: no VmHWM in /proc/self/status")
}

// spread writes the median of ds with its range.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d: %.2f–%.2f)", secs(median(ds)), len(ds), slices.Min(ds).Seconds(), slices.Max(ds).Seconds())
}

func median[T cmp.Ordered](ds []T) T {
	if len(ds) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// fmtWindow writes 15m, 1h, 3h, 1h30m.
func fmtWindow(w time.Duration) string {
	s := w.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// diagnoseRow is one case of the summary.
type diagnoseRow struct {
	meta
	walls, cpus []time.Duration
	children    []childResult
	verdict     string
}

func (r diagnoseRow) processWalls() []time.Duration {
	var ws []time.Duration
	for _, c := range r.children {
		ws = append(ws, c.Wall)
	}
	return ws
}

func (r diagnoseRow) processCPUs() []time.Duration {
	var cs []time.Duration
	for _, c := range r.children {
		cs = append(cs, c.CPU)
	}
	return cs
}

func (r diagnoseRow) processWall() time.Duration { return median(r.processWalls()) }

func (r diagnoseRow) peakRSS() int64 {
	var m int64
	for _, c := range r.children {
		m = max(m, c.PeakHWM)
	}
	return m
}

// importRow is one import case of the summary.
type importRow struct {
	nodes        int
	window       time.Duration
	bytes        int64
	samples      int
	reads, opens []time.Duration
}

// total is the median import time.
func (r importRow) total() time.Duration {
	var totals []time.Duration
	for i := range r.reads {
		totals = append(totals, r.reads[i]+r.opens[i])
	}
	return median(totals)
}

// resultTable collects the cases for the summary TestMain prints.
type resultTable struct {
	mu       sync.Mutex
	diagnose []diagnoseRow
	imports  []importRow
	cycles   []cycleRow
	replays  []replayRow
}

func (t *resultTable) addDiagnose(r diagnoseRow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.diagnose = append(t.diagnose, r)
}

func (t *resultTable) addImport(r importRow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.imports = append(t.imports, r)
}

func (t *resultTable) print(out *os.File) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.diagnose) == 0 && len(t.imports) == 0 && len(t.cycles) == 0 && len(t.replays) == 0 {
		return
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(out, "\ndiagnosis at cluster scale (%d CPUs, GOMAXPROCS %d, load average %s)\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(t.diagnose) > 0 {
		fmt.Fprintln(tw, "nodes\tGPUs\twindow\tseries\tsamples\tdiagnose, fresh process (runs: range)\tits CPU time\tpeak RSS\tRSS open\tdiagnose, in-process\tits CPU time\tfrom head\tsimulated in\trank 1\t")
		for _, r := range t.diagnose {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%d\t%s\t%s\t%d MiB\t%d MiB\t%s\t%s\t%s\t%s\t%s\t\n",
				r.Nodes, r.GPUs, fmtWindow(r.Window), r.Series, r.Samples, spread(r.processWalls()), secs(median(r.processCPUs())),
				r.peakRSS()>>20, r.openHWM()>>20, spread(r.walls), secs(median(r.cpus)), secs(r.HeadWall), secs(r.Simulate), r.verdict)
		}
	}
	if len(t.imports) > 0 {
		if err := tw.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Fprintln(out)
		fmt.Fprintln(tw, "nodes\twindow\tOpenMetrics\tsamples\tRead\tOpenTemp\timport (runs: range)\tsamples/s\t")
		for _, r := range t.imports {
			var totals []time.Duration
			for i := range r.reads {
				totals = append(totals, r.reads[i]+r.opens[i])
			}
			fmt.Fprintf(tw, "%d\t%s\t%d MiB\t%d\t%s\t%s\t%s\t%.0f\t\n",
				r.nodes, fmtWindow(r.window), r.bytes>>20, r.samples, secs(median(r.reads)), secs(median(r.opens)),
				spread(totals), float64(r.samples)/r.total().Seconds())
		}
	}
	if len(t.cycles) > 0 {
		if err := tw.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Fprintln(out)
		printCycles(tw, t.cycles)
	}
	if len(t.replays) > 0 {
		if err := tw.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Fprintln(out)
		printReplays(tw, t.replays)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

func (r diagnoseRow) openHWM() int64 {
	var m int64
	for _, c := range r.children {
		m = max(m, c.OpenHWM)
	}
	return m
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
