package fileimport

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/spanmetrics"
)

// What a read-only command (diagnose, topology) derives from OTLP traces
// and logs given as --input: the series `vigil serve` derives from the
// same data when it receives it, so an offline diagnosis sees the request
// path and the logs' evidence as the server's would.
//
//   - traces: span metrics and the service graph (internal/spanmetrics,
//     with serve's defaults), on the clock of the spans: the newest end
//     time read so far. A line (one export request, as the Collector's file
//     exporter writes them) is cut by the 15 s flush interval its traces
//     end in (on the Unix clock's grid; a trace's spans stay together), and the totals are written whenever the
//     spans read cross into a later interval, at the newest end read before
//     it, and once more at the end, when the requests still waiting for
//     their other half are settled: what is written follows the spans' own
//     time, not the lines they come in (the same spans in 10 lines or in
//     1,000 give the same flushes);
//   - logs: the log-derived counters (internal/logsignals), each line's at
//     its newest record time, from the first line's time on.
//
// The spans and records themselves are not kept: the trace store is the
// server's. With Options.Spans, the names of the spans are (SpanIndex).

// appendable hands out one capturing appender.
type appendable struct{ app *captureAppender }

func (a appendable) AppenderV2(context.Context) storage.AppenderV2 { return a.app }

// otlpTracesToOpenMetrics derives span metrics and the service graph from
// OTLP JSON traces, one export request per line.
func otlpTracesToOpenMetrics(name string, data []byte, spans *SpanIndex) ([]byte, error) {
	app := &captureAppender{}
	var now time.Time
	cfg := spanmetrics.DefaultConfig()
	// The reader flushes, on the grid of serve's flush interval: the
	// consumer's own would flush up to an interval late after a line that
	// holds many intervals of spans.
	interval := time.Duration(cfg.FlushInterval)
	cfg.FlushInterval = model.Duration(math.MaxInt64)
	// Made at the first span's time, as logs' is: its clock starts there.
	var c *spanmetrics.Consumer
	var um ptrace.JSONUnmarshaler
	last := int64(math.MinInt64) // the flush interval of the spans read last
	// The consumer's clock is the newest span end of the chunks read so
	// far, moved chunk by chunk; eachLine's own only places the lines.
	var lineClock time.Time
	err := eachLine(name, "traces", data, func(line []byte) (time.Time, func() error, error) {
		td, err := um.UnmarshalTraces(line)
		if err != nil {
			return time.Time{}, nil, err
		}
		spans.add(td)
		chunks := splitByEnd(td, interval)
		return chunks[0].newest, func() error {
			for _, ch := range chunks {
				if b := ch.newest.UnixNano() / int64(interval); b > last {
					if last != math.MinInt64 {
						if err := c.Flush(context.Background()); err != nil {
							return err
						}
					}
					last = b
				}
				if ch.newest.After(now) {
					now = ch.newest
				}
				if c == nil {
					var err error
					if c, err = spanmetrics.New(cfg, appendable{app}, func() time.Time { return now }, nil, nil); err != nil {
						return fmt.Errorf("span metrics: %w", err)
					}
				}
				if err := c.ConsumeTraces(context.Background(), ch.td); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}, &lineClock)
	if err != nil {
		return nil, err
	}
	if c != nil {
		if err := c.Settle(context.Background()); err != nil {
			return nil, fmt.Errorf("%s: span metrics: %w", name, err)
		}
	}
	return app.openMetrics(), nil
}

// eachLine decodes each line of an OTLP JSON file of a signal, moves the
// clock *now to the line's newest time (it never goes back), and consumes
// the line; a line with no time, before any line with one, is skipped:
// nothing places it. Errors name the file and line.
func eachLine(name, signal string, data []byte, decode func(line []byte) (time.Time, func() error, error), now *time.Time) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		newest, consume, err := decode(line)
		if err != nil {
			return fmt.Errorf("%s:%d: OTLP %s JSON: %w", name, i+1, signal, err)
		}
		if newest.After(*now) {
			*now = newest
		}
		if now.IsZero() {
			continue
		}
		if err := consume(); err != nil {
			return fmt.Errorf("%s:%d: derive from OTLP %s: %w", name, i+1, signal, err)
		}
	}
	return nil
}

// traceChunk is the spans of a line that end in one flush interval.
type traceChunk struct {
	td     ptrace.Traces
	newest time.Time
}

// splitByEnd cuts a line's spans by the flush interval their trace's
// newest end in the line falls in (on the Unix clock's grid), in time
// order, so that a line holding minutes of spans is flushed every interval
// of them, as many small lines of the same spans are: what is written
// follows the spans, not the lines. A trace's spans stay together (a child
// ends before its parent, and the pair is matched in one batch, as the
// Collector's would be). A line within one interval (a Collector's batch
// of 200 ms, or an interval of 0) stays as it is; traces with no end go
// with the first chunk.
func splitByEnd(td ptrace.Traces, interval time.Duration) []traceChunk {
	traceEnd := map[pcommon.TraceID]pcommon.Timestamp{}
	var newest pcommon.Timestamp
	eachSpan(td, func(_ ptrace.ResourceSpans, _ ptrace.ScopeSpans, sp ptrace.Span) {
		traceEnd[sp.TraceID()] = max(traceEnd[sp.TraceID()], sp.EndTimestamp())
		newest = max(newest, sp.EndTimestamp())
	})
	whole := []traceChunk{{td, stampTime(newest)}}
	if interval <= 0 || newest == 0 {
		return whole
	}
	bucketOf := func(end pcommon.Timestamp) int64 { return end.AsTime().UnixNano() / int64(interval) }
	var keys []int64
	for _, end := range traceEnd {
		if b := bucketOf(end); end != 0 && !slices.Contains(keys, b) {
			keys = append(keys, b)
		}
	}
	if len(keys) <= 1 {
		return whole
	}
	slices.Sort(keys)
	out := make([]traceChunk, len(keys))
	for i := range out {
		out[i].td = ptrace.NewTraces()
	}
	// Each span goes to its chunk under a copy of its resource and scope,
	// one per scope and chunk.
	var last ptrace.ScopeSpans
	var dsts map[int]ptrace.ScopeSpans
	eachSpan(td, func(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, sp ptrace.Span) {
		if dsts == nil || ss != last {
			last, dsts = ss, map[int]ptrace.ScopeSpans{}
		}
		end := traceEnd[sp.TraceID()]
		n := 0
		if end != 0 {
			n, _ = slices.BinarySearch(keys, bucketOf(end))
		}
		to, ok := dsts[n]
		if !ok {
			ors := out[n].td.ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(ors.Resource())
			ors.SetSchemaUrl(rs.SchemaUrl())
			to = ors.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(to.Scope())
			to.SetSchemaUrl(ss.SchemaUrl())
			dsts[n] = to
		}
		sp.CopyTo(to.Spans().AppendEmpty())
		if t := stampTime(end); t.After(out[n].newest) {
			out[n].newest = t
		}
	})
	return out
}

// eachSpan calls fn with every span of td, its resource and its scope.
func eachSpan(td ptrace.Traces, fn func(ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				fn(rss.At(i), sss.At(j), spans.At(k))
			}
		}
	}
}

// stampTime is a timestamp as UTC time, zero for none.
func stampTime(ts pcommon.Timestamp) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return ts.AsTime().UTC()
}

// newestRecord is the latest time of ld's records, their timestamp or
// else when they were observed (zero if none has one).
func newestRecord(ld plog.Logs) time.Time {
	var newest time.Time
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				ts := lrs.At(k).Timestamp()
				if ts == 0 {
					ts = lrs.At(k).ObservedTimestamp()
				}
				if t := ts.AsTime(); ts != 0 && t.After(newest) {
					newest = t
				}
			}
		}
	}
	return newest.UTC()
}

// otlpLogsToOpenMetrics derives the log-derived counters from OTLP JSON
// logs, one export request per line. The counters start where the logs
// do: the consumer is made at the first line's time, as a server's starts
// counting when it starts receiving, so a series' leading zero lies in the
// logs' own time, not minutes before them.
func otlpLogsToOpenMetrics(name string, data []byte, spans *SpanIndex) ([]byte, error) {
	app := &captureAppender{}
	var now time.Time
	var c *logsignals.Consumer
	var um plog.JSONUnmarshaler
	err := eachLine(name, "logs", data, func(line []byte) (time.Time, func() error, error) {
		ld, err := um.UnmarshalLogs(line)
		if err != nil {
			return time.Time{}, nil, err
		}
		return newestRecord(ld), func() error {
			if c == nil {
				var err error
				if c, err = logsignals.New(logsignals.DefaultConfig(), appendable{app}, func() time.Time { return now }, nil, nil); err != nil {
					return fmt.Errorf("log signals: %w", err)
				}
				if spans != nil {
					c.SetSpanNames(spans)
				}
			}
			return c.ConsumeLogs(context.Background(), ld)
		}, nil
	}, &now)
	if err != nil {
		return nil, err
	}
	return app.openMetrics(), nil
}
