package diagnose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/peertest"
	"github.com/vigil-obs/vigil/internal/sim"
)

// replayReport is `vigil replay --json`'s answer, the part the test reads.
type replayReport struct {
	From      time.Time    `json:"from"`
	To        time.Time    `json:"to"`
	Interval  string       `json:"interval"`
	Pages     []replayPage `json:"pages"`
	Incidents []incident   `json:"incidents"`
}

// incident is the part of a replay's incident the test reads.
type incident struct {
	Kind     string            `json:"kind"`
	Entity   map[string]string `json:"entity"`
	Severity string            `json:"severity"`
}

// replayPage is one page or ticket of a replay.
type replayPage struct {
	At       time.Time `json:"at"`
	Severity string    `json:"severity"`
	Revision int       `json:"revision"`
	Symptom  struct {
		Kind   string            `json:"kind"`
		Entity map[string]string `json:"entity"`
		Since  time.Time         `json:"since"`
	} `json:"symptom"`
	Summary string  `json:"summary"`
	Causes  []cause `json:"causes"`
}

// String is the page in one line, with its rank-1 cause, for failure
// messages.
func (p replayPage) String() string {
	s := fmt.Sprintf("%s %s rev %d %s %v", p.At.Format(time.RFC3339), p.Severity, p.Revision, p.Symptom.Kind, p.Symptom.Entity)
	if len(p.Causes) == 0 {
		return s + " (no causes)"
	}
	c := p.Causes[0]
	return fmt.Sprintf("%s → %s %v (%.3f)", s, c.Kind, c.Entity, c.Confidence)
}

// vigilReplay runs the vigil binary's replay with args and --json, checks
// the answer's shape against the range and interval asked for, and decodes
// it.
func vigilReplay(t *testing.T, from, to time.Time, interval time.Duration, args ...string) replayReport {
	t.Helper()
	args = append([]string{"replay", "--json", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339),
		"--interval", interval.String()}, args...)
	cmd := exec.Command(peertest.Vigil(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "vigil %v: %s", args, stderr.String())

	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &keys))
	require.ElementsMatch(t, []string{"from", "to", "interval", "pages", "incidents"}, slices.Collect(maps.Keys(keys)))
	var pages []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(keys["pages"], &pages))
	for _, p := range pages {
		require.ElementsMatch(t, []string{"at", "severity", "revision", "symptom", "summary", "causes"}, slices.Collect(maps.Keys(p)))
	}

	dec := json.NewDecoder(&stdout)
	var r replayReport
	require.NoError(t, dec.Decode(&r))
	require.False(t, dec.More(), "one JSON object on stdout")
	require.True(t, r.From.Equal(from), "from %s, asked %s", r.From, from)
	require.True(t, r.To.Equal(to), "to %s, asked %s", r.To, to)
	require.Equal(t, interval.String(), r.Interval)
	require.NotNil(t, r.Pages, "pages is a list, never null")
	for i, p := range r.Pages {
		require.Contains(t, []string{"page", "ticket"}, p.Severity, "page %d: %s", i, p)
		require.GreaterOrEqual(t, p.Revision, 1, "page %d: %s", i, p)
		require.NotEmpty(t, p.Symptom.Kind, "page %d: %s", i, p)
		require.NotEmpty(t, p.Symptom.Entity, "page %d: %s", i, p)
		require.False(t, p.Symptom.Since.After(p.At), "page %d: the symptom starts after its page: %s", i, p)
		require.NotEmpty(t, p.Summary, "page %d: %s", i, p)
		require.False(t, p.At.Before(from) || p.At.After(to), "page %d outside the range: %s", i, p)
		require.Zero(t, p.At.Sub(from)%interval, "page %d not on a cycle: %s", i, p)
		if i > 0 {
			require.False(t, p.At.Before(r.Pages[i-1].At), "pages in the order they went out: %s then %s", r.Pages[i-1], p)
		}
		for j, c := range p.Causes {
			require.Equal(t, j+1, c.Rank, "page %d: %s", i, p)
			require.NotEmpty(t, c.Kind, "page %d: %s", i, p)
		}
		require.True(t, slices.ContainsFunc(r.Incidents, func(inc incident) bool {
			return inc.Kind == p.Symptom.Kind && maps.Equal(inc.Entity, p.Symptom.Entity) && inc.Severity == p.Severity
		}), "page %d has no incident: %s", i, p)
	}
	return r
}

// firstPage returns the first page of severity page, and whether there is
// one.
func firstPage(r replayReport) (replayPage, bool) {
	i := slices.IndexFunc(r.Pages, func(p replayPage) bool { return p.Severity == "page" })
	if i < 0 {
		return replayPage{}, false
	}
	return r.Pages[i], true
}

// pagesText lists a replay's pages, one a line, for failure messages.
func pagesText(r replayReport) string {
	var b strings.Builder
	for _, p := range r.Pages {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

// TestReplayBackfill replays simulated runs (36 minutes, 4 nodes, a
// 2-rank training job and one vLLM replica, the fault 18 minutes in)
// through --input and through Prometheus 2.42 backfilled from the same
// OpenMetrics with promtool, from 10 minutes in to the end every minute. A
// healthy run pages nothing. A fault pages through both, the first page
// not before the onset, its rank-1 cause the injected kind on the injected
// entity, at the same instant and with the same rank-1 cause through both;
// and `vigil diagnose --at` that instant gives that rank-1 cause over
// either source.
func TestReplayBackfill(t *testing.T) {
	for _, bin := range []string{"promtool", "prometheus"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (make deb-deps installs it)", bin)
		}
	}
	const (
		duration = 36 * time.Minute
		onset    = 18 * time.Minute
		interval = time.Minute
	)
	for _, name := range []string{"healthy", "nvlink_degraded", "gpu_lost", "node_down", "kv_cache_exhausted"} {
		t.Run(name, func(t *testing.T) {
			sc, err := sim.ParseScenario(name)
			require.NoError(t, err)
			for i := range sc.Faults {
				sc.Faults[i].After = onset
			}
			s, err := sim.New(sim.Config{Seed: 1, Duration: duration, Nodes: 4, GPUsPerNode: 4, TrainingNodes: 2,
				Replicas: 1, NodeCPUs: 2, PeakRequestRate: 3}, sc)
			require.NoError(t, err)
			path, prom := backfilled(t, s)

			start := s.Config().Start
			from, to := start.Add(10*time.Minute), start.Add(duration)
			file := vigilReplay(t, from, to, interval, "--input", path)
			api := vigilReplay(t, from, to, interval, "--prometheus", prom.URL)
			both := fmt.Sprintf("--input pages:%s\n--prometheus pages:%s", pagesText(file), pagesText(api))

			if len(s.Truth()) == 0 {
				_, paged := firstPage(file)
				require.False(t, paged, "a healthy run pages through --input\n%s", both)
				_, paged = firstPage(api)
				require.False(t, paged, "a healthy run pages through --prometheus\n%s", both)
				return
			}
			truth := s.Truth()[0]
			require.True(t, truth.Onset.Equal(start.Add(onset)), "onset %s", truth.Onset)
			want, ok := firstPage(file)
			require.True(t, ok, "the fault pages through --input\n%s", both)
			got, ok := firstPage(api)
			require.True(t, ok, "the fault pages through --prometheus\n%s", both)
			for src, p := range map[string]replayPage{"--input": want, "--prometheus": got} {
				require.NotEmpty(t, p.Causes, "%s: the first page has causes\n%s", src, both)
				require.False(t, p.At.Before(truth.Onset), "%s: the first page is before the onset %s\n%s", src, truth.Onset, both)
				require.Equal(t, truth.Kind, p.Causes[0].Kind, "%s: the first page's rank-1 cause\n%s", src, both)
				require.True(t, eval.EntityMatch(truth.Entity, p.Causes[0].Entity),
					"%s: the first page's rank-1 cause is on %v, the fault on %v\n%s", src, p.Causes[0].Entity, truth.Entity, both)
			}
			require.True(t, want.At.Equal(got.At), "the first page's instant: --input %s, --prometheus %s\n%s", want, got, both)
			require.Equal(t, want.Causes[0].Kind, got.Causes[0].Kind, "the first page's rank-1 kind: --input %s, --prometheus %s\n%s", want, got, both)
			require.Equal(t, want.Causes[0].Entity, got.Causes[0].Entity, "the first page's rank-1 entity: --input %s, --prometheus %s\n%s", want, got, both)
			t.Logf("first page at onset%+v: --input %s; --prometheus %s", want.At.Sub(truth.Onset), want, got)

			at := want.At.Format(time.RFC3339)
			for src, d := range map[string]report{
				"--input":      vigilDiagnose(t, "--input", path, "--at", at),
				"--prometheus": vigilDiagnose(t, "--prometheus", prom.URL, "--at", at),
			} {
				require.NotEmpty(t, d.Causes, "diagnose %s --at %s finds no cause; the replay paged %s", src, at, want)
				require.Equal(t, want.Causes[0].Kind, d.Causes[0].Kind, "diagnose %s --at %s: rank 1 %s %v; the replay paged %s", src, at, d.Causes[0].Kind, d.Causes[0].Entity, want)
				require.Equal(t, want.Causes[0].Entity, d.Causes[0].Entity, "diagnose %s --at %s: rank 1 %s %v; the replay paged %s", src, at, d.Causes[0].Kind, d.Causes[0].Entity, want)
			}
		})
	}
}
