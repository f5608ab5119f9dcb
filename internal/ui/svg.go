package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The plot's size in SVG units, and its margins.
const (
	plotW, plotH                       = 720, 220
	padLeft, padRight, padTop, padBott = 64, 24, 12, 28
)

// plotView is a plot ready for the template: paths in SVG coordinates,
// ticks, the onset, and the legend. Every string that came from data
// (a label value, a query) is escaped by html/template.
type plotView struct {
	Query, PeerQuery, PeerScope string
	// Err says why there is no plot.
	Err string
	// Loading: the query ran past the page's render budget and goes on;
	// the page reloads for it.
	Loading bool
	// Empty: the query returned nothing in the window.
	Empty         bool
	Width, Height int
	// Left, Right, Top, Bottom bound the plotting area.
	Left, Right, Top, Bottom float64
	Lines                    []linePath
	More                     int
	// Range and IQR are the peers' min–max and quartile areas, Median the
	// peers' median line; empty without peers.
	Range, IQR, Median string
	Peers              int
	XTicks, YTicks     []tick
	// Onset is the onset marker, nil when outside the window.
	Onset *tick
	// From and To label the window.
	From, To string
	// Chart: the plot is a question page's chart, whose series have no
	// peers to be compared with.
	Chart bool
	// Limit is the threshold's line, nil without one.
	Limit *tick
}

// linePath is one faulty series as a path.
type linePath struct {
	Name, D, Class, Last string
}

// tick is an axis label at a position (X for time, Y for value).
type tick struct {
	Pos   float64
	Label string
}

// drawPlot lays d out as SVG paths.
func drawPlot(d plotData) plotView {
	v := plotView{
		Query: d.Query, PeerQuery: d.PeerQuery, PeerScope: d.PeerScope, More: d.More,
		Width: plotW, Height: plotH, Left: padLeft, Right: plotW - padRight, Top: padTop, Bottom: plotH - padBott,
		From: fmtTime(d.From), To: fmtTime(d.To),
	}
	n := steps(d)
	lo, hi := math.Inf(1), math.Inf(-1)
	widen := func(vals []float64) {
		for _, x := range vals {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
		}
	}
	for _, s := range d.Faulty {
		widen(s.Values)
	}
	if d.Band != nil {
		widen(d.Band.Min)
		widen(d.Band.Max)
	}
	if math.IsInf(lo, 1) {
		v.Empty = true
		return v
	}
	if d.Limit != nil {
		widen([]float64{*d.Limit})
	}
	if lo > 0 && lo < hi/2 || lo == 0 { // counts and rates read from zero
		lo = 0
	}
	yTicks, lo, hi := niceTicks(lo, hi)
	x := func(k int) float64 {
		if n <= 1 {
			return v.Left
		}
		return v.Left + float64(k)/float64(n-1)*(v.Right-v.Left)
	}
	y := func(val float64) float64 { return v.Bottom - (val-lo)/(hi-lo)*(v.Bottom-v.Top) }
	for _, t := range yTicks {
		v.YTicks = append(v.YTicks, tick{Pos: round1(y(t)), Label: fmtNum(t)})
	}
	v.XTicks = timeTicks(d, x)
	if !d.Onset.IsZero() && !d.Onset.Before(d.From) && !d.Onset.After(d.To) {
		k := float64(d.Onset.Sub(d.From)) / float64(d.To.Sub(d.From))
		v.Onset = &tick{Pos: round1(v.Left + k*(v.Right-v.Left)), Label: "onset " + d.Onset.UTC().Format("15:04:05")}
	}
	if d.Limit != nil {
		v.Limit = &tick{Pos: round1(y(*d.Limit)), Label: d.LimitLabel}
	}
	if b := d.Band; b != nil {
		v.Peers = b.Peers
		v.Range = areaPath(b.Min, b.Max, x, y)
		v.IQR = areaPath(b.Q1, b.Q3, x, y)
		v.Median = linePathD(b.Med, x, y)
	}
	for n, s := range d.Faulty {
		v.Lines = append(v.Lines, linePath{Name: s.Name, D: linePathD(s.Values, x, y), Class: "c" + strconv.Itoa(n), Last: fmtNum(last(s.Values))})
	}
	return v
}

func last(vals []float64) float64 {
	for k := len(vals) - 1; k >= 0; k-- {
		if !math.IsNaN(vals[k]) {
			return vals[k]
		}
	}
	return math.NaN()
}

// linePathD draws vals as a line, broken where there is no value.
func linePathD(vals []float64, x func(int) float64, y func(float64) float64) string {
	var b strings.Builder
	pen := false
	for k, val := range vals {
		if math.IsNaN(val) || math.IsInf(val, 0) {
			pen = false
			continue
		}
		cmd := "L"
		if !pen {
			cmd = "M"
		}
		fmt.Fprintf(&b, "%s%.1f %.1f ", cmd, x(k), y(val))
		pen = true
	}
	return strings.TrimSpace(b.String())
}

// areaPath fills between lower and upper, one closed shape per run of
// steps that have both.
func areaPath(lower, upper []float64, x func(int) float64, y func(float64) float64) string {
	var b strings.Builder
	for k := 0; k < len(upper); {
		if math.IsNaN(upper[k]) || math.IsNaN(lower[k]) {
			k++
			continue
		}
		end := k
		for end < len(upper) && !math.IsNaN(upper[end]) && !math.IsNaN(lower[end]) {
			end++
		}
		for j := k; j < end; j++ {
			cmd := "L"
			if j == k {
				cmd = "M"
			}
			fmt.Fprintf(&b, "%s%.1f %.1f ", cmd, x(j), y(upper[j]))
		}
		for j := end - 1; j >= k; j-- {
			fmt.Fprintf(&b, "L%.1f %.1f ", x(j), y(lower[j]))
		}
		b.WriteString("Z ")
		k = end
	}
	return strings.TrimSpace(b.String())
}

// niceTicks returns about four round values from lo to hi, and the range
// widened to them.
func niceTicks(lo, hi float64) ([]float64, float64, float64) {
	if hi <= lo {
		pad := math.Max(math.Abs(lo)*0.1, 1)
		lo, hi = lo-pad, hi+pad
		if lo < 0 && hi-pad >= 0 {
			lo = 0
		}
	}
	raw := (hi - lo) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	var out []float64
	for t := lo; t <= hi+step/2; t += step {
		out = append(out, t)
	}
	return out, lo, hi
}

var tickIntervals = []time.Duration{
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour,
}

// timeTicks labels the time axis every round interval, five to eight
// times over the window.
func timeTicks(d plotData, x func(int) float64) []tick {
	span := d.To.Sub(d.From)
	every := tickIntervals[len(tickIntervals)-1]
	for _, iv := range tickIntervals {
		if span/iv <= 7 {
			every = iv
			break
		}
	}
	layout := "15:04"
	if every >= 24*time.Hour {
		layout = "Jan 2"
	}
	var out []tick
	for t := d.From.Truncate(every); !t.After(d.To); t = t.Add(every) {
		if t.Before(d.From) {
			continue
		}
		k := float64(t.Sub(d.From)) / float64(span)
		out = append(out, tick{Pos: round1(x(0) + k*(x(steps(d)-1)-x(0))), Label: t.UTC().Format(layout)})
	}
	return out
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// fmtNum writes a value short: 3 significant digits and an SI suffix.
func fmtNum(f float64) string {
	if math.IsNaN(f) {
		return "no value"
	}
	a := math.Abs(f)
	for _, u := range []struct {
		div float64
		sfx string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.div {
			return strconv.FormatFloat(f/u.div, 'g', 3, 64) + u.sfx
		}
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}
