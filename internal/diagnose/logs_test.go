package diagnose_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/store"
)

// logCounter writes one log-derived counter as internal/logsignals does:
// a 0 one step before its first event, then its total at each event only
// (the series goes stale in between).
func logCounter(t *testing.T, st *store.Embedded, lset labels.Labels, events ...time.Time) {
	t.Helper()
	app := st.AppenderV2(t.Context())
	_, err := app.Append(0, lset, 0, events[0].Add(-30*time.Second).UnixMilli(), 0, nil, nil, storage.AOptions{})
	require.NoError(t, err)
	for i, at := range events {
		_, err := app.Append(0, lset, 0, at.UnixMilli(), float64(i+1), nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
}

// requireStepOf: since is the first 30 s step at or after at.
func requireStepOf(t *testing.T, at, since time.Time) {
	t.Helper()
	require.False(t, since.Before(at), "%s before %s", since, at)
	require.Less(t, since.Sub(at), 30*time.Second, "%s too long after %s", since, at)
}

// seriesOf returns the label sets of a metric's series matching name=value.
func seriesOf(t *testing.T, st *store.Embedded, metric, name, value string) []labels.Labels {
	t.Helper()
	q, err := st.Querier(0, time.Now().Add(24*time.Hour).UnixMilli())
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(t.Context(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", metric),
		labels.MustNewMatcher(labels.MatchEqual, name, value))
	var out []labels.Labels
	for ss.Next() {
		out = append(out, ss.At().Labels())
	}
	require.NoError(t, ss.Err())
	return out
}

// TestDiagnoseLoggedXIDOnly: dcgm-exporter without the XID field (its
// default counters before 3.x leave DCGM_FI_DEV_XID_ERRORS out on some
// setups) and the kernel logging "NVRM: Xid (PCI:0000:xx:00): 79": the
// log's XID, mapped to the GPU by its PCI address, is gpu_lost on that
// GPU with the kernel log as evidence.
func TestDiagnoseLoggedXIDOnly(t *testing.T) {
	run := simulate(t, sim.Healthy, 1)
	temps := seriesOf(t, run.st, "DCGM_FI_DEV_GPU_TEMP", "gpu", "5")
	require.NotEmpty(t, temps)
	lset := temps[0]
	node := lset.Get("Hostname")
	if node == "" {
		node = lset.Get("hostname")
	}
	dcgmPCI := lset.Get("pci_bus_id") // "00000000:3B:00.0"
	require.NotEmpty(t, dcgmPCI)
	kernelPCI := strings.ToLower(strings.TrimSuffix(dcgmPCI[4:], ".0")) // "0000:3b:00"
	at := run.end.Add(-4 * time.Minute).Truncate(time.Second)
	logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_xid_total", "node", node, "xid", "79", "pci", kernelPCI), at)

	rep := diagnoseAt(t, run.st, run.end)
	c, ok := top(rep)
	require.True(t, ok, brief(rep))
	require.Equal(t, diagnose.KindGPULost, c.Kind, brief(rep))
	require.Equal(t, diagnose.Entity{"node": node, "gpu": "5"}, c.Entity, brief(rep))
	requireStepOf(t, at, *c.Since)
	require.Len(t, c.Evidence, 1)
	require.Equal(t, "vigil_log_xid_total", c.Evidence[0].Signal)
	require.Contains(t, c.Evidence[0].Summary, "kernel log: XID 79")
	require.Contains(t, c.Evidence[0].Summary, kernelPCI)
	require.Contains(t, c.Evidence[0].Query, `increase(vigil_log_xid_total{node="`+node+`", xid="79"}`)

	// An address no exporter reports: the node, named by the address.
	run = simulate(t, sim.Healthy, 1)
	logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_xid_total", "node", node, "xid", "48", "pci", "0000:ff:00"), at)
	rep = diagnoseAt(t, run.st, run.end)
	c, ok = top(rep)
	require.True(t, ok, brief(rep))
	require.Equal(t, diagnose.KindGPUMemoryErrors, c.Kind, brief(rep))
	require.Equal(t, diagnose.Entity{"node": node}, c.Entity)
	require.Contains(t, c.Summary, "PCI 0000:ff:00")
}

// TestDiagnoseLoggedXIDMerges: the kernel logs the XID dcgm-exporter
// reports: one cause, with both as evidence.
func TestDiagnoseLoggedXIDMerges(t *testing.T) {
	run := simulate(t, "gpu_xid_error", 1)
	require.Len(t, run.truth, 1)
	f := run.truth[0]
	rep := diagnoseAt(t, run.st, run.end)
	c, ok := top(rep)
	require.True(t, ok, brief(rep))
	require.Len(t, c.Evidence, 1, "dcgm-exporter's alone")
	code := xidOf(t, c.Summary)

	var pci string
	for _, l := range seriesOf(t, run.st, "DCGM_FI_DEV_GPU_TEMP", "gpu", f.Entity["gpu"]) {
		if l.Get("Hostname") == f.Entity["node"] || l.Get("hostname") == f.Entity["node"] {
			pci = strings.ToLower(strings.TrimSuffix(l.Get("pci_bus_id")[4:], ".0"))
		}
	}
	require.NotEmpty(t, pci)
	logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_xid_total", "node", f.Entity["node"], "xid", code, "pci", pci),
		f.Onset.Add(10*time.Second))
	rep2 := diagnoseAt(t, run.st, run.end)
	c2, ok := top(rep2)
	require.True(t, ok, brief(rep2))
	require.Equal(t, c.Kind, c2.Kind)
	require.Equal(t, c.Entity, c2.Entity)
	require.Len(t, rep2.Causes, len(rep.Causes), "no second cause for the same XID:\n%s", brief(rep2))
	require.Len(t, c2.Evidence, 2, brief(rep2))
	require.Equal(t, "DCGM_FI_DEV_XID_ERRORS", c2.Evidence[0].Signal)
	require.Equal(t, "vigil_log_xid_total", c2.Evidence[1].Signal)
}

// xidOf reads the XID code out of a cause's summary ("… (XID 48)" or
// "XID 13 (…)").
func xidOf(t *testing.T, s string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, "XID ")
	require.True(t, ok, s)
	code, _, _ := strings.Cut(after, " ")
	return strings.TrimSuffix(code, ")")
}

// trainingRanks returns the training job's pods and their nodes.
func trainingRanks(t *testing.T, st *store.Embedded) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range seriesOf(t, st, "kube_pod_info", "namespace", sim.TrainingNamespace) {
		if strings.HasPrefix(l.Get("pod"), sim.TrainingJob) {
			out[l.Get("pod")] = l.Get("node")
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestDiagnoseNCCLTimeouts: a hung collective whose GPUs keep reading
// busy. The ranks' NCCL watchdog timeouts are the job's stall; the summary
// names the rank that logged a CUDA error first; an OOM kill the kernel
// logged in that rank's pod is the cause that explains the stall.
func TestDiagnoseNCCLTimeouts(t *testing.T) {
	run := simulate(t, sim.Healthy, 1)
	ranks := trainingRanks(t, run.st)
	timeout := run.end.Add(-3 * time.Minute)
	var culprit string
	for pod, node := range ranks {
		if culprit == "" || pod < culprit {
			culprit = pod
		}
		logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "nccl_timeout",
			"namespace", sim.TrainingNamespace, "node", node, "pod", pod, "service", "trainer"), timeout, timeout.Add(time.Minute))
	}
	require.True(t, diagnoseAt(t, run.st, timeout.Add(-time.Minute)).Healthy, "nothing before the timeouts")

	// Neither an XID that is an event (63) nor an error long before the
	// timeouts is the rank that broke the collective.
	for _, node := range ranks {
		logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_xid_total", "node", node, "xid", "63", "pci", "0000:3b:00"),
			timeout.Add(-time.Minute))
		break
	}
	logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "cuda_error",
		"namespace", sim.TrainingNamespace, "node", ranks[culprit], "pod", culprit), timeout.Add(-16*time.Minute))
	logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "cuda_oom",
		"namespace", sim.TrainingNamespace, "node", ranks[culprit], "pod", culprit), timeout.Add(-2*time.Minute))
	rep := diagnoseAt(t, run.st, run.end)
	require.False(t, rep.Healthy)
	require.Len(t, rep.Symptoms, 1, brief(rep))
	s := rep.Symptoms[0]
	require.Equal(t, diagnose.SymptomTrainingStall, s.Kind)
	require.Equal(t, diagnose.Entity{"namespace": sim.TrainingNamespace, "workload": sim.TrainingJob}, s.Entity)
	requireStepOf(t, timeout, s.Since)
	require.Contains(t, s.Summary, "NCCL watchdog timeouts in")
	require.Contains(t, s.Summary, "first error before them: cuda oom in "+sim.TrainingNamespace+"/"+culprit)
	require.Empty(t, rep.Causes, "a CUDA OOM is a workload's bug, named in the summary, not a cause kind:\n%s", brief(rep))

	logCounter(t, run.st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "oom_killed",
		"namespace", sim.TrainingNamespace, "node", ranks[culprit], "pod", culprit), timeout.Add(-90*time.Second))
	rep = diagnoseAt(t, run.st, run.end)
	c, ok := top(rep)
	require.True(t, ok, brief(rep))
	require.Equal(t, diagnose.KindPodOOMKilled, c.Kind, brief(rep))
	require.Equal(t, diagnose.Entity{"namespace": sim.TrainingNamespace, "pod": culprit}, c.Entity)
	require.Equal(t, []int{0}, c.Explains, brief(rep))
	require.Equal(t, "vigil_log_events_total", c.Evidence[0].Signal)
	require.GreaterOrEqual(t, c.Confidence, 0.5)
}

// TestDiagnoseLoggedOOMOnNode: the kernel's OOM killer acting for the
// whole host (system_oom) is memory pressure on its node, a finding
// without a symptom; a container's limit the kernel enforced (oom_killed
// with no pod) is not.
func TestDiagnoseLoggedOOMOnNode(t *testing.T) {
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Minute)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, nil, nil)
	require.NoError(t, err)
	defer st.Close()
	logCounter(t, st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "oom_killed", "node", "cpu-node-1"),
		start.Add(20*time.Minute))
	rep := diagnoseAt(t, st, end)
	require.True(t, rep.Healthy, brief(rep))

	logCounter(t, st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "system_oom", "node", "cpu-node-2"),
		start.Add(20*time.Minute), start.Add(21*time.Minute))
	rep = diagnoseAt(t, st, end)
	require.Len(t, rep.Findings, 1, brief(rep))
	f := rep.Findings[0]
	require.Equal(t, diagnose.KindNodeMemoryPressure, f.Kind)
	require.Equal(t, diagnose.Entity{"node": "cpu-node-2"}, f.Entity)
	require.Contains(t, f.Evidence[0].Summary, "2 OOM kills logged")
}

// TestDiagnoseLogged5xx: a service without span metrics whose access log's
// 5xx lines jump is error_rate_high from then; a steady trickle is not.
func TestDiagnoseLogged5xx(t *testing.T) {
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Minute)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, nil, nil)
	require.NoError(t, err)
	defer st.Close()
	write := func(service string, perStep func(i int) int) {
		app := st.AppenderV2(t.Context())
		lset := labels.FromStrings("__name__", "vigil_log_events_total", "event", "http_5xx", "namespace", "shop", "service", service, "pod", service+"-0")
		total := 0
		for i := 0; start.Add(time.Duration(i) * 30 * time.Second).Before(end.Add(time.Second)); i++ {
			n := perStep(i)
			if n == 0 && total > 0 {
				continue // the writer appends a series only when it changes
			}
			total += n
			_, err := app.Append(0, lset, 0, start.Add(time.Duration(i)*30*time.Second).UnixMilli(), float64(total), nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, app.Commit())
	}
	write("checkout", func(i int) int {
		if i >= 40 {
			return 60
		}
		return i % 3
	})
	write("catalog", func(i int) int { return 2 + i%2 })
	rep := diagnoseAt(t, st, end)
	require.False(t, rep.Healthy)
	require.Len(t, rep.Symptoms, 1, brief(rep))
	s := rep.Symptoms[0]
	require.Equal(t, diagnose.SymptomErrorRateHigh, s.Kind)
	require.Equal(t, diagnose.Entity{"namespace": "shop", "service": "checkout"}, s.Entity)
	require.Equal(t, start.Add(20*time.Minute), s.Since.UTC())
	require.Contains(t, s.Summary, "checkout logged 60 HTTP 5xx responses per 30s")
}

// TestDiagnoseLogsOnly: no metrics at all, only logs: the kernel of one
// node says a GPU fell off the bus, and the pods of a training job then
// log NCCL watchdog timeouts. The job (named by its pods without their
// ordinal) stalled, and the lost GPU, from the kernel log, explains it.
func TestDiagnoseLogsOnly(t *testing.T) {
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Minute)
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return end }, nil, nil)
	require.NoError(t, err)
	defer st.Close()
	lost := start.Add(12 * time.Minute)
	logCounter(t, st, labels.FromStrings("__name__", "vigil_log_xid_total", "node", "gpu-b", "xid", "79", "pci", "0000:3b:00"), lost)
	logCounter(t, st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "cuda_error", "namespace", "ml", "node", "gpu-b", "pod", "trainer-2"), lost)
	for i, node := range []string{"gpu-a", "gpu-a", "gpu-b", "gpu-b"} {
		if i == 2 {
			continue // the broken rank logs no timeout
		}
		logCounter(t, st, labels.FromStrings("__name__", "vigil_log_events_total", "event", "nccl_timeout", "namespace", "ml",
			"node", node, "pod", fmt.Sprintf("trainer-%d", i)), lost.Add(10*time.Minute))
	}
	rep := diagnoseAt(t, st, end)
	require.Len(t, rep.Symptoms, 1, brief(rep))
	s := rep.Symptoms[0]
	require.Equal(t, diagnose.SymptomTrainingStall, s.Kind)
	require.Equal(t, diagnose.Entity{"namespace": "ml", "workload": "trainer"}, s.Entity)
	require.Contains(t, s.Summary, "NCCL watchdog timeouts in 3 of 3 pods")
	require.Contains(t, s.Summary, "first error before them: XID 79 in gpu-b")
	require.NotEmpty(t, rep.Causes, brief(rep))
	c := rep.Causes[0]
	require.Equal(t, diagnose.KindGPULost, c.Kind, brief(rep))
	require.Equal(t, diagnose.Entity{"node": "gpu-b"}, c.Entity)
	require.Equal(t, []int{0}, c.Explains)
}
