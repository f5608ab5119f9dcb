package nezha

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/detect"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/realdata/nezha"
)

// result is one fault's outcome.
type result struct {
	day, modality, kind, truth string
	ranked, naive              []string
}

func rankOf(list []string, truth string) int {
	if i := slices.Index(list, truth); i >= 0 {
		return i + 1
	}
	return 0
}

func TestNezhaDays(t *testing.T) {
	root := os.Getenv("VIGIL_NEZHA_DIR")
	if root == "" {
		_, file, _, _ := runtime.Caller(0)
		root = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "realdata", "nezha")
	}
	days, _ := filepath.Glob(filepath.Join(root, "20*"))
	if len(days) == 0 {
		t.Skipf("no Nezha day under %s", root)
	}
	bin, err := peertest.BuildVigil()
	require.NoError(t, err)
	var all []result
	start := time.Now()
	for _, dir := range days {
		d, err := nezha.Load(dir)
		require.NoError(t, err)
		for _, n := range d.Notes {
			t.Logf("%s: %s", d.Name, n)
		}
		modalities := []string{"metrics"}
		if d.Logs != nil {
			modalities = append(modalities, "metrics+logs")
		}
		for _, mod := range modalities {
			for i, f := range d.Faults {
				path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%02d.om", d.Name, i))
				var buf bytes.Buffer
				c, err := d.WriteCase(&buf, i, nezha.CaseOptions{Logs: mod == "metrics+logs"})
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
				rep := diagnoseFile(t, bin, path, c)
				all = append(all, result{day: d.Name, modality: mod, kind: f.Type, truth: f.Service, ranked: rankedServices(rep), naive: naiveRank(d, c)})
			}
		}
	}
	var b strings.Builder
	writeTable(&b, all)
	b.WriteString("\n")
	for _, r := range all {
		fmt.Fprintf(&b, "%s %-12s %-15s truth=%-22s vigil=%d %v naive=%d %v\n", r.day, r.modality, r.kind, r.truth, rankOf(r.ranked, r.truth), first(r.ranked, 3),
			rankOf(r.naive, r.truth), first(r.naive, 3))
	}
	t.Logf("%d faults in %s\n%s", len(all), time.Since(start).Round(time.Second), b.String())
}

func first(l []string, k int) []string { return l[:min(k, len(l))] }

// diagnoseFile runs vigil diagnose on a case and decodes its report.
func diagnoseFile(t *testing.T, bin, path string, c nezha.Case) *diagnose.Report {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "diagnose", "--input", path, "--entity-label", nezha.EntityLabel,
		"--window", c.Window.String(), "--at", c.At.Format(time.RFC3339), "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s: %s", path, stderr.String())
	var rep diagnose.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	return &rep
}

// rankedServices are the causes' services in rank order, each once.
func rankedServices(rep *diagnose.Report) []string {
	var out []string
	for _, c := range rep.Causes {
		if s := c.Entity[nezha.EntityLabel]; s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// naiveRank orders the services by how far their series moved after the
// injection, in robust spreads of the minutes the case holds before it.
func naiveRank(d *nezha.Day, c nezha.Case) []string {
	from := c.At.Add(-c.Window)
	score := map[string]float64{}
	for _, p := range d.Pods {
		for _, col := range p.Order {
			var before, after []float64
			for k, ts := range p.Times {
				v := p.Columns[col][k]
				switch {
				case math.IsNaN(v):
				case !ts.Before(from) && ts.Before(c.Fault.At):
					before = append(before, v)
				case !ts.Before(c.Fault.At) && !ts.After(c.At):
					after = append(after, v)
				}
			}
			if len(before) == 0 || len(after) == 0 {
				continue
			}
			base := detect.NewBaselineMAD(before, detect.Floor{Rel: 0.01, Abs: 1e-9})
			if z := math.Abs(base.Z(detect.Median(after))); !math.IsNaN(z) {
				score[p.Service] = max(score[p.Service], z)
			}
		}
	}
	var out []string
	for s := range score {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// writeTable prints top-1 and top-3 per day and fault type, then per day.
func writeTable(b *strings.Builder, all []result) {
	type key struct{ day, modality, kind string }
	var keys []key
	rows := map[key][]result{}
	for _, r := range all {
		for _, k := range []key{{r.day, r.modality, r.kind}, {r.day, r.modality, "all"}} {
			if _, ok := rows[k]; !ok {
				keys = append(keys, k)
			}
			rows[k] = append(rows[k], r)
		}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.day, b.day); c != 0 {
			return c
		}
		if c := strings.Compare(a.modality, b.modality); c != 0 {
			return c
		}
		return strings.Compare(strings.ReplaceAll(a.kind, "all", "~"), strings.ReplaceAll(b.kind, "all", "~"))
	})
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "day\tdata\tfault\tn\tVigil AC@1\tAC@3\tnaive AC@1\tAC@3\t")
	for _, k := range keys {
		rs := rows[k]
		c := func(ok func(result) bool) string {
			n := 0
			for _, r := range rs {
				if ok(r) {
					n++
				}
			}
			return fmt.Sprintf("%.2f", float64(n)/float64(len(rs)))
		}
		in := func(l func(result) []string, k int) func(result) bool {
			return func(r result) bool { i := rankOf(l(r), r.truth); return i > 0 && i <= k }
		}
		vig, nai := func(r result) []string { return r.ranked }, func(r result) []string { return r.naive }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", k.day, k.modality, k.kind, len(rs), c(in(vig, 1)), c(in(vig, 3)), c(in(nai, 1)), c(in(nai, 3)))
	}
	tw.Flush()
}
