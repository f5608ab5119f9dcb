package diagnose_test

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/util/teststorage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/kinds"
)

// The script tests: hand-written scenes in promqltest's load syntax, one
// file per cause kind under testdata/scripts, each with several cases
// (a fault with dcgm-exporter's default fields, with its optional fields,
// at half its size, and decoys). Scenes shared by several files live in
// testdata/scripts/*.scene. The format:
//
//	# comment
//	scene NAME                     a reusable part of a cluster
//	  use OTHER                    include another scene first
//	  gpu Hostname=NODE 0-7 pod=P namespace=NS container=C instance=ADDR
//	                               declare dcgm-exporter GPUs: their label sets,
//	                               with UUID, pci_bus_id, device, modelName and
//	                               DCGM_FI_DRIVER_VERSION filled in
//	  replica namespace=NS pod=P model_name=M ...
//	                               declare a model server's target labels
//	  load 30s
//	    METRIC{labels} VALUES      a promqltest series line (a+bxN, _, stale)
//	    gpus METRIC{sel} VALUES    that line for every declared GPU sel matches
//	                               (its labels the GPUs have filter, label=""
//	                               keeps those without it, the others are added)
//	    replicas METRIC{sel} VALUES  the same for declared replicas
//	    cut {selector} from D [to D] [stale]
//	                               the series defined so far that match lose
//	                               their samples from D (up to D): an exporter
//	                               that stops reporting them
//	    restart {selector} from D to D
//	                               a process that restarts: a cut with a
//	                               staleness marker, counters from zero after
//	end
//	case NAME                      a scene of its own, diagnosed
//	  use SCENE
//	  load 30s
//	    ...                        a series defined again replaces the scene's
//	  diagnose at 50m [window 1h]  the window is by default 00:00 to at
//	    expect first KIND k=v... [confidence>=X]   rank 1 (causes, else findings)
//	    expect no KIND|any [k=v...] [confidence>=X]
//	    expect healthy true|false
//	    expect symptom KIND [k=v...] [resolved]
//	    expect no symptom [KIND] [current]
//	    expect confidence KIND [k=v...] <=|< case OTHER
//	end
//
// Entities match on the keys given (k= with no value: the key is absent).
// Load time starts at the Unix epoch, so "at 50m" is 00:50:00 UTC; every
// series of a case must give as many samples (omitted ones too), which
// catches a miscounted "x79". Files ending in .test.pending hold cases
// today's engine fails; they run only with VIGIL_SCRIPT_PENDING=1.

// scriptDir holds the script files.
const scriptDir = "testdata/scripts"

// scriptPendingEnv switches on the pending cases.
const scriptPendingEnv = "VIGIL_SCRIPT_PENDING"

// TestScripts runs every case of every script file.
//
//	go test ./internal/diagnose/ -run 'TestScripts/gpu_thermal_throttle'
func TestScripts(t *testing.T) {
	suite, err := loadScripts(scriptDir)
	require.NoError(t, err)
	pending := os.Getenv(scriptPendingEnv) == "1"
	for _, kind := range suite.kinds() {
		t.Run(kind, func(t *testing.T) {
			for _, c := range suite.cases[kind] {
				t.Run(c.name, func(t *testing.T) {
					if c.pending && !pending {
						t.Skipf("pending (%s): today's engine fails it; run with %s=1", c.where(), scriptPendingEnv)
					}
					suite.run(t, c)
				})
			}
		})
	}
}

// scriptSuite is every parsed script file.
type scriptSuite struct {
	scenes map[string]*scriptScene
	// cases by kind (the file name without its suffix), in file order,
	// those of the .test file before those of the .test.pending one.
	cases map[string][]*scriptCase
	// reports caches each case's first diagnosis, for comparisons.
	reports map[*scriptCase][]*diagnose.Report
}

func (s *scriptSuite) kinds() []string {
	var out []string
	for k := range s.cases {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// scriptScene is a part of a cluster: GPU declarations and series lines.
type scriptScene struct {
	name string
	file string
	line int
	uses []string
	// targets are the declared GPUs and replicas the macros expand over.
	targets []scriptTarget
	step    string
	lines   []scriptLine
}

// scriptLine is one series line (or gpus macro) of a load block.
type scriptLine struct {
	text string
	file string
	line int
}

// scriptTarget is one declared GPU (group "gpus") or model-server replica
// (group "replicas"): the label set, name aside, of every series a macro
// line writes for it.
type scriptTarget struct {
	group  string
	labels map[string]string
}

// scriptCase is one case: its scene and its diagnoses.
type scriptCase struct {
	scriptScene
	kind      string
	pending   bool
	diagnoses []scriptDiagnose
}

func (c *scriptCase) where() string { return fmt.Sprintf("%s:%d", c.file, c.line) }

// scriptDiagnose is one diagnosis of a case and what it must show.
type scriptDiagnose struct {
	at, window time.Duration
	line       int
	expects    []scriptExpect
}

// scriptExpect is one expectation line.
type scriptExpect struct {
	text string
	line int
}

// loadScripts parses every file of dir.
func loadScripts(dir string) (*scriptSuite, error) {
	s := &scriptSuite{scenes: map[string]*scriptScene{}, cases: map[string][]*scriptCase{}, reports: map[*scriptCase][]*diagnose.Report{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	// .scene first, then each kind's .test before its .test.pending.
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := strings.HasSuffix(a, ".scene"), strings.HasSuffix(b, ".scene")
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		kind, pending := "", false
		switch {
		case strings.HasSuffix(name, ".scene"):
		case strings.HasSuffix(name, ".test"):
			kind = strings.TrimSuffix(name, ".test")
		case strings.HasSuffix(name, ".test.pending"):
			kind, pending = strings.TrimSuffix(name, ".test.pending"), true
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read script: %w", err)
		}
		if err := s.parse(name, kind, pending, string(b)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// scriptReader is the state of parsing one file: the scene or case open
// and the section of it.
type scriptReader struct {
	s             *scriptSuite
	file, kind    string
	pending       bool
	sc            *scriptScene
	c             *scriptCase
	section, line string // section: "", "load" or "diagnose"
	n             int
}

func (r *scriptReader) errf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.file, r.n, fmt.Sprintf(format, args...))
}

// parse reads one file's scenes and cases.
func (s *scriptSuite) parse(file, kind string, pending bool, text string) error {
	r := &scriptReader{s: s, file: file, kind: kind, pending: pending}
	for i, raw := range strings.Split(text, "\n") {
		r.n, r.line = i+1, strings.TrimSpace(raw)
		if r.line == "" || strings.HasPrefix(r.line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(r.line, " ")
		rest = strings.TrimSpace(rest)
		var err error
		switch {
		case r.sc == nil:
			err = r.begin(word, rest)
		case word == "end":
			err = r.end()
		default:
			err = r.inside(word, rest)
		}
		if err != nil {
			return err
		}
	}
	if r.sc != nil {
		return fmt.Errorf("%s:%d: %s has no end", file, r.sc.line, r.sc.name)
	}
	return nil
}

// begin opens a scene or a case.
func (r *scriptReader) begin(word, rest string) error {
	switch word {
	case "scene":
		r.sc = &scriptScene{name: rest, file: r.file, line: r.n}
	case "case":
		if r.kind == "" {
			return r.errf("a case outside a .test file")
		}
		r.c = &scriptCase{scriptScene: scriptScene{name: rest, file: r.file, line: r.n}, kind: r.kind, pending: r.pending}
		r.sc = &r.c.scriptScene
	default:
		return r.errf("want scene or case, got %q", r.line)
	}
	if rest == "" {
		return r.errf("%s without a name", word)
	}
	r.section = ""
	return nil
}

// end closes the scene or case open.
func (r *scriptReader) end() error {
	s := r.s
	if c := r.c; c != nil {
		if slices.ContainsFunc(s.cases[r.kind], func(o *scriptCase) bool { return o.name == c.name }) {
			return fmt.Errorf("%s:%d: case %s defined twice", r.file, c.line, c.name)
		}
		s.cases[r.kind] = append(s.cases[r.kind], c)
	} else {
		if _, dup := s.scenes[r.sc.name]; dup {
			return fmt.Errorf("%s:%d: scene %s defined twice", r.file, r.sc.line, r.sc.name)
		}
		s.scenes[r.sc.name] = r.sc
	}
	r.sc, r.c = nil, nil
	return nil
}

// inside reads a line of the scene or case open.
func (r *scriptReader) inside(word, rest string) error {
	sc, c := r.sc, r.c
	switch {
	case word == "use" && r.section == "":
		sc.uses = append(sc.uses, rest)
	case word == "gpu" && r.section != "diagnose":
		g, err := parseGPU(rest)
		if err != nil {
			return r.errf("%v", err)
		}
		sc.targets = append(sc.targets, g...)
	case word == "replica" && r.section != "diagnose":
		t, err := parseReplica(rest)
		if err != nil {
			return r.errf("%v", err)
		}
		sc.targets = append(sc.targets, t)
	case word == "load" && r.section == "":
		if _, err := time.ParseDuration(rest); err != nil {
			return r.errf("load step: %v", err)
		}
		sc.step, r.section = rest, "load"
	case word == "diagnose" && c != nil:
		d, err := parseDiagnose(rest)
		if err != nil {
			return r.errf("want diagnose at DURATION [window DURATION], got %q", r.line)
		}
		d.line = r.n
		c.diagnoses = append(c.diagnoses, d)
		r.section = "diagnose"
	case word == "expect" && r.section == "diagnose":
		d := &c.diagnoses[len(c.diagnoses)-1]
		d.expects = append(d.expects, scriptExpect{text: rest, line: r.n})
	case r.section == "load":
		sc.lines = append(sc.lines, scriptLine{text: r.line, file: r.file, line: r.n})
	default:
		return r.errf("unexpected %q", r.line)
	}
	return nil
}

// parseDiagnose reads "at D [window D]"; the window is by default all the
// loaded time (from 00:00 to at), so that the data covers all of it, as a
// Prometheus holding more than the window would.
func parseDiagnose(rest string) (scriptDiagnose, error) {
	toks := strings.Fields(rest)
	if (len(toks) != 2 && len(toks) != 4) || toks[0] != "at" || len(toks) == 4 && toks[2] != "window" {
		return scriptDiagnose{}, fmt.Errorf("bad diagnose")
	}
	at, err := time.ParseDuration(toks[1])
	if err != nil {
		return scriptDiagnose{}, err
	}
	d := scriptDiagnose{at: at, window: at}
	if len(toks) == 4 {
		if d.window, err = time.ParseDuration(toks[3]); err != nil {
			return scriptDiagnose{}, err
		}
	}
	return d, nil
}

// parseGPU reads a gpu declaration: HOSTLABEL=NODE INDEXES [label=value...].
func parseGPU(rest string) ([]scriptTarget, error) {
	toks, err := scriptTokens(rest)
	if err != nil {
		return nil, err
	}
	if len(toks) < 2 {
		return nil, fmt.Errorf("want gpu HOSTLABEL=NODE INDEXES [label=value...], got %q", rest)
	}
	hostLabel, host, ok := strings.Cut(toks[0], "=")
	if !ok || host == "" {
		return nil, fmt.Errorf("gpu: want HOSTLABEL=NODE first, got %q", toks[0])
	}
	idx, err := scriptIndexes(toks[1])
	if err != nil {
		return nil, err
	}
	extra := map[string]string{}
	for _, tok := range toks[2:] {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return nil, fmt.Errorf("gpu: want label=value, got %q", tok)
		}
		extra[k] = v
	}
	var out []scriptTarget
	for _, i := range idx {
		sum := sha1.Sum([]byte(host + "/" + strconv.Itoa(i)))
		h := fmt.Sprintf("%x", sum)
		lset := map[string]string{
			"gpu":                    strconv.Itoa(i),
			"UUID":                   fmt.Sprintf("GPU-%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]),
			"pci_bus_id":             fmt.Sprintf("00000000:%s:00.0", hgxBus[i%len(hgxBus)]),
			"device":                 fmt.Sprintf("nvidia%d", i),
			"modelName":              "NVIDIA H100 80GB HBM3",
			"DCGM_FI_DRIVER_VERSION": "550.90.07",
			hostLabel:                host,
		}
		for k, v := range extra {
			if v == "" {
				delete(lset, k)
				continue
			}
			lset[k] = v
		}
		out = append(out, scriptTarget{group: "gpus", labels: lset})
	}
	return out, nil
}

// parseReplica reads a replica declaration: label=value....
func parseReplica(rest string) (scriptTarget, error) {
	toks, err := scriptTokens(rest)
	if err != nil {
		return scriptTarget{}, err
	}
	r := scriptTarget{group: "replicas", labels: map[string]string{}}
	for _, tok := range toks {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return r, fmt.Errorf("replica: want label=value, got %q", tok)
		}
		r.labels[k] = v
	}
	if len(r.labels) == 0 {
		return r, fmt.Errorf("replica without labels")
	}
	return r, nil
}

// hgxBus are the PCI buses of an HGX H100 board's eight GPUs.
var hgxBus = []string{"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"}

// scriptIndexes reads "0-3", "0,2,5" or "1".
func scriptIndexes(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("gpu indexes %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("gpu indexes %q: %w", s, err)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// scriptTokens splits on spaces, keeping "quoted strings" (unquoted) whole.
func scriptTokens(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	inQuote, has := false, false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"':
			inQuote, has = !inQuote, true
		case ch == ' ' && !inQuote:
			if has {
				out = append(out, b.String())
				b.Reset()
				has = false
			}
		default:
			b.WriteByte(ch)
			has = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if has {
		out = append(out, b.String())
	}
	return out, nil
}

// scriptSource is a loaded test storage with its PromQL engine.
type scriptSource struct {
	*teststorage.TestStorage
	engine *promql.Engine
}

// Engine returns the PromQL engine that evaluates over the storage.
func (s scriptSource) Engine() promql.QueryEngine { return s.engine }

var _ diagnose.Source = scriptSource{}

// diagnoseCase loads a case and diagnoses it at each of its instants.
func (s *scriptSuite) diagnoseCase(t *testing.T, c *scriptCase) []*diagnose.Report {
	t.Helper()
	if reps, ok := s.reports[c]; ok {
		return reps
	}
	text, err := s.loadText(c)
	require.NoError(t, err)
	st := promqltest.LoadedStorage(t, text)
	eng := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: parser.NewParser(parser.Options{}),
	})
	src := scriptSource{TestStorage: st, engine: eng}
	var reps []*diagnose.Report
	for _, d := range c.diagnoses {
		e, err := diagnose.New(diagnose.Options{Window: d.window})
		require.NoError(t, err)
		rep, err := e.Diagnose(t.Context(), src, time.Unix(0, 0).Add(d.at))
		require.NoError(t, err, "%s:%d", c.file, d.line)
		reps = append(reps, rep)
	}
	s.reports[c] = reps
	return reps
}

// run diagnoses a case and checks its expectations.
func (s *scriptSuite) run(t *testing.T, c *scriptCase) {
	require.NotEmpty(t, c.diagnoses, "%s: no diagnose", c.where())
	reps := s.diagnoseCase(t, c)
	for i, d := range c.diagnoses {
		rep := reps[i]
		t.Logf("%s:%d: diagnosis at %s (window %s)\n%s", c.file, d.line, d.at, d.window, scriptBrief(rep))
		for _, x := range d.expects {
			if err := s.check(t, c, rep, x.text); err != nil {
				t.Errorf("%s:%d: expect %s: %v\n%s", c.file, x.line, x.text, err, scriptBrief(rep))
			}
		}
	}
}

// TestScriptsNeedTheirDetectors switches off the detectors of each kind in
// turn and runs that kind's cases: some expectation of them must fail,
// or the cases test nothing of the detector.
func TestScriptsNeedTheirDetectors(t *testing.T) {
	if testing.Short() {
		t.Skip("diagnoses every script case again (-short)")
	}
	suite, err := loadScripts(scriptDir)
	require.NoError(t, err)
	for _, kind := range suite.kinds() {
		if _, ok := kinds.Lookup(kind); !ok {
			continue // healthy: no kind, no detector
		}
		t.Run(kind, func(t *testing.T) {
			restore := diagnose.SwitchOffDetectorsOf(kind)
			defer restore()
			failed := 0
			for _, c := range suite.cases[kind] {
				if c.pending {
					continue
				}
				for i, rep := range suite.diagnoseCase(t, c) {
					for _, x := range c.diagnoses[i].expects {
						if suite.check(t, c, rep, x.text) != nil {
							failed++
						}
					}
				}
			}
			require.Positive(t, failed, "the cases of %s pass with its detectors switched off", kind)
		})
	}
}
