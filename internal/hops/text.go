package hops

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/model"
)

// Text layout.
const (
	barWidth = 40
	// maxRows is how many waterfall rows WriteText prints.
	maxRows = 300
	// maxName is the widest span name column.
	maxName = 64
)

// summary is the one-line breakdown: "API gateway 40 ms, application
// 70 ms, …", a role named once per service (with the service's name
// when two services share it).
func summary(items []ServiceTime) string {
	count := map[string]int{}
	for _, s := range items {
		count[s.Role]++
	}
	parts := make([]string, 0, len(items))
	for _, s := range items {
		label := s.Role
		if count[s.Role] > 1 || label == "" {
			label = strings.TrimSpace(s.Role + " " + s.Service)
		}
		parts = append(parts, label+" "+s.Exclusive.String())
	}
	return strings.Join(parts, ", ")
}

// WriteText prints the breakdown of one trace: a headline, the critical
// path in one line, each service's exclusive time and share, and the
// waterfall of its spans (# marks a span on the critical path).
func WriteText(w io.Writer, t Trace) error {
	if t.TraceID == "" {
		_, err := fmt.Fprintln(w, "The trace has no spans.")
		return err
	}
	status := ""
	if t.Error {
		status = "  ERROR"
	}
	fmt.Fprintf(w, "trace %s  %s (%s)  %s  %s%s\n", t.TraceID, t.RootOperation, t.RootService, t.Duration, t.Start.UTC().Format("2006-01-02 15:04:05.000 MST"), status)
	fmt.Fprintf(w, "critical path: %s\n", summary(t.Services))
	for _, warn := range t.Warnings {
		fmt.Fprintf(w, "note: %s\n", warn)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tROLE\tON PATH\tSHARE\t")
	for _, s := range t.Services {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t\n", s.Service, s.Role, s.Exclusive, 100*s.Share)
	}
	fmt.Fprintf(tw, "total\t\t%s\t%.1f%%\t\n", t.Duration, 100*shareSum(t.Services))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return writeWaterfall(w, t)
}

func shareSum(s []ServiceTime) float64 {
	sum := 0.0
	for _, x := range s {
		sum += x.Share
	}
	return sum
}

// writeWaterfall prints one row per span: its name indented by depth, its
// start and duration, its time on the critical path and a bar.
func writeWaterfall(w io.Writer, t Trace) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SPAN\tSTART\tDURATION\tON PATH\t|%s|\n", strings.Repeat(" ", barWidth))
	for i, s := range t.Spans {
		if i == maxRows {
			fmt.Fprintf(tw, "… %d more spans (--json prints them all)\t\t\t\t\n", len(t.Spans)-maxRows)
			break
		}
		name := strings.Repeat("  ", min(s.Depth, 12)) + s.Service + " " + s.Name
		if r := []rune(name); len(r) > maxName {
			name = string(r[:maxName-1]) + "…"
		}
		var flags []string
		if s.Node != "" {
			flags = append(flags, "→ "+s.Node)
		}
		for _, f := range []struct {
			on   bool
			text string
		}{{s.Error, "error"}, {s.Async, "async"}, {s.Orphan, "orphan"}, {s.Shift != 0, "shifted " + s.Shift.String()}} {
			if f.on {
				flags = append(flags, f.text)
			}
		}
		if len(flags) > 0 {
			name += " (" + strings.Join(flags, ", ") + ")"
		}
		onPath := ""
		if s.Critical > 0 {
			onPath = s.Critical.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t|%s|\n", name, s.Offset, s.Duration, onPath, bar(s, t.Duration.D()))
	}
	return tw.Flush()
}

// bar draws the span's extent on a line of barWidth characters spanning
// the root: # when the span is on the critical path, = otherwise.
func bar(s Span, total time.Duration) string {
	b := []byte(strings.Repeat(" ", barWidth))
	if total <= 0 {
		return string(b)
	}
	pos := func(d time.Duration) int {
		return max(0, min(barWidth, int(float64(d)/float64(total)*barWidth+0.5)))
	}
	from, to := pos(s.Offset.D()), pos(s.Offset.D()+s.Duration.D())
	if to <= from {
		if from == barWidth {
			from--
		}
		to = from + 1
	}
	c := byte('=')
	if s.Critical > 0 {
		c = '#'
	}
	for i := from; i < to; i++ {
		b[i] = c
	}
	return string(b)
}

// WriteRouteText prints the breakdown of each route: its traces, latency
// and errors, each service's median and 95th-percentile time on the
// critical path and share, and the slowest traces.
func WriteRouteText(w io.Writer, routes []RouteBreakdown) error {
	if len(routes) == 0 {
		_, err := fmt.Fprintln(w, "No traces in the window.")
		return err
	}
	for i, r := range routes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeRoute(w, r); err != nil {
			return err
		}
	}
	return nil
}

func writeRoute(w io.Writer, r RouteBreakdown) error {
	window := model.Duration(r.To.Sub(r.From).Round(time.Second))
	fmt.Fprintf(w, "route %s  %d traces in the %s to %s", r.Route, r.Traces, window, r.To.UTC().Format("2006-01-02 15:04:05 MST"))
	if r.Traces == 0 {
		_, err := fmt.Fprintln(w)
		return err
	}
	fmt.Fprintf(w, "  p50 %s  p95 %s  max %s  errors %.1f%%\n", r.P50, r.P95, r.Max, 100*float64(r.Errors)/float64(r.Traces))
	med := make([]ServiceTime, 0, len(r.Services))
	for _, s := range r.Services {
		med = append(med, ServiceTime{Service: s.Service, Role: s.Role, Exclusive: s.P50})
	}
	fmt.Fprintf(w, "critical path (medians): %s\n", summary(med))
	if r.Sampled < r.Traces {
		fmt.Fprintf(w, "note: per-service times are over the newest %d traces\n", r.Sampled)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tROLE\tTRACES\tP50\tP95\tSHARE\t")
	for _, s := range r.Services {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.1f%%\t\n", s.Service, s.Role, s.Traces, s.P50, s.P95, 100*s.Share)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Slowest) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nslowest traces (vigil trace ID):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range r.Slowest {
		e := ""
		if s.Error {
			e = "error"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.TraceID, s.Duration, s.Start.UTC().Format("2006-01-02 15:04:05 MST"), e)
	}
	return tw.Flush()
}
