package nezha

import (
	"io"
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// HasLogs tells whether the day has log lines.
func (d *Day) HasLogs() bool { return len(d.logs) > 0 }

// CountLogs is how many log lines are timed between from and to.
func (d *Day) CountLogs(from, to time.Time) int {
	lo, hi := d.logRange(from, to)
	return hi - lo
}

// logRange is the index range of the lines timed between from and to.
func (d *Day) logRange(from, to time.Time) (int, int) {
	lo := sort.Search(len(d.logs), func(i int) bool { return !d.logs[i].Time.Before(from) })
	hi := sort.Search(len(d.logs), func(i int) bool { return d.logs[i].Time.After(to) })
	return lo, max(lo, hi)
}

// WriteLogs writes the lines timed between from and to as OTLP JSON, one
// export request a line, as an OpenTelemetry Collector's filelog receiver
// with its container parser writes them through the batch processor to its
// file exporter: in time order, a line for every 200 ms or 8,192 records;
// a resource per pod, with service.name its service (ServiceOf) and
// k8s.pod.name the pod; each record's body the text the container wrote,
// its time, and the trace and span the line names; no severity (the level
// is in the text, as the receiver leaves it without a parser for the
// application's layout). It returns the records and lines written.
func (d *Day) WriteLogs(w io.Writer, from, to time.Time) (records, lines int, err error) {
	lo, hi := d.logRange(from, to)
	var m plog.JSONMarshaler
	return writeBatched(w, d.logs[lo:hi], func(ll LogLine) time.Time { return ll.Time }, CollectorBatch, func(batch []LogLine) ([]byte, error) {
		ld := plog.NewLogs()
		byPod := map[string]plog.LogRecordSlice{}
		for i := range batch {
			ll := &batch[i]
			rs, ok := byPod[ll.Pod]
			if !ok {
				rl := ld.ResourceLogs().AppendEmpty()
				rl.Resource().Attributes().PutStr("service.name", ServiceOf(ll.Pod))
				rl.Resource().Attributes().PutStr("k8s.pod.name", ll.Pod)
				rs = rl.ScopeLogs().AppendEmpty().LogRecords()
				byPod[ll.Pod] = rs
			}
			lr := rs.AppendEmpty()
			lr.SetTimestamp(pcommon.NewTimestampFromTime(ll.Time))
			lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(ll.Time))
			lr.Body().SetStr(ll.Body)
			lr.SetTraceID(ll.Trace)
			lr.SetSpanID(ll.Span)
		}
		return m.MarshalLogs(ld)
	})
}
