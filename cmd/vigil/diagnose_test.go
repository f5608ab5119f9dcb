package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// smallCluster is a cluster that keeps a dump small (about 18 MB for 20
// minutes) and still has a training job of two ranks and one vLLM replica
// with the traffic it can serve.
func smallCluster(seed uint64) sim.Config {
	return sim.Config{Seed: seed, Duration: 20 * time.Minute, Nodes: 4, GPUsPerNode: 4, TrainingNodes: 2,
		Replicas: 1, NodeCPUs: 2, PeakRequestRate: 3}
}

// dump is a simulated run written as OpenMetrics.
type dump struct {
	path  string
	cfg   sim.Config
	truth []sim.Fault
}

// end is the newest sample's time.
func (d dump) end() time.Time { return d.cfg.Start.Add(d.cfg.Duration) }

// writeDump simulates scenario on cfg and writes its OpenMetrics into dir.
func writeDump(t *testing.T, dir, scenario string, cfg sim.Config) dump {
	t.Helper()
	sc, err := sim.ParseScenario(scenario)
	require.NoError(t, err)
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	path := filepath.Join(dir, scenario+".om")
	fh, err := os.Create(path)
	require.NoError(t, err)
	bw := bufio.NewWriter(fh)
	require.NoError(t, s.WriteOpenMetrics(t.Context(), bw))
	require.NoError(t, bw.Flush())
	require.NoError(t, fh.Close())
	return dump{path: path, cfg: s.Config(), truth: s.Truth()}
}

// sampleLine splits an OpenMetrics sample line into its series, value and
// timestamp (seconds); ok is false for comments and lines without a
// timestamp.
func sampleLine(line string) (series, value string, ts float64, ok bool) {
	if strings.HasPrefix(line, "#") {
		return "", "", 0, false
	}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", "", 0, false
	}
	ts, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return "", "", 0, false
	}
	j := strings.LastIndexByte(line[:i], ' ')
	if j < 0 {
		return "", "", 0, false
	}
	return line[:j], line[j+1 : i], ts, true
}

// rewrite writes src to a new file named name, each line through edit:
// it returns the line to write, or false to drop it. Some line must change.
func rewrite(t *testing.T, src, name string, edit func(line string) (string, bool)) string {
	t.Helper()
	in, err := os.ReadFile(src)
	require.NoError(t, err)
	var out bytes.Buffer
	out.Grow(len(in))
	changed := 0
	for line := range strings.Lines(string(in)) {
		line = strings.TrimSuffix(line, "\n")
		l, keep := edit(line)
		if !keep || l != line {
			changed++
		}
		if keep {
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	require.Positive(t, changed, "the edit changes the dump")
	path := filepath.Join(filepath.Dir(src), name)
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	return path
}

// diagnoseJSON runs vigil diagnose --json with args and decodes its one
// object, requiring exit 0.
func diagnoseJSON(t *testing.T, args ...string) (diagnose.Report, result) {
	t.Helper()
	r := runVigil(t, "", append([]string{"diagnose", "--json"}, args...)...)
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, 0, r.code)
	require.NotContains(t, r.stderr, "goroutine ")
	return decodeOne[diagnose.Report](t, r.stdout), r
}

// requireNames checks that the report's rank-1 cause (or finding, when
// there is no cause) is the fault.
func requireNames(t *testing.T, rep diagnose.Report, f sim.Fault) {
	t.Helper()
	list := rep.Causes
	if len(list) == 0 {
		list = rep.Findings
	}
	require.NotEmpty(t, list, "no cause and no finding; symptoms %v", rep.Symptoms)
	c := list[0]
	require.Equal(t, f.Kind, c.Kind, "rank 1 is %s %v (%.2f)", c.Kind, c.Entity, c.Confidence)
	require.True(t, eval.EntityMatch(f.Entity, c.Entity), "rank 1 names %v, the fault is on %v", c.Entity, f.Entity)
	require.GreaterOrEqual(t, c.Confidence, 0.5)
	require.False(t, rep.Healthy)
}

// requireHealthy checks a healthy verdict with nothing at 0.5 or above.
func requireHealthy(t *testing.T, rep diagnose.Report) {
	t.Helper()
	require.True(t, rep.Healthy, "symptoms %v causes %v findings %v", rep.Symptoms, rep.Causes, rep.Findings)
	require.Empty(t, rep.Symptoms)
	for _, c := range append(rep.Causes, rep.Findings...) {
		require.Less(t, c.Confidence, 0.5, "%s %v", c.Kind, c.Entity)
	}
}

// TestDiagnoseInput diagnoses a small simulated NVLink fault from a file:
// the page names the node and the kind, --json prints one object whose
// rank 1 is the fault, --at defaults to the newest sample, and warnings
// (if any) go to stderr only.
func TestDiagnoseInput(t *testing.T) {
	d := writeDump(t, t.TempDir(), "nvlink_degraded", smallCluster(1))
	f := d.truth[0]

	rep, r := diagnoseJSON(t, "--input", d.path)
	require.True(t, rep.At.Equal(d.end()), "--at defaults to the newest sample: %s", rep.At)
	requireNames(t, rep, f)
	require.Regexp(t, `^(vigil: warning: [^\n]+\n)*$`, r.stderr)

	r = runVigil(t, "", "diagnose", "--input", d.path)
	require.NoError(t, r.err, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "Vigil diagnosis at "+d.end().Format("2006-01-02 15:04:05 MST")+" — NOT HEALTHY\n"), r.stdout)
	require.Contains(t, r.stdout, "nvlink_degraded")
	require.Contains(t, r.stdout, "node="+f.Entity["node"])
	require.NotContains(t, r.stdout, "\x1b[", "no colour off a terminal")

	at := f.Onset.Add(-5 * time.Minute)
	rep, _ = diagnoseJSON(t, "--input", d.path, "--at", at.Format(time.RFC3339))
	require.True(t, rep.At.Equal(at))
	requireHealthy(t, rep)
	rep, _ = diagnoseJSON(t, "--input", d.path, "--at", strconv.FormatInt(at.Unix(), 10))
	require.True(t, rep.At.Equal(at), "--at takes Unix seconds")
}

// TestDiagnoseUsage checks exit 2 with a one-line reason on bad input and
// usage.
func TestDiagnoseUsage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.om")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	comments := filepath.Join(dir, "comments.prom")
	require.NoError(t, os.WriteFile(comments, []byte("# HELP up up\n# TYPE up gauge\n"), 0o644))
	one := filepath.Join(dir, "one.prom")
	require.NoError(t, os.WriteFile(one, []byte(`DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="gpu-node-01"} 40 1794448800000`+"\n"), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no source", nil, "give exactly one of --input FILE, --prometheus URL or --server URL"},
		{"input and prometheus", []string{"--input", one, "--prometheus", "http://127.0.0.1:9090"}, "give exactly one of"},
		{"input and server", []string{"--input", one, "--server", "http://127.0.0.1:9700"}, "give exactly one of"},
		{"prometheus and server", []string{"--prometheus", "http://127.0.0.1:9090", "--server", "http://127.0.0.1:9700"}, "give exactly one of"},
		{"empty file", []string{"--input", empty}, "diagnose: no samples in --input"},
		{"comments only", []string{"--input", comments}, "diagnose: no samples in --input"},
		{"empty stdin", []string{"--input", "-"}, "diagnose: no samples in --input"},
		{"at before all data", []string{"--input", one, "--at", "2026-11-12T01:00:00Z"},
			"no data at or before 2026-11-12T01:00:00Z: the oldest sample of --input is at 2026-11-12T02:00:00Z"},
		{"at past the window", []string{"--input", one, "--at", "2026-11-12T05:00:00Z"}, "no data at or before the evaluation time"},
		{"bad at", []string{"--input", one, "--at", "yesterday"}, `--at: time "yesterday" is neither RFC 3339 nor Unix seconds`},
		{"window shorter than the step", []string{"--input", one, "--window", "10s"}, "diagnose: step 30s is longer than the window 10s"},
		{"bad window", []string{"--input", one, "--window", "soon"}, "--window"},
		{"missing file", []string{"--input", filepath.Join(dir, "no-such-file.om")}, "no-such-file.om"},
		{"malformed file", []string{"--input", comments + "x"}, "comments.promx"},
		{"bad URL", []string{"--prometheus", "ftp://x"}, `--prometheus: url "ftp://x": scheme must be http or https`},
		{"argument", []string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireUsage(t, runVigil(t, "", append([]string{"diagnose"}, tt.args...)...), tt.want)
		})
	}
}

// TestDiagnoseNoVocabulary: metrics in no known vocabulary and no
// --entity-label (a wrong URL, relabelled metrics) are a blind report,
// exit 0: not healthy, no causes, the whole cluster in coverage.blind, a
// page that says BLIND instead of healthy, and a warning, in the object
// and on stderr, that suggests --entity-label.
func TestDiagnoseNoVocabulary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "foo.prom")
	require.NoError(t, os.WriteFile(path, []byte("foo_bar{x=\"1\"} 1 1700000000000\nfoo_bar{x=\"2\"} 3 1700000000000\n"), 0o644))
	for _, asJSON := range []bool{true, false} {
		args := []string{"diagnose", "--input", path}
		if asJSON {
			args = append(args, "--json")
		}
		r := runVigil(t, "", args...)
		require.NoError(t, r.err, r.stderr)
		require.Regexp(t, `(?m)^vigil: warning: [^\n]*--entity-label[^\n]*$`, r.stderr)
		require.Regexp(t, `^(vigil: warning: [^\n]+\n)+$`, r.stderr)
		if !asJSON {
			require.Contains(t, r.stdout, "--entity-label")
			require.True(t, strings.HasPrefix(r.stdout, "Vigil diagnosis at 2023-11-14 22:13:20 UTC — BLIND: no telemetry Vigil knows (1 metric name: foo_bar; "), r.stdout)
			require.Contains(t, r.stdout, "nothing can be said about the cluster's health\nHint: ")
			require.NotContains(t, r.stdout, "healthy")
			continue
		}
		rep := decodeOne[diagnose.Report](t, r.stdout)
		require.Equal(t, "2023-11-14T22:13:20Z", rep.At.Format(time.RFC3339))
		require.Empty(t, rep.Causes)
		require.Empty(t, rep.Symptoms)
		require.False(t, rep.Healthy, "blind is no verdict of healthy")
		require.True(t, rep.Blind())
		require.Len(t, rep.Coverage.Blind, 1)
		require.Empty(t, rep.Coverage.Blind[0].Entity, "the whole cluster")
		require.Contains(t, r.stdout, `"coverage":{"layers":{"gpu":{"entities":0,"vocabularies":[]},"node":`)
		require.True(t, strings.Contains(strings.Join(rep.Warnings, "\n"), "--entity-label"), "warnings: %q", rep.Warnings)
		for _, w := range rep.Warnings {
			require.Contains(t, r.stderr, "vigil: warning: "+w+"\n")
		}
	}
}

// TestDiagnoseDamagedInput: a dump with a 5-minute gap, with every counter
// reset (an exporter restart), with NaN values, or without
// kube-state-metrics still gives exit 0 and one JSON object: a healthy run
// stays healthy and the NVLink fault stays rank 1. Each case reads an
// 18 MB dump (about a second).
func TestDiagnoseDamagedInput(t *testing.T) {
	dir := t.TempDir()
	healthy := writeDump(t, dir, sim.Healthy, smallCluster(2))
	faulty := writeDump(t, dir, "nvlink_degraded", smallCluster(2))
	onset := faulty.truth[0].Onset
	// Every change happens before the onset, so that it is the fault, not
	// the damage, that the diagnosis must see.
	from, to := float64(onset.Add(-8*time.Minute).Unix()), float64(onset.Add(-3*time.Minute).Unix())
	require.True(t, healthy.cfg.Start.Add(2*time.Minute).Unix() < int64(from), "a baseline before the gap")

	gap := func(line string) (string, bool) {
		_, _, ts, ok := sampleLine(line)
		return line, !ok || ts < from || ts >= to
	}
	// reset restarts every counter at from: later samples lose the value
	// the series had just before.
	resetCounters := func() func(string) (string, bool) {
		base := map[string]float64{}
		return func(line string) (string, bool) {
			series, value, ts, ok := sampleLine(line)
			if !ok || !strings.Contains(series, "_total") {
				return line, true
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return line, true
			}
			if ts < from {
				base[series] = v
				return line, true
			}
			return fmt.Sprintf("%s %s %s", series, strconv.FormatFloat(max(0, v-base[series]), 'g', -1, 64), line[strings.LastIndexByte(line, ' ')+1:]), true
		}
	}
	// nan makes every 13th sample NaN (an exporter writing a blank).
	nan := func() func(string) (string, bool) {
		n := 0
		return func(line string) (string, bool) {
			series, _, ts, ok := sampleLine(line)
			if !ok {
				return line, true
			}
			if n++; n%13 != 0 {
				return line, true
			}
			return fmt.Sprintf("%s NaN %s", series, strconv.FormatFloat(ts, 'f', -1, 64)), true
		}
	}
	noKSM := func(line string) (string, bool) {
		for _, p := range []string{"kube_", "# HELP kube_", "# TYPE kube_", "# UNIT kube_"} {
			if strings.HasPrefix(line, p) {
				return "", false
			}
		}
		// kube-state-metrics' own up series goes with it.
		return line, !strings.Contains(line, `job="kube-state-metrics"`)
	}

	tests := []struct {
		name string
		edit func() func(string) (string, bool)
	}{
		{"gap", func() func(string) (string, bool) { return gap }},
		{"counter reset", resetCounters},
		{"NaN", nan},
		{"no kube-state-metrics", func() func(string) (string, bool) { return noKSM }},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/healthy", func(t *testing.T) {
			path := rewrite(t, healthy.path, "healthy-"+strings.ReplaceAll(tt.name, " ", "-")+".om", tt.edit())
			rep, _ := diagnoseJSON(t, "--input", path)
			require.True(t, rep.At.Equal(healthy.end()))
			requireHealthy(t, rep)
		})
		t.Run(tt.name+"/nvlink_degraded", func(t *testing.T) {
			path := rewrite(t, faulty.path, "faulty-"+strings.ReplaceAll(tt.name, " ", "-")+".om", tt.edit())
			rep, _ := diagnoseJSON(t, "--input", path)
			requireNames(t, rep, faulty.truth[0])
			require.NotEmpty(t, rep.Causes)
			if tt.name == "no kube-state-metrics" {
				// Without kube-state-metrics the job is guessed from the
				// pods dcgm-exporter names (llm-pretrain-worker-N).
				require.Equal(t, diagnose.SymptomTrainingStall, rep.Symptoms[0].Kind)
				require.Equal(t, "llm-pretrain-worker", rep.Symptoms[0].Entity["workload"])
			}
		})
	}
}

// tinyDump is a valid dump small enough to seed the fuzzer: the first
// three DCGM rounds of a 4-node run, and one kube-state-metrics family.
func tinyDump(t testing.TB) []byte {
	t.Helper()
	sc, err := sim.ParseScenario("nvlink_degraded")
	require.NoError(t, err)
	cfg := smallCluster(3)
	cfg.Duration = 2 * time.Minute
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	var full, out bytes.Buffer
	require.NoError(t, s.WriteOpenMetrics(t.Context(), &full))
	keep := false
	for line := range strings.Lines(full.String()) {
		if strings.HasPrefix(line, "# HELP ") {
			name := strings.Fields(line)[2]
			keep = strings.HasPrefix(name, "DCGM_FI_DEV_NVLINK") || strings.HasPrefix(name, "DCGM_FI_PROF_PIPE_TENSOR") || name == "kube_pod_info"
		}
		if _, _, ts, ok := sampleLine(strings.TrimSuffix(line, "\n")); keep && (!ok || ts < float64(s.Config().Start.Add(time.Minute).Unix())) {
			out.WriteString(line)
		}
	}
	out.WriteString("# EOF\n")
	return out.Bytes()
}

// FuzzDiagnoseInput feeds arbitrary bytes to vigil diagnose --input: never
// a panic, exit 0 with one JSON object, or exit 2 with one line.
//
//	go test ./cmd/vigil -run '^$' -fuzz FuzzDiagnoseInput -fuzztime 1m
func FuzzDiagnoseInput(f *testing.F) {
	f.Add(tinyDump(f))
	f.Add([]byte("foo_bar{x=\"1\"} 1 1700000000000\n"))
	f.Add([]byte("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n1\"} 40 1700000000\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n1\"} NaN 1700000030\n# EOF\n"))
	f.Add([]byte("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\",instance=\"10.0.0.1:9400\"} 79\nkube_node_info{node=\"a\",internal_ip=\"10.0.0.1\"} 1\n"))
	f.Add([]byte("kube_pod_status_reason{namespace=\"a\",pod=\"p\",reason=\"Evicted\"} +Inf 1700000000000\n"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.prom")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		r := runVigil(t, "", "diagnose", "--input", path, "--window", "10m", "--json")
		switch r.code {
		case 0:
			rep := decodeOne[diagnose.Report](t, r.stdout)
			for i, c := range rep.Causes {
				require.Equal(t, i+1, c.Rank)
				require.False(t, c.Confidence < 0 || c.Confidence > 1, "confidence %v", c.Confidence)
			}
		case 2:
			requireOneLine(t, r, "diagnose")
		default:
			t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
		}
	})
}

// writeRequestPath writes a scenario's request path as `vigil simulate`
// does: OTLP JSON traces and logs, one export request per line.
func writeRequestPath(t *testing.T, dir, scenario string, cfg sim.Config) (traces, logs string, truth []sim.Fault) {
	t.Helper()
	return writeRequestPathSpans(t, dir, scenario, cfg, reqpath.SpansPaired)
}

// writeRequestPathSpans is writeRequestPath with the calls recorded as
// spans says (reqpath.Config.Spans).
func writeRequestPathSpans(t *testing.T, dir, scenario string, cfg sim.Config, spans string) (traces, logs string, truth []sim.Fault) {
	t.Helper()
	sc, err := sim.ParseScenario(scenario)
	require.NoError(t, err)
	s, err := sim.New(cfg, sc)
	require.NoError(t, err)
	traces, logs = filepath.Join(dir, "traces.otlp.json"), filepath.Join(dir, "logs.otlp.json")
	tf, err := os.Create(traces)
	require.NoError(t, err)
	lf, err := os.Create(logs)
	require.NoError(t, err)
	rc := s.RequestPath()
	rc.Spans = spans
	require.NoError(t, reqpath.WriteFiles(rc, tf, lf))
	require.NoError(t, tf.Close())
	require.NoError(t, lf.Close())
	return traces, logs, s.Truth()
}

// TestDiagnoseOTLPInput: the request path's OTLP traces and logs given as
// --input are read as serve reads them (span metrics, service graph,
// log-derived counters), not skipped; the metrics still diagnose.
func TestDiagnoseOTLPInput(t *testing.T) {
	dir := t.TempDir()
	d := writeDump(t, dir, "nvlink_degraded", smallCluster(1))
	traces, logs, _ := writeRequestPath(t, dir, "nvlink_degraded", smallCluster(1))
	rep, r := diagnoseJSON(t, "--input", d.path, "--input", traces, "--input", logs)
	requireNames(t, rep, d.truth[0])
	require.NotContains(t, r.stderr, "skipped")
}

// TestDiagnoseOTLPRequestPath: a fault only the request path shows,
// diagnosed offline from `vigil simulate`'s three files: the metrics, and
// the traces and logs the derived span metrics and service graph come
// from. Without the traces it is not found.
func TestDiagnoseOTLPRequestPath(t *testing.T) {
	cfg := smallCluster(2)
	cfg.Duration = 30 * time.Minute
	for _, scenario := range []string{"tenant_failure", "dependency_slow"} {
		t.Run(scenario, func(t *testing.T) {
			dir := t.TempDir()
			d := writeDump(t, dir, scenario, cfg)
			traces, logs, truth := writeRequestPath(t, dir, scenario, cfg)
			rep, _ := diagnoseJSON(t, "--input", d.path, "--input", traces, "--input", logs)
			requireNames(t, rep, truth[0])
			rep, _ = diagnoseJSON(t, "--input", d.path)
			require.True(t, rep.Healthy, "the metrics alone show nothing")
			// Instrumentations that record no client/server pairs: the
			// service graph comes from the span tree.
			for _, spans := range []string{reqpath.SpansServerOnly, reqpath.SpansNoKind} {
				sd := filepath.Join(dir, spans)
				require.NoError(t, os.MkdirAll(sd, 0o755))
				traces, logs, _ := writeRequestPathSpans(t, sd, scenario, cfg, spans)
				rep, _ := diagnoseJSON(t, "--input", d.path, "--input", traces, "--input", logs)
				requireNames(t, rep, truth[0])
			}
		})
	}
}

// TestDiagnoseCoarseInput: 5-minute aggregates are read at their own
// interval without --step, as with --step 5m; read every 30 s, each sample
// is still one reading (the same answer); --step still overrides (15m).
func TestDiagnoseCoarseInput(t *testing.T) {
	var b strings.Builder
	start := int64(1_700_000_000_000)
	const n = 72 // six hours
	for _, svc := range []string{"cart", "search", "checkout"} {
		for i := range n {
			v := 0.05 + 0.004*float64((i*7+len(svc))%5)
			if svc == "search" && i >= n-6 {
				v *= 4
			}
			fmt.Fprintf(&b, "latency_seconds{service=%q} %g %d\n", svc, v, start+int64(i)*300_000)
		}
	}
	path := filepath.Join(t.TempDir(), "coarse.prom")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	diag := func(extra ...string) diagnose.Report {
		r := runVigil(t, "", append([]string{"diagnose", "--input", path, "--entity-label", "service", "--window", "6h", "--json"}, extra...)...)
		require.NoError(t, r.err, r.stderr)
		return decodeOne[diagnose.Report](t, r.stdout)
	}
	auto, fiveMin, fine, coarse := diag(), diag("--step", "5m"), diag("--step", "30s"), diag("--step", "15m")
	require.NotEmpty(t, auto.Causes)
	require.Equal(t, "search", auto.Causes[0].Entity["service"])
	require.Equal(t, fiveMin.Causes, auto.Causes, "the data's own interval")
	require.Equal(t, fiveMin.Causes, fine.Causes, "read every 30 s, a 5-minute sample is one reading, not ten")
	require.NotEqual(t, fiveMin.Causes, coarse.Causes, "--step overrides")
}
