package sim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/store"
)

// logRec is one simulated log record, read back from WriteLogs' OTLP JSON,
// with what internal/logsignals finds in it.
type logRec struct {
	at   time.Time
	res  map[string]string
	text string
	m    logsignals.Match
}

// node is the node the record names, as logsignals reads it.
func (r logRec) node() string { return r.res["k8s.node.name"] }

// simLogs simulates a scenario and reads its logs back.
func simLogs(t *testing.T, cfg Config, name string) (*Simulator, []logRec, []byte) {
	t.Helper()
	sc, err := ParseScenario(name)
	require.NoError(t, err)
	s, err := New(cfg, sc)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, s.WriteLogs(t.Context(), &buf))
	var out []logRec
	sc2 := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc2.Buffer(nil, 64<<20)
	var um plog.JSONUnmarshaler
	for sc2.Scan() {
		ld, err := um.UnmarshalLogs(sc2.Bytes())
		require.NoError(t, err)
		out = append(out, logRecs(ld)...)
	}
	require.NoError(t, sc2.Err())
	return s, out, buf.Bytes()
}

func logRecs(ld plog.Logs) []logRec {
	var out []logRec
	for i := range ld.ResourceLogs().Len() {
		rl := ld.ResourceLogs().At(i)
		res := map[string]string{}
		for k, v := range rl.Resource().Attributes().All() {
			res[k] = v.AsString()
		}
		for j := range rl.ScopeLogs().Len() {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				text := lr.Body().AsString()
				if lr.Body().Type() == pcommon.ValueTypeMap {
					v, _ := lr.Body().Map().Get("MESSAGE")
					text = v.Str()
				}
				out = append(out, logRec{at: lr.Timestamp().AsTime(), res: res, text: text, m: logsignals.MatchRecord(lr)})
			}
		}
	}
	return out
}

// events returns the records that show e.
func events(rs []logRec, e logsignals.Event) []logRec {
	var out []logRec
	for _, r := range rs {
		if r.m.Events.Has(e) {
			out = append(out, r)
		}
	}
	return out
}

// TestLogsDeterministic: the same Config and scenario give the same logs
// byte for byte; another seed gives others.
func TestLogsDeterministic(t *testing.T) {
	cfg := Config{Seed: 3, Duration: 20 * time.Minute}
	_, a, ab := simLogs(t, cfg, "gpu_lost")
	_, _, bb := simLogs(t, cfg, "gpu_lost")
	require.NotEmpty(t, a)
	require.Equal(t, sha256.Sum256(ab), sha256.Sum256(bb))
	cfg.Seed = 4
	_, _, cb := simLogs(t, cfg, "gpu_lost")
	require.NotEqual(t, sha256.Sum256(ab), sha256.Sum256(cb))
}

// TestLogsHealthy: a healthy run logs kernel noise, boot-free, and the
// training job's progress, and nothing logsignals counts but the row-remap
// decoy's XID 63 on its GPU.
func TestLogsHealthy(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		s, rs, _ := simLogs(t, Config{Seed: seed, Duration: 30 * time.Minute}, Healthy)
		var remap Decoy
		for _, d := range s.Decoys() {
			if d.Kind == DecoyRowRemap {
				remap = d
			}
		}
		var kernel, train int
		for _, r := range rs {
			switch r.res["service.name"] {
			case "kernel":
				kernel++
			case TrainingJob:
				train++
			}
			if r.m.Events.Empty() {
				continue
			}
			require.Equal(t, "xid", r.m.Events.String(), "seed %d: %s", seed, r.text)
			require.Equal(t, 63, r.m.XID, r.text)
			require.Equal(t, remap.Entity["node"], r.node())
			require.Equal(t, driverPCI(pciOf(t, s, remap.Entity)), r.m.PCI)
		}
		require.Len(t, events(rs, logsignals.EventXID), 1, "seed %d: the decoy's XID 63", seed)
		require.Positive(t, kernel, "seed %d: kernel noise", seed)
		require.Positive(t, train, "seed %d: training progress", seed)
	}
}

// pciOf is the PCI bus ID of the GPU an entity names.
func pciOf(t *testing.T, s *Simulator, ent map[string]string) string {
	t.Helper()
	c := newCluster(s.Config())
	for _, n := range c.nodes {
		for _, g := range n.gpus {
			if n.name == ent["node"] && g.idx == atoi(t, ent["gpu"]) {
				return g.pci
			}
		}
	}
	t.Fatalf("no GPU %v", ent)
	return ""
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestLogsXID: every XID fault's kernel line carries the fault's code and
// its GPU's PCI address as the driver writes it, on its node, at or after
// its onset and before the round that saw it ended; a lost GPU also logs
// that it fell off the bus. The rank on a GPU that broke logs a CUDA error
// right after the XID.
func TestLogsXID(t *testing.T) {
	for _, c := range []struct {
		scenario string
		code     int
		rank     bool
	}{
		{"gpu_xid_error", 119, false}, {"gpu_xid_error/109", 109, false}, {"gpu_lost", 79, true},
		{"gpu_memory_errors", 48, true}, {"gpu_memory_errors/94", 94, true}, {"gpu_memory_errors/95", 95, true},
		{"nvlink_degraded", 74, false},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			s, rs, _ := simLogs(t, Config{Seed: 5, Duration: 30 * time.Minute, Labels: Labels{XIDField: Off}}, c.scenario)
			f := s.Truth()[0]
			pci := driverPCI(pciOf(t, s, f.Entity))
			var got []logRec
			for _, r := range events(rs, logsignals.EventXID) {
				if r.m.XID == c.code {
					got = append(got, r)
				}
			}
			require.NotEmpty(t, got)
			first := got[0]
			require.Equal(t, f.Entity["node"], first.node())
			require.Equal(t, pci, first.m.PCI)
			require.False(t, first.at.Before(f.Onset.Add(-s.Config().ScrapeInterval)), "logged in the onset's round")
			require.True(t, first.at.Before(f.Onset.Add(time.Second)), "at most the onset")
			if c.code == 79 {
				require.Len(t, events(rs, logsignals.EventGPUFellOffBus), 2, "the XID line and the driver's own")
			}
			cuda := events(rs, logsignals.EventCUDAError)
			if !c.rank {
				require.Empty(t, cuda)
				return
			}
			require.NotEmpty(t, cuda)
			require.Equal(t, f.Entity["node"], cuda[0].node())
			require.Equal(t, TrainingNamespace, cuda[0].res["k8s.namespace.name"])
			require.True(t, cuda[0].at.After(first.at))
			require.NotEmpty(t, events(rs, logsignals.EventNCCLError))
		})
	}
}

// TestLogsNCCLTimeout: when a rank is lost the other ranks' watchdogs log
// the timeout Config.NCCLTimeout later, one line per local rank of every
// surviving pod, none before; a job that only slows logs none.
func TestLogsNCCLTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{2 * time.Minute, DefaultNCCLTimeout} {
		cfg := Config{Seed: 6, Duration: 40 * time.Minute, NCCLTimeout: timeout}
		s, rs, _ := simLogs(t, cfg, "gpu_memory_errors")
		f, rc := s.Truth()[0], s.Config()
		tos := events(rs, logsignals.EventNCCLTimeout)
		require.Len(t, tos, (rc.TrainingNodes-1)*rc.GPUsPerNode, "every local rank of the surviving pods")
		pods := map[string]bool{}
		for _, r := range tos {
			require.False(t, r.at.Before(f.Onset.Add(timeout-rc.ScrapeInterval)), "%s: not before the timeout: %s", timeout, r.at)
			require.True(t, r.at.Before(f.Onset.Add(timeout+time.Second)), "%s: at the timeout: %s", timeout, r.at)
			require.Contains(t, r.text, "Timeout(ms)="+strconv.FormatInt(timeout.Milliseconds(), 10))
			require.NotEqual(t, f.Entity["node"], r.node(), "the broken rank logs its CUDA error instead")
			pods[r.res["k8s.pod.name"]] = true
		}
		require.Len(t, pods, rc.TrainingNodes-1)
	}
	for _, name := range []string{"nvlink_degraded", "straggler", Healthy} {
		_, rs, _ := simLogs(t, Config{Seed: 6, Duration: 40 * time.Minute}, name)
		require.Empty(t, events(rs, logsignals.EventNCCLTimeout), name)
	}
}

// TestLogsNodeDown: a node that is down logs nothing; one that reboots
// logs its boot (the driver's module line is no event); the ranks that
// waited for it time out, not the restarted one.
func TestLogsNodeDown(t *testing.T) {
	s, rs, _ := simLogs(t, Config{Seed: 7, Duration: 40 * time.Minute}, "node_down/reboot")
	f := s.Truth()[0]
	node := f.Entity["node"]
	var boot bool
	for _, r := range rs {
		if r.node() != node {
			continue
		}
		down := !r.at.Before(f.Onset) && r.at.Before(f.Onset.Add(nodeRebootFor-s.Config().ScrapeInterval))
		require.False(t, down, "nothing while down: %s %s", r.at, r.text)
		if strings.HasPrefix(r.text, "NVRM: loading NVIDIA") {
			boot = true
			require.True(t, r.m.Events.Empty())
		}
	}
	require.True(t, boot, "boot lines")
	tos := events(rs, logsignals.EventNCCLTimeout)
	require.Len(t, tos, (s.Config().TrainingNodes-1)*s.Config().GPUsPerNode)
	for _, r := range tos {
		require.NotEqual(t, node, r.node())
	}
}

// TestLogsOOM: a pod's OOM kill is one Kubernetes event with the pod's
// attributes; a node whose memory fills logs the OOM killer's kill (one
// record, the other lines are no event) with no pod; subtle memory
// pressure kills nothing.
func TestLogsOOM(t *testing.T) {
	s, rs, _ := simLogs(t, Config{Seed: 8, Duration: 30 * time.Minute}, "pod_oom_killed")
	f := s.Truth()[0]
	ooms := events(rs, logsignals.EventOOMKilled)
	require.Len(t, ooms, 1)
	require.Equal(t, f.Entity["pod"], ooms[0].res["k8s.pod.name"])
	require.Equal(t, f.Entity["namespace"], ooms[0].res["k8s.namespace.name"])
	require.NotEmpty(t, ooms[0].node())

	s, rs, _ = simLogs(t, Config{Seed: 8, Duration: 30 * time.Minute}, "node_memory_pressure")
	f = s.Truth()[0]
	ooms = events(rs, logsignals.EventOOMKilled)
	require.NotEmpty(t, ooms)
	for _, r := range ooms {
		require.Equal(t, f.Entity["node"], r.node())
		require.Empty(t, r.res["k8s.pod.name"])
		require.Contains(t, r.text, "Out of memory: Killed process")
		require.False(t, r.at.Before(f.Onset))
	}
	_, rs, _ = simLogs(t, Config{Seed: 8, Duration: 30 * time.Minute}, "node_memory_pressure/subtle")
	require.Empty(t, events(rs, logsignals.EventOOMKilled))
}

// TestRunOnLogs: Run hands OnLogs the logs WriteLogs writes, each batch
// before the round's OnScrape and no later than its time, and appends the
// same samples with the hook as without.
func TestRunOnLogs(t *testing.T) {
	cfg := small(9)
	cfg.Duration = 20 * time.Minute
	sc, err := ParseScenario("gpu_lost")
	require.NoError(t, err)
	_, want, _ := simLogs(t, cfg, "gpu_lost")
	s, err := New(cfg, sc)
	require.NoError(t, err)
	clock := NewClock(time.Time{})
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), clock.Now, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	var got []logRec
	var pending bool
	err = s.Run(t.Context(), st, RunOptions{Clock: clock,
		OnLogs: func(_ context.Context, ld plog.Logs) error {
			require.False(t, pending)
			pending = true
			for _, r := range logRecs(ld) {
				require.False(t, r.at.After(clock.Now()), "no record after the round")
				got = append(got, r)
			}
			return nil
		},
		OnScrape: func(context.Context, Scrape) error { pending = false; return nil },
	})
	require.NoError(t, err)
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i].text, got[i].text)
		require.Equal(t, want[i].at, got[i].at)
	}
	file := simulateScenario(t, cfg, sc)
	require.Equal(t, allSamples(t, file.store), allSamples(t, st))
}

// TestXIDFieldOff: without the XID field dcgm-exporter exports neither
// the sticky XID gauge nor the XID count; by default it exports the gauge.
func TestXIDFieldOff(t *testing.T) {
	for _, c := range []struct {
		field string
		want  bool
	}{{"", true}, {On, true}, {Off, false}} {
		cfg := Config{Seed: 2, Duration: 10 * time.Minute, Labels: Labels{XIDField: c.field, XIDCount: On}}
		sc, err := ParseScenario("gpu_lost")
		require.NoError(t, err)
		s, err := New(cfg, sc)
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, s.WriteOpenMetrics(context.Background(), &buf))
		require.Equal(t, c.want, bytes.Contains(buf.Bytes(), []byte("DCGM_FI_DEV_XID_ERRORS{")), c.field)
		require.Equal(t, c.want, bytes.Contains(buf.Bytes(), []byte("DCGM_EXP_XID_ERRORS_COUNT{")), c.field)
		require.True(t, bytes.Contains(buf.Bytes(), []byte("DCGM_FI_DEV_GPU_TEMP{")))
	}
	_, err := New(Config{Labels: Labels{XIDField: "maybe"}}, Scenario{Name: Healthy})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(Config{NCCLTimeout: time.Hour}, Scenario{Name: Healthy})
	require.ErrorIs(t, err, ErrInvalidConfig)
}
