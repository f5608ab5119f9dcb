package traces

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

// The million-span test: 1M spans (100,000 traces of 10 spans, five
// services) and 100,000 log records are written under GOMEMLIMIT=512MiB;
// then a fresh process (this test binary again) opens the store with the
// default configuration under the same limit and reads every trace and
// every log back. Both report their peak RSS. It takes minutes, so it runs
// only when asked:
//
//	VIGIL_TRACES_1M=1 go test ./internal/traces -run TestMillionSpans -v -timeout 30m
const (
	millionEnv  = "VIGIL_TRACES_1M"
	serveDirEnv = "VIGIL_TRACES_SERVE_DIR"
	memLimit    = 512 << 20
	mTraces     = 100_000
	mSpans      = 10
	mPerBatch   = 10 // traces per batch: 100 spans
	mLogEvery   = 10 // every tenth batch is logged, one record per span
)

func TestMillionSpans(t *testing.T) {
	if os.Getenv(millionEnv) == "" {
		t.Skip("slow (minutes): set " + millionEnv + "=1 to run it")
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memLimit))
	dir := t.TempDir()
	clock := func() time.Time { return t0.Add(4 * time.Hour) }
	cfg := DefaultConfig()
	cfg.Dir = dir
	s, err := Open(cfg, nil, prometheus.NewRegistry(), clock)
	require.NoError(t, err)

	gen := tracestest.NewGen(1, t0.Add(time.Minute), 100*time.Millisecond)
	index := make([]byte, 0, mTraces*18) // per trace: id, span count, logged
	start := time.Now()
	for b := range mTraces / mPerBatch {
		td, infos := gen.Batch(mPerBatch, mSpans)
		require.NoError(t, s.ConsumeTraces(t.Context(), td))
		logged := b%mLogEvery == 0
		if logged {
			reqs := map[pcommon.TraceID]string{}
			for _, in := range infos {
				reqs[in.ID] = in.RequestID
			}
			require.NoError(t, s.ConsumeLogs(t.Context(), tracestest.Logs(td, reqs)))
		}
		for _, in := range infos {
			index = append(index, in.ID[:]...)
			index = append(index, byte(in.Spans), boolByte(logged))
		}
	}
	took := time.Since(start)
	disk := s.db.Metrics().DiskSpaceUsage()
	hwm, _ := procStatus("VmHWM")
	require.NoError(t, s.Close())
	t.Logf("wrote %d spans and %d logs in %s (%.0f spans/s); disk %d MiB (%.0f B/span incl. logs); writer peak RSS %d MiB",
		mTraces*mSpans, mTraces/mLogEvery*mSpans, took.Round(time.Millisecond),
		float64(mTraces*mSpans)/took.Seconds(), disk>>20, float64(disk)/float64(mTraces*mSpans), hwm>>20)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.bin"), index, 0o644))

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestMillionSpansServe$", "-test.v", "-test.timeout", "20m")
	cmd.Env = append(os.Environ(), serveDirEnv+"="+dir, "GOMEMLIMIT=512MiB")
	out, err := cmd.CombinedOutput()
	t.Logf("restarted process:\n%s", out)
	require.NoError(t, err)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// TestMillionSpansServe is the restarted process of TestMillionSpans.
func TestMillionSpansServe(t *testing.T) {
	dir := os.Getenv(serveDirEnv)
	if dir == "" {
		t.Skip("run by TestMillionSpans in a process of its own")
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.bin"))
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Dir = dir
	start := time.Now()
	s, err := Open(cfg, nil, prometheus.NewRegistry(), func() time.Time { return t0.Add(4 * time.Hour) })
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	opened := time.Since(start)
	openRSS, _ := procStatus("VmRSS")

	var spans, logs, traces int
	for rec := index; len(rec) >= 18; rec = rec[18:] {
		var id pcommon.TraceID
		copy(id[:], rec)
		td, err := s.Trace(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, int(rec[16]), td.SpanCount(), "trace %s", id)
		spans += td.SpanCount()
		traces++
		if rec[17] == 1 {
			recs, err := s.LogsForRequest(t.Context(), "req-"+id.String())
			require.NoError(t, err)
			require.Len(t, recs, int(rec[16]), "logs of request %s", id)
			logs += len(recs)
		}
		if traces%10_000 == 0 {
			found, err := s.SearchTraces(t.Context(), TraceQuery{Service: "vllm", Limit: 100})
			require.NoError(t, err)
			require.Len(t, found, 100)
		}
	}
	require.Equal(t, mTraces, traces)
	require.Equal(t, mTraces*mSpans, spans)
	require.Equal(t, mTraces/mLogEvery*mSpans, logs)
	rss, _ := procStatus("VmRSS")
	hwm, _ := procStatus("VmHWM")
	fmt.Printf("served %d traces (%d spans) and %d logs after restart in %s (open %s); RSS after open %d MiB, at end %d MiB, peak %d MiB; GOMEMLIMIT=%s\n",
		traces, spans, logs, time.Since(start).Round(time.Millisecond), opened.Round(time.Millisecond),
		openRSS>>20, rss>>20, hwm>>20, os.Getenv("GOMEMLIMIT"))
}
