package hops

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Seconds is a duration that JSON writes as a number of seconds.
type Seconds time.Duration

// D is s as a time.Duration.
func (s Seconds) D() time.Duration { return time.Duration(s) }

// MarshalJSON writes s in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of seconds.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("seconds: %w", err)
	}
	if math.IsNaN(f) || math.Abs(f) > math.MaxInt64/1e9 {
		return fmt.Errorf("seconds: %v is out of range", f)
	}
	*s = Seconds(math.Round(f * 1e9))
	return nil
}

// String writes s for people: "3.2 ms", "420 ms", "6.4 s", "2m05s".
func (s Seconds) String() string { return human(time.Duration(s)) }

// human writes d with two or three significant digits.
func human(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d == 0:
		return "0 ms"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%s%.1f ms", neg, float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%s%d ms", neg, (d+time.Millisecond/2)/time.Millisecond)
	case d < 100*time.Second:
		return fmt.Sprintf("%s%.1f s", neg, d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%s%dm%02ds", neg, d/time.Minute, (d%time.Minute)/time.Second)
}

// Trace is the breakdown of one trace.
type Trace struct {
	TraceID       string `json:"trace_id"`
	RootService   string `json:"root_service"`
	RootOperation string `json:"root_operation"`
	// Route is the root span's http.route, else its name.
	Route string    `json:"route"`
	Start time.Time `json:"start"`
	// Duration is the root span's; the services' exclusive times add up
	// to it.
	Duration Seconds `json:"duration_seconds"`
	// Error is set when the root span has status ERROR.
	Error bool `json:"error"`
	// Services are the services and virtual nodes on the critical path,
	// in the order they were first called.
	Services []ServiceTime `json:"services"`
	// CriticalPath is the path's segments in time order.
	CriticalPath []Segment `json:"critical_path"`
	// Spans are every span of the trace, depth first, children by start:
	// the rows of the waterfall.
	Spans []Span `json:"spans"`
	// Warnings say what was repaired: orphans, clock skew, other traces.
	Warnings []string `json:"warnings"`
}

// ServiceTime is one service's (or virtual node's) exclusive time on the
// critical path of a trace.
type ServiceTime struct {
	Service string `json:"service"`
	// Role is what the service does on the path (see the package doc).
	Role string `json:"role"`
	// Virtual is set for a service with no spans of its own.
	Virtual   bool    `json:"virtual,omitempty"`
	Exclusive Seconds `json:"exclusive_seconds"`
	// Share is Exclusive over the trace's duration, in [0, 1].
	Share float64 `json:"share"`
}

// Segment is a stretch of the critical path spent in one span.
type Segment struct {
	SpanID string `json:"span_id"`
	// Service is the service or virtual node the time counts for.
	Service string `json:"service"`
	Name    string `json:"name"`
	// Offset is from the root span's start.
	Offset   Seconds `json:"offset_seconds"`
	Duration Seconds `json:"duration_seconds"`
}

// Span is one row of the waterfall.
type Span struct {
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
	Service      string `json:"service"`
	Name         string `json:"name"`
	// Kind is SERVER, CLIENT, INTERNAL, PRODUCER, CONSUMER or UNSPECIFIED.
	Kind  string `json:"kind"`
	Depth int    `json:"depth"`
	// Offset is from the root span's start, after any clock-skew shift.
	Offset   Seconds `json:"offset_seconds"`
	Duration Seconds `json:"duration_seconds"`
	// Critical is the span's exclusive time on the critical path.
	Critical Seconds `json:"critical_seconds"`
	// Node is the virtual node Critical counts for, when not Service.
	Node  string `json:"node,omitempty"`
	Error bool   `json:"error,omitempty"`
	// Async marks a FOLLOWS_FROM or consumer child: off the path.
	Async bool `json:"async,omitempty"`
	// Orphan marks a span whose parent is not in the trace.
	Orphan bool `json:"orphan,omitempty"`
	// Shift is how far clock-skew adjustment moved the span.
	Shift Seconds `json:"clock_shift_seconds,omitempty"`
}

// RouteBreakdown aggregates the breakdowns of a route's traces in a window.
type RouteBreakdown struct {
	Route  string    `json:"route"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Traces int       `json:"traces"`
	Errors int       `json:"errors"`
	// Sampled is how many of the newest traces were broken down.
	Sampled int `json:"sampled"`
	// P50, P95 and Max are of the root spans' durations, over all traces.
	P50 Seconds `json:"p50_seconds"`
	P95 Seconds `json:"p95_seconds"`
	Max Seconds `json:"max_seconds"`
	// Services are in the order they are first called, as in a Trace.
	Services []ServiceStats `json:"services"`
	// Slowest are the slowest traces of the window, slowest first.
	Slowest []TraceRef `json:"slowest"`
}

// ServiceStats is one service's exclusive time on the critical paths of a
// route's sampled traces.
type ServiceStats struct {
	Service string `json:"service"`
	Role    string `json:"role"`
	Virtual bool   `json:"virtual,omitempty"`
	// Traces is how many sampled traces it is on the path of.
	Traces int     `json:"traces"`
	P50    Seconds `json:"p50_seconds"`
	P95    Seconds `json:"p95_seconds"`
	// Share is its exclusive time over the sampled traces' duration.
	Share float64 `json:"share"`
}

// TraceRef points at one trace.
type TraceRef struct {
	TraceID  string    `json:"trace_id"`
	Start    time.Time `json:"start"`
	Duration Seconds   `json:"duration_seconds"`
	Error    bool      `json:"error,omitempty"`
}
