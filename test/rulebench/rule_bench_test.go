package rulebench

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/peertest"
)

const (
	// evalInterval is both servers' evaluation interval.
	evalInterval = 15 * time.Second
	// warmUpCycles are not measured: the first reads the blocks cold and
	// restores the alerts' for state.
	warmUpCycles = 1
	// measuredCycles are measured in every run.
	measuredCycles = 3
	// runsPerServer is how many times each server runs: Vigil,
	// Prometheus, Vigil, Prometheus, ...
	runsPerServer = 3
	// lookback is both servers' lookback delta: long enough that the
	// gauges of data ending before the benchmark stay visible through all
	// its runs, as they would with live scrapes.
	lookback = 15 * time.Minute
	// pollEvery is how often a run reads the server's metrics (each read
	// costs the server a little CPU, the same for both).
	pollEvery = 500 * time.Millisecond
	// loadAllowance is how long writing and loading the data set may take:
	// the data ends that long after the benchmark starts, and the first run
	// waits until the end has passed, so that the first runs evaluate over
	// data as fresh as a live scrape's and the 5m windows are not empty.
	loadAllowance = 2 * time.Minute
)

// vigilConfig is Vigil's configuration: the presets every evalInterval,
// no self-monitoring (Prometheus scrapes nothing either).
var vigilConfig = fmt.Sprintf(`storage:
  retention: 100y
self_monitoring:
  enabled: false
query:
  lookback_delta: %s
evaluation:
  interval: %s
  slo_presets: true
`, lookback, evalInterval)

// promConfig is Prometheus's configuration: the generated rule files.
func promConfig(rulesDir string) string {
	return fmt.Sprintf("global:\n  evaluation_interval: %s\nrule_files:\n  - %s\n", evalInterval, filepath.Join(rulesDir, "*.yml"))
}

// benchEnv is what every run starts from.
type benchEnv struct {
	dir                 string
	vigilData, promData string // loaded once; each run gets a copy
	vigilCfg, rulesDir  string
	end                 time.Time
	st                  stats
	gen, load           time.Duration
	ruleFiles           int
}

// lookOrSkip skips the benchmark when a component is not installed.
func lookOrSkip(b *testing.B, name string) {
	if _, err := exec.LookPath(name); err != nil {
		b.Skipf("%s is not installed (make deps installs Prometheus 2.42 and promtool)", name)
	}
}

// setUp builds Vigil, writes the rules and the data set (ending
// loadAllowance from now) and loads it into both stores, promtool and
// vigil import side by side, then waits until the data's end has passed:
// a server must never see samples from its future (Prometheus would refuse
// the rules' samples older than its newest block).
func setUp(b *testing.B) *benchEnv {
	b.Helper()
	lookOrSkip(b, "prometheus")
	lookOrSkip(b, "promtool")
	vigil := peertest.Vigil(b)
	e := &benchEnv{dir: b.TempDir()}
	e.rulesDir = filepath.Join(e.dir, "rules")
	out := peertest.Run(b, vigil, "rules", "generate", "--format", "prometheus", "--out", e.rulesDir)
	e.ruleFiles = len(strings.Fields(out))
	e.vigilCfg = filepath.Join(e.dir, "vigil.yaml")
	if err := os.WriteFile(e.vigilCfg, []byte(vigilConfig), 0o644); err != nil {
		b.Fatal(err)
	}

	begin := time.Now()
	e.end = begin.Add(loadAllowance).Truncate(time.Second)
	dump := filepath.Join(e.dir, "data.om")
	f, err := os.Create(dump)
	if err != nil {
		b.Fatal(err)
	}
	e.st, err = newDataset(benchShape, e.end).write(f)
	if err = errors.Join(err, f.Close()); err != nil {
		b.Fatalf("write the data set: %v", err)
	}
	e.gen = time.Since(begin)

	step := time.Now()
	e.promData, e.vigilData = filepath.Join(e.dir, "prometheus"), filepath.Join(e.dir, "vigil")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, args := range [][]string{
		{"promtool", "tsdb", "create-blocks-from", "openmetrics", "--quiet", dump, e.promData},
		{vigil, "import", "--data-dir", e.vigilData, dump},
	} {
		wg.Go(func() {
			if out, err := exec.CommandContext(b.Context(), args[0], args[1:]...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(append(errs, os.Remove(dump))...); err != nil {
		b.Fatalf("load the data set: %v", err)
	}
	e.load = time.Since(step)
	if wait := time.Until(e.end.Add(5 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	return e
}

// cycle is what one measured evaluation cycle cost.
type cycle struct {
	rules     time.Duration // sum of every rule's latest evaluation duration
	ruleCPU   time.Duration // the process's CPU time while those ran
	evals     int           // rules evaluated in the cycle
	groupLast time.Duration // Prometheus: its groups' last durations, summed
	whole     time.Duration // Vigil: the whole watcher cycle
	cpu       time.Duration // the process's CPU time
}

// evalRun is one run of one server.
type evalRun struct {
	server   string
	dataAge  time.Duration // now - end of data at the first measured cycle
	cycles   []cycle
	rss, hwm int64
	recorded int // series the rules wrote (slo:*, vigil:*)
	alerts   int // ALERTS series, pending or firing
}

func (r evalRun) median(f func(cycle) time.Duration) time.Duration {
	v := make([]float64, len(r.cycles))
	for i, c := range r.cycles {
		v[i] = float64(f(c))
	}
	return time.Duration(medianRange(v).median)
}

// startServer starts a server on a fresh copy of its data.
func (e *benchEnv) startServer(b *testing.B, server string) *peertest.Proc {
	b.Helper()
	data := filepath.Join(b.TempDir(), server)
	if server == "vigil" {
		copyDir(b, e.vigilData, data)
		return peertest.StartVigil(b, "--config", e.vigilCfg, "--data-dir", data)
	}
	copyDir(b, e.promData, data)
	return peertest.StartPrometheus(b, data, promConfig(e.rulesDir), "--query.lookback-delta="+lookback.String())
}

// run starts server, waits for warmUpCycles+measuredCycles evaluation
// cycles, measures each cycle after the warm-up, and stops it.
func (e *benchEnv) run(b *testing.B, server string) evalRun {
	b.Helper()
	ctx := b.Context()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	proc := e.startServer(b, server)
	defer func() {
		if err := proc.Stop(); err != nil {
			b.Errorf("stop %s: %v\n%s", server, err, proc.Output())
		}
	}()
	vigil := server == "vigil"
	r := evalRun{server: server}
	cpu := startCPUSampler(proc.PID())
	defer cpu.Stop()
	deadline := time.Now().Add(time.Duration(warmUpCycles+measuredCycles+2)*evalInterval + 3*time.Minute)
	var last *reading
	for len(r.cycles) < measuredCycles {
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d cycles measured before the deadline\n%s", server, len(r.cycles), measuredCycles, proc.Output())
		}
		time.Sleep(pollEvery)
		rd, err := read(ctx, client, proc.URL, proc.PID(), vigil)
		if err != nil {
			b.Fatal(err)
		}
		if rd.failures > 0 {
			b.Fatalf("%s: %v rule evaluations failed\n%s", server, rd.failures, proc.Output())
		}
		if rd.cycles < warmUpCycles || (last != nil && rd.cycles == last.cycles) {
			continue
		}
		// A cycle ended: every rule's latest evaluation is one of this
		// cycle's (or, for a Prometheus group that has already run again,
		// of the next one's): each rule counts once.
		if last != nil {
			rules, err := rulesSnapshot(ctx, client, proc.URL)
			if err != nil {
				b.Fatal(err)
			}
			n := rd.cycles - last.cycles // 1 unless a poll was late
			c := cycle{groupLast: seconds(rd.groupLast), whole: seconds((rd.cycleSeconds - last.cycleSeconds) / float64(n)),
				cpu: (rd.cpu - last.cpu) / time.Duration(n)}
			c.rules, c.evals = cycleOf(rules, rd.at)
			if c.evals != len(rules) {
				b.Fatalf("%s: %d of its %d rules evaluated in the last two intervals", server, c.evals, len(rules))
			}
			time.Sleep(5 * sampleEvery) // a sample after the newest window's end
			var ok bool
			if c.ruleCPU, ok = cpu.during(ruleWindows(rules)); !ok {
				b.Fatalf("%s: the CPU samples do not cover the rule evaluations", server)
			}
			r.cycles = append(r.cycles, c)
		} else {
			r.dataAge = rd.at.Sub(e.end)
		}
		last = &rd
	}
	var err error
	if r.rss, r.hwm, err = peertest.ProcMemory(proc.PID()); err != nil {
		b.Fatal(err)
	}
	if r.recorded, _, err = instant(ctx, client, proc.URL, `{__name__=~"slo:.+|vigil:.+"}`); err != nil {
		b.Fatal(err)
	}
	if r.alerts, _, err = instant(ctx, client, proc.URL, `ALERTS`); err != nil {
		b.Fatal(err)
	}
	return r
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// copyDir copies the regular files of a TSDB directory.
func copyDir(b *testing.B, from, to string) {
	b.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if rel == "lock" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		b.Fatalf("copy %s: %v", from, err)
	}
}

// BenchmarkRuleEvaluation compares the time per evaluation cycle of the
// built-in SLO presets in `vigil serve` and in Prometheus 2.42 (the same
// rules, from `vigil rules generate`) over the same data: 1,000 GPUs and
// 50 vLLM models (benchShape), loaded with vigil import and promtool. The
// servers alternate, Vigil first, runsPerServer times each; each run is a
// fresh process on a fresh copy of its data, waits out warmUpCycles and
// measures measuredCycles cycles of evalInterval. The figure compared is
// the time per cycle of the rules themselves: after each cycle, the sum of
// every rule's latest evaluation duration (query, append, commit) from
// /api/v1/rules, which the same rule-engine code measures in both
// (Vigil's diagnosis, which runs in the same cycle, is not in it). The
// ratio is Vigil's run median over Prometheus's of the same pair, median
// and range over the pairs. On a shared machine wall times also measure
// the neighbours, so the server's CPU time spent while its rules ran (from
// /proc, sampled every sampleEvery) is compared the same way.
//
//	go test ./test/rulebench -run '^$' -bench RuleEvaluation -benchtime 1x -timeout 20m
func BenchmarkRuleEvaluation(b *testing.B) {
	b.ReportAllocs()
	e := setUp(b)
	var runs []evalRun
	for b.Loop() {
		runs = runs[:0]
		for range runsPerServer {
			for _, server := range []string{"vigil", "prometheus"} {
				runs = append(runs, e.run(b, server))
			}
		}
	}
	checkRuns(b, runs)
	report(b, e, runs)
}

// checkRuns requires that both servers evaluated the same rules over real
// data: the same number of rule evaluations in every cycle, recorded
// series and alerts in every run.
func checkRuns(b *testing.B, runs []evalRun) {
	b.Helper()
	want := runs[0].cycles[0].evals
	for _, r := range runs {
		for _, c := range r.cycles {
			if c.evals != want {
				b.Fatalf("%s evaluated %d rules in a cycle, %s %d: not the same rules", r.server, c.evals, runs[0].server, want)
			}
		}
		if r.recorded == 0 || r.alerts == 0 {
			b.Fatalf("%s recorded %d series and has %d alerts: the rules saw no data", r.server, r.recorded, r.alerts)
		}
	}
}

// machine describes where the benchmark ran.
func machine() string {
	mem := "unknown memory"
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if kb, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				var n int64
				fmt.Sscanf(strings.TrimSpace(kb), "%d", &n)
				mem = fmt.Sprintf("%.1f GiB", float64(n)/(1<<20))
			}
		}
		f.Close()
	}
	load := ""
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average " + strings.Join(strings.Fields(string(data))[:3], " ")
	}
	return fmt.Sprintf("%d CPUs, %s%s", runtime.NumCPU(), mem, load)
}
