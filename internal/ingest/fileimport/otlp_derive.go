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
//     with serve's defaults), written after each line (one export request,
//     as the Collector's file exporter writes them) at the newest end time
//     of the spans read so far;
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
	cfg.FlushInterval = 0 // after every line: the clock jumps
	c, err := spanmetrics.New(cfg, appendable{app}, func() time.Time { return now }, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: span metrics: %w", name, err)
	}
	var um ptrace.JSONUnmarshaler
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		td, err := um.UnmarshalTraces(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: OTLP traces JSON: %w", name, i+1, err)
		}
		if t := newestSpanEnd(td); t.After(now) {
			now = t
		}
		if now.IsZero() {
			continue // no span with a time: nothing to place
		}
		if err := c.ConsumeTraces(context.Background(), td); err != nil {
			return nil, fmt.Errorf("%s:%d: span metrics: %w", name, i+1, err)
		}
	}
	return app.openMetrics(), nil
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
// logs, one export request per line.
func otlpLogsToOpenMetrics(name string, data []byte) ([]byte, error) {
	app := &captureAppender{}
	var now time.Time
	c, err := logsignals.New(logsignals.DefaultConfig(), appendable{app}, func() time.Time { return now }, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: log signals: %w", name, err)
	}
	var um plog.JSONUnmarshaler
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ld, err := um.UnmarshalLogs(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: OTLP logs JSON: %w", name, i+1, err)
		}
		if t := newestRecord(ld); t.After(now) {
			now = t
		}
		if now.IsZero() {
			continue // no record with a time: nothing to place
		}
		if err := c.ConsumeLogs(context.Background(), ld); err != nil {
			return nil, fmt.Errorf("%s:%d: log signals: %w", name, i+1, err)
		}
	}
	return app.openMetrics(), nil
}
