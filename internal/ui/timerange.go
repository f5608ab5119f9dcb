package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxRange is the longest ?from=&to= window a page accepts.
const maxRange = 31 * 24 * time.Hour

// timeRange is the window of ?from=&to=. A zero From or To is not given.
type timeRange struct {
	From, To time.Time
}

// set reports whether the URL gave either end.
func (r timeRange) set() bool { return !r.From.IsZero() || !r.To.IsZero() }

// parseRange reads ?from= and ?to=: RFC 3339 times, the browser's
// datetime-local form (2026-11-12T02:40, UTC), Unix seconds, or a
// duration before now ("1h" for an hour ago). Either may be empty.
func parseRange(from, to string, now time.Time) (timeRange, error) {
	var r timeRange
	var err error
	if r.From, err = parseTime(from, now); err != nil {
		return timeRange{}, fmt.Errorf("bad time range: from=%q: %w", from, err)
	}
	if r.To, err = parseTime(to, now); err != nil {
		return timeRange{}, fmt.Errorf("bad time range: to=%q: %w", to, err)
	}
	if !r.From.IsZero() && !r.To.IsZero() {
		if !r.From.Before(r.To) {
			return timeRange{}, fmt.Errorf("bad time range: from (%s) is not before to (%s)", fmtTime(r.From), fmtTime(r.To))
		}
		if r.To.Sub(r.From) > maxRange {
			return timeRange{}, fmt.Errorf("bad time range: %s is longer than the %d days a page shows", r.To.Sub(r.From).Round(time.Hour), int(maxRange.Hours()/24))
		}
	}
	return r, nil
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
		return time.UnixMilli(int64(f * 1000)).UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("not a time (RFC 3339 like 2026-11-12T02:40:00Z, Unix seconds, or a duration before now like 1h)")
}

// window returns the range the request asked for, with the ends it left
// out taken from def.
func (r timeRange) window(def timeRange) timeRange {
	out := def
	if !r.From.IsZero() {
		out.From = r.From
	}
	if !r.To.IsZero() {
		out.To = r.To
	}
	if !out.From.Before(out.To) { // one end given, past the other default
		if r.From.IsZero() {
			out.From = out.To.Add(-def.To.Sub(def.From))
		} else {
			out.To = out.From.Add(def.To.Sub(def.From))
		}
	}
	return out
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
