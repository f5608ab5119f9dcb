package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/vigil-obs/vigil/internal/hops"
	"github.com/vigil-obs/vigil/internal/traces"
)

// The waterfall's size in SVG units: a label column, then the bars.
const (
	wfW, wfRowH, wfTop, wfBott = 960, 20, 22, 8
	wfLabelW, wfBarL, wfBarR   = 330, 340, 880
	wfIndent                   = 12
	// maxWaterfallRows is the most spans the waterfall draws.
	maxWaterfallRows = 400
	// labelRuneW is the width of one character of a label (11 px
	// monospace): a label is cut to what fits before the bars (the full
	// label is on hover).
	labelRuneW = 6.8
)

// traceView is /traces/{id}: hops.Breakdown of one trace, its waterfall
// laid out as SVG and each service's share of the critical path. Its JSON
// is hops' /api/v1/traces/{id}/breakdown.
type traceView struct {
	ID, RootService, RootOperation, Route string
	Start                                 time.Time
	Duration                              string
	Error                                 bool
	Spans                                 int
	Services                              []traceService
	Waterfall                             waterfallView
	Warnings                              []string
	JSON, Slow                            string
}

// traceService is one service's time on the critical path.
type traceService struct {
	Service, Role, Exclusive, Share string
	Virtual                         bool
	ShareWidth                      int
	// Class is the service's colour in the waterfall.
	Class string
}

// waterfallView is the waterfall ready for the template.
type waterfallView struct {
	Width, Height int
	Rows          []waterfallRow
	Ticks         []tick
	// BarL and BarR bound the bars; Bottom is the grid lines' end.
	BarL, BarR, Bottom float64
	// More counts the spans left out.
	More int
}

// waterfallRow is one span: its label at (LabelX, Y), its bar, and the
// duration written after it.
type waterfallRow struct {
	Label, Title, Duration     string
	LabelX, Y, TextY           float64
	BarX, BarW, DurX           float64
	Class                      string
	Error, Async, Orphan, Crit bool
}

// tracePage is /traces/{id}.
func (h *Handler) tracePage(ctx context.Context, r *request) (any, error) {
	raw := r.http.PathValue("id")
	id, err := traces.ParseTraceID(raw)
	if err != nil {
		return nil, &httpError{status: http.StatusBadRequest, title: "Bad trace id", msg: err.Error() + "."}
	}
	if h.opts.Traces == nil {
		return nil, notFound("No trace %s: this Vigil keeps no trace store.", raw)
	}
	td, err := h.opts.Traces.Trace(ctx, id)
	if errors.Is(err, traces.ErrNotFound) {
		return nil, notFound("No span of trace %s is stored: it is unknown, or older than the trace store keeps.", raw)
	}
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", raw, err)
	}
	t := hops.Breakdown(td)
	v := &traceView{
		ID: t.TraceID, RootService: t.RootService, RootOperation: t.RootOperation, Route: t.Route,
		Start: t.Start, Duration: t.Duration.String(), Error: t.Error, Spans: len(t.Spans), Warnings: t.Warnings,
		JSON: "/api/v1/traces/" + url.PathEscape(t.TraceID) + "/breakdown", Slow: r.link("/slow"),
	}
	r.view.Title = "Trace " + t.TraceID
	class := map[string]string{}
	for _, s := range t.Services {
		c := fmt.Sprintf("c%d", len(class)%8)
		class[s.Service] = c
		v.Services = append(v.Services, traceService{
			Service: s.Service, Role: s.Role, Virtual: s.Virtual, Exclusive: s.Exclusive.String(),
			Share: fmtPercent(s.Share), ShareWidth: int(s.Share*100 + 0.5), Class: c,
		})
	}
	v.Waterfall = drawWaterfall(t, class)
	return v, nil
}

// drawWaterfall lays the spans of t out, one row each, indented by depth;
// class colours a span by its service (the critical path's colours).
func drawWaterfall(t hops.Trace, class map[string]string) waterfallView {
	rows := t.Spans[:min(len(t.Spans), maxWaterfallRows)]
	w := waterfallView{
		Width: wfW, Height: wfTop + len(rows)*wfRowH + wfBott, BarL: wfBarL, BarR: wfBarR,
		More: len(t.Spans) - len(rows),
	}
	w.Bottom = float64(w.Height - wfBott)
	total := t.Duration.D()
	// The bars span the root's duration, and any span that outlives it.
	for _, s := range rows {
		total = max(total, (s.Offset + s.Duration).D())
	}
	scale := func(d time.Duration) float64 {
		if total <= 0 {
			return 0
		}
		return float64(d) / float64(total) * (wfBarR - wfBarL)
	}
	for i := range 5 {
		d := total * time.Duration(i) / 4
		w.Ticks = append(w.Ticks, tick{Pos: round1(wfBarL + scale(d)), Label: hops.Seconds(d).String()})
	}
	next := len(class)
	for i, s := range rows {
		c, ok := class[s.Service]
		if !ok {
			c = fmt.Sprintf("c%d", next%8)
			class[s.Service], next = c, next+1
		}
		y := float64(wfTop + i*wfRowH)
		label := s.Service + " · " + s.Name
		x := float64(4 + min(s.Depth, 16)*wfIndent)
		row := waterfallRow{
			Label: cut(label, int((wfLabelW-x)/labelRuneW)), Duration: s.Duration.String(),
			LabelX: x, Y: y + 3, TextY: y + 14,
			BarX: round1(wfBarL + scale(s.Offset.D())), BarW: max(1, round1(scale(s.Duration.D()))),
			Class: c, Error: s.Error, Async: s.Async, Orphan: s.Orphan, Crit: s.Critical > 0,
		}
		row.DurX = round1(row.BarX + row.BarW + 4)
		row.Title = fmt.Sprintf("%s (%s): %s at +%s, %s on the critical path", label, s.Kind, s.Duration, s.Offset, s.Critical)
		if s.Node != "" {
			row.Title += " for " + s.Node
		}
		if s.Error {
			row.Title += "; error"
		}
		if s.Async {
			row.Title += "; asynchronous, off the path"
		}
		if s.Orphan {
			row.Title += "; its parent is not in the trace"
		}
		w.Rows = append(w.Rows, row)
	}
	return w
}

// cut shortens s to n runes (at least 2), the last an ellipsis.
func cut(s string, n int) string {
	n = max(n, 2)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
