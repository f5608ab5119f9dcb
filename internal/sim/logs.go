package sim

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// The logs of a run (RunOptions.OnLogs, Simulator.WriteLogs) are what a
// cluster's OpenTelemetry Collector would ship of it, as OTLP log records
// in simulated time, drawn from the seed and the world's state, so that
// the same Config and scenario give the same logs:
//
//   - every GPU node's kernel log as the journald receiver reads it (a map
//     body with MESSAGE, PRIORITY, SYSLOG_IDENTIFIER kernel, ...; resource
//     host.name, k8s.node.name and service.name kernel): the NVIDIA
//     driver's XID line for every XID the world raises (the decoy's XID 63
//     too), "GPU has fallen off the bus" after XID 79, the OOM killer's
//     lines while a node's memory is full (logs_kernel.go), AER lines for
//     PCIe replays, boot lines after a reboot and benign noise;
//   - the training ranks' output as the filelog receiver reads a
//     container's (resource k8s.namespace.name, k8s.pod.name,
//     k8s.node.name, service.name llm-pretrain): progress and checkpoint
//     lines of rank 0, the CUDA and NCCL errors of a rank whose GPU failed
//     (XID 79, 48, 94, 95), PyTorch's NCCL watchdog timeout from every
//     surviving rank Config.NCCLTimeout after the job hung, start-up lines
//     when the job restarts (logs_train.go);
//   - a Kubernetes event for every OOM kill of a pod's container, as the
//     k8sevents receiver gives it (resource k8s.object.*, with the pod's
//     k8s.pod.name and k8s.node.name).
//
// A node that is down ships nothing. Lines that merely mention an event
// (the OOM killer's "invoked oom-killer", NCCL's INFO lines, PyTorch's
// follow-up lines) are written as the real components write them, so that
// a matcher that counts them is caught.

// maxKernelXIDs bounds the XIDs a GPU keeps for the kernel log when no
// one writes it.
const maxKernelXIDs = 64

// logSource is where a log line comes from: a node's kernel, a pod's
// container, or the Kubernetes events of a pod.
type logSource struct {
	// res are the resource attributes, key and value in turn.
	res []string
	// journald: the body is a journald entry (a map) with the line as its
	// MESSAGE.
	journald bool
	node     *node
}

// logLine is one record of a round.
type logLine struct {
	src  *logSource
	at   time.Time
	sev  plog.SeverityNumber
	body string
	// attrs are the record's attributes, key and value in turn.
	attrs []string
	seq   int
}

// logWriter writes the logs of one run as it steps, one batch per round.
type logWriter struct {
	w *world
	// r draws what is not any node's or rank's own (pids, sizes).
	r *rng
	// lo and hi bound the round being written: (lo, hi].
	lo, hi  time.Time
	first   bool
	lines   []logLine
	sources map[string]*logSource
	kernel  kernelLog
	train   trainLog
	// oomKills are the pods' OOM kills already told.
	oomKills map[*pod]float64
}

func newLogWriter(w *world) *logWriter {
	lw := &logWriter{w: w, r: newRand(w.cfg, "logs"), first: true, sources: map[string]*logSource{},
		oomKills: map[*pod]float64{}}
	for _, p := range w.c.pods {
		lw.oomKills[p] = p.st.oomKills
	}
	lw.kernel = newKernelLog(w)
	lw.train = newTrainLog(w, lw.r)
	return lw
}

// round writes the logs of the interval that ends at the round at hi,
// after the world stepped to it.
func (lw *logWriter) round(hi time.Time) plog.Logs {
	lw.lo, lw.hi = hi.Add(-lw.w.cfg.ScrapeInterval), hi
	if lw.first {
		lw.lo, lw.first = hi.Add(-time.Millisecond), false
	}
	lw.kernelRound()
	lw.podOOMEvents()
	lw.trainRound()
	return lw.flush()
}

// when is back before the round's end, kept inside the round.
func (lw *logWriter) when(back time.Duration) time.Time {
	at := lw.hi.Add(-back)
	if !at.After(lw.lo) {
		at = lw.lo.Add(time.Millisecond)
	}
	return at.Truncate(time.Microsecond)
}

// within draws a time in the round, at least least before its end.
func (lw *logWriter) within(r *rng, least time.Duration) time.Time {
	span := lw.hi.Sub(lw.lo) - least
	if span <= 0 {
		return lw.when(least)
	}
	return lw.when(least + time.Duration(r.Int64N(int64(span))))
}

// add queues a line; one of a node that is down is lost.
func (lw *logWriter) add(src *logSource, at time.Time, sev plog.SeverityNumber, body string, attrs ...string) {
	if src.node != nil && src.node.cond.down {
		return
	}
	at = minTime(at, lw.hi)
	lw.lines = append(lw.lines, logLine{src: src, at: at, sev: sev, body: body, attrs: attrs, seq: len(lw.lines)})
}

func minTime(a, b time.Time) time.Time {
	if a.After(b) {
		return b
	}
	return a
}

// kernelSource is a node's kernel log.
func (lw *logWriter) kernelSource(n *node) *logSource {
	return lw.source("k/"+n.name, func() *logSource {
		return &logSource{node: n, journald: true, res: []string{
			"host.name", n.name, "k8s.node.name", n.name, "os.type", "linux", "service.name", "kernel",
		}}
	})
}

// podSource is a pod's container output.
func (lw *logWriter) podSource(p *pod) *logSource {
	return lw.source("p/"+p.namespace+"/"+p.name, func() *logSource {
		svc := p.ownerName
		if p.rep != nil {
			svc = lw.w.c.serve.name
		}
		return &logSource{node: p.node, res: []string{
			"k8s.namespace.name", p.namespace, "k8s.pod.name", p.name, "k8s.pod.uid", p.uid,
			"k8s.container.name", p.container, "k8s.node.name", p.node.name, "service.name", svc,
		}}
	})
}

// eventSource is the Kubernetes events about a pod, as the k8sevents
// receiver gives them, with the pod's name and node as the k8sattributes
// processor adds them.
func (lw *logWriter) eventSource(p *pod) *logSource {
	return lw.source("e/"+p.namespace+"/"+p.name, func() *logSource {
		return &logSource{res: []string{
			"k8s.object.kind", "Pod", "k8s.object.name", p.name, "k8s.object.uid", p.uid,
			"k8s.object.api_version", "v1", "k8s.object.fieldpath", "spec.containers{" + p.container + "}",
			"k8s.namespace.name", p.namespace, "k8s.pod.name", p.name, "k8s.node.name", p.node.name,
		}}
	})
}

func (lw *logWriter) source(key string, mk func() *logSource) *logSource {
	s, ok := lw.sources[key]
	if !ok {
		s = mk()
		lw.sources[key] = s
	}
	return s
}

// podOOMEvents tells every new OOM kill of a pod's container, as the
// Kubernetes event an event exporter reports it with.
func (lw *logWriter) podOOMEvents() {
	for _, p := range lw.w.c.pods {
		if p.st.oomKills <= lw.oomKills[p] {
			continue
		}
		lw.oomKills[p] = p.st.oomKills
		at := lw.within(lw.r, time.Second)
		lw.add(lw.eventSource(p), at, plog.SeverityNumberWarn,
			fmt.Sprintf("Container %s in pod %s/%s was terminated with reason OOMKilled (exit code 137)", p.container, p.namespace, p.name),
			"k8s.event.reason", "OOMKilled", "k8s.event.name", p.name+"."+hexID(lw.r, 16),
			"k8s.event.uid", uuid(lw.r), "k8s.event.count", "1")
	}
}

// flush turns the round's lines into one batch: a resource per source in
// the order of its first line, its records in time order.
func (lw *logWriter) flush() plog.Logs {
	ld := plog.NewLogs()
	if len(lw.lines) == 0 {
		return ld
	}
	slices.SortFunc(lw.lines, func(a, b logLine) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq))
	})
	recs := map[*logSource]plog.LogRecordSlice{}
	for _, l := range lw.lines {
		rs, ok := recs[l.src]
		if !ok {
			rl := ld.ResourceLogs().AppendEmpty()
			putAll(rl.Resource().Attributes(), l.src.res)
			rs = rl.ScopeLogs().AppendEmpty().LogRecords()
			recs[l.src] = rs
		}
		lw.record(rs.AppendEmpty(), l)
	}
	lw.lines = lw.lines[:0]
	return ld
}

// record writes one line as a log record.
func (lw *logWriter) record(lr plog.LogRecord, l logLine) {
	ts := pcommon.NewTimestampFromTime(l.at)
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	lr.SetSeverityNumber(l.sev)
	lr.SetSeverityText(severityText(l.sev))
	putAll(lr.Attributes(), l.attrs)
	if !l.src.journald {
		lr.Body().SetStr(l.body)
		return
	}
	n := l.src.node
	m := lr.Body().SetEmptyMap()
	m.PutStr("MESSAGE", l.body)
	m.PutStr("PRIORITY", journaldPriority(l.sev))
	m.PutStr("SYSLOG_FACILITY", "0")
	m.PutStr("SYSLOG_IDENTIFIER", "kernel")
	m.PutStr("_TRANSPORT", "kernel")
	m.PutStr("_HOSTNAME", n.name)
	m.PutStr("_SOURCE_MONOTONIC_TIMESTAMP", strconv.FormatInt(l.at.Sub(n.boot).Microseconds(), 10))
}

func putAll(m pcommon.Map, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m.PutStr(kv[i], kv[i+1])
		}
	}
}

func severityText(s plog.SeverityNumber) string {
	switch {
	case s >= plog.SeverityNumberError:
		return "ERROR"
	case s >= plog.SeverityNumberWarn:
		return "WARN"
	}
	return "INFO"
}

// journaldPriority is syslog's priority of a severity: err, warning, info.
func journaldPriority(s plog.SeverityNumber) string {
	switch {
	case s >= plog.SeverityNumberError:
		return "3"
	case s >= plog.SeverityNumberWarn:
		return "4"
	}
	return "6"
}

// WriteLogs simulates the whole run and writes its logs (see
// RunOptions.OnLogs) to out as OTLP JSON, one export request per scrape
// round that logged anything, one per line, as the OpenTelemetry
// Collector's file exporter writes them. The same Simulator writes the
// same bytes.
func (s *Simulator) WriteLogs(ctx context.Context, out io.Writer) error {
	w, err := newWorld(s.cfg, s.sc)
	if err != nil {
		return err
	}
	lw := newLogWriter(w)
	var m plog.JSONMarshaler
	for w.step() {
		if err := ctx.Err(); err != nil {
			return err
		}
		ld := lw.round(time.UnixMilli(w.out.t).UTC())
		if ld.LogRecordCount() == 0 {
			continue
		}
		b, err := m.MarshalLogs(ld)
		if err != nil {
			return fmt.Errorf("encode logs: %w", err)
		}
		if _, err := out.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("write logs: %w", err)
		}
	}
	return nil
}
