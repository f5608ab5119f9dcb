package fileimport

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/logsignals"
)

// maxIndexedSpans bounds a SpanIndex: past it, spans are not indexed (their
// first records count under no span name).
const maxIndexedSpans = 1 << 21

// SpanIndex holds the names of the spans of the trace files of one
// import, for its log files: `vigil serve` receives both and joins them
// as they come; an import reads its files one by one, so trace files
// given before log files index their spans here. It is not safe for
// concurrent use (an import reads its files in turn).
type SpanIndex struct {
	names map[logsignals.SpanKey]string
}

// NewSpanIndex returns an empty index.
func NewSpanIndex() *SpanIndex { return &SpanIndex{names: map[logsignals.SpanKey]string{}} }

// SpanName returns the name of the span k, "" when it was not read.
func (x *SpanIndex) SpanName(k logsignals.SpanKey) string {
	if x == nil {
		return ""
	}
	return x.names[k]
}

// add indexes td's spans; a nil index indexes nothing.
func (x *SpanIndex) add(td ptrace.Traces) {
	if x == nil {
		return
	}
	eachSpan(td, func(_ ptrace.ResourceSpans, _ ptrace.ScopeSpans, sp ptrace.Span) {
		if len(x.names) >= maxIndexedSpans || sp.Name() == "" {
			return
		}
		if k, ok := logsignals.KeyOf(sp.TraceID(), sp.SpanID()); ok {
			x.names[k] = sp.Name()
		}
	})
}
