package fileimport

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/storage"
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
//     time read so far, with one line (one export request, as the
//     Collector's file exporter writes them) at a time. The totals are
//     written every flush interval of that clock, as serve writes them
//     every flush interval of its own, and once more at the end, when the
//     requests still waiting for their other half are settled: what is
//     written grows with the spans' time span, not with the number of
//     lines they come in;
//   - logs: the log-derived counters (internal/logsignals), each line's at
//     its newest record time.
//
// The spans and records themselves are not kept: the trace store is the
// server's.

// appendable hands out one capturing appender.
type appendable struct{ app *captureAppender }

func (a appendable) AppenderV2(context.Context) storage.AppenderV2 { return a.app }

// otlpTracesToOpenMetrics derives span metrics and the service graph from
// OTLP JSON traces, one export request per line.
func otlpTracesToOpenMetrics(name string, data []byte) ([]byte, error) {
	app := &captureAppender{}
	var now time.Time
	cfg := spanmetrics.DefaultConfig()
	c, err := spanmetrics.New(cfg, appendable{app}, func() time.Time { return now }, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: span metrics: %w", name, err)
	}
	var um ptrace.JSONUnmarshaler
	err = eachLine(name, "traces", data, func(line []byte) (time.Time, func() error, error) {
		td, err := um.UnmarshalTraces(line)
		if err != nil {
			return time.Time{}, nil, err
		}
		return newestSpanEnd(td), func() error { return c.ConsumeTraces(context.Background(), td) }, nil
	}, &now)
	if err != nil {
		return nil, err
	}
	if !now.IsZero() {
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

// newestSpanEnd is the latest end time of td's spans (zero if none has
// one).
func newestSpanEnd(td ptrace.Traces) time.Time {
	var newest time.Time
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				if t := spans.At(k).EndTimestamp().AsTime(); spans.At(k).EndTimestamp() != 0 && t.After(newest) {
					newest = t
				}
			}
		}
	}
	return newest.UTC()
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
func otlpLogsToOpenMetrics(name string, data []byte) ([]byte, error) {
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
			}
			return c.ConsumeLogs(context.Background(), ld)
		}, nil
	}, &now)
	if err != nil {
		return nil, err
	}
	return app.openMetrics(), nil
}
