package promcompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// apiClient queries one Prometheus-compatible HTTP API.
type apiClient struct {
	name string
	base string
}

// apiError is an answer with status "error".
type apiError struct {
	Type, Msg string
}

func (e *apiError) Error() string { return e.Type + ": " + e.Msg }

// queryResult is an answer of /api/v1/query or /api/v1/query_range,
// normalised for comparison.
type queryResult struct {
	// Type is the result type: vector, matrix, scalar or string.
	Type   string
	Series []resultSeries
}

// resultSeries is one series of a result; a scalar or a string is one
// series without labels.
type resultSeries struct {
	// Metric is the label set; Labels is its canonical text form (sorted
	// names, quoted values).
	Metric map[string]string
	Labels string
	Points []resultPoint
}

// resultPoint is one sample: T in milliseconds, V the value and Raw the
// value as the API wrote it.
type resultPoint struct {
	T   int64
	V   float64
	Raw string
}

// msParam formats milliseconds as the API's seconds.
func msParam(ms int64) string { return formatSeconds(ms) }

// query runs an instant query at t (milliseconds).
func (c apiClient) query(ctx context.Context, expr string, t int64) (queryResult, error) {
	return c.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {msParam(t)}})
}

// queryRange runs a range query.
func (c apiClient) queryRange(ctx context.Context, expr string, start, end int64, step time.Duration) (queryResult, error) {
	return c.get(ctx, "/api/v1/query_range", url.Values{
		"query": {expr}, "start": {msParam(start)}, "end": {msParam(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

func (c apiClient) get(ctx context.Context, path string, params url.Values) (queryResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(params.Encode()))
	if err != nil {
		return queryResult{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return queryResult{}, fmt.Errorf("%s %s: %w", c.name, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return queryResult{}, fmt.Errorf("%s %s: read body: %w", c.name, path, err)
	}
	return parseAnswer(body)
}

// parseAnswer decodes an API answer.
func parseAnswer(body []byte) (queryResult, error) {
	var ans struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return queryResult{}, fmt.Errorf("decode answer %.200q: %w", body, err)
	}
	if ans.Status != "success" {
		return queryResult{}, &apiError{Type: ans.ErrorType, Msg: ans.Error}
	}
	res := queryResult{Type: ans.Data.ResultType}
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(ans.Data.Result))
		d.UseNumber()
		return d.Decode(v)
	}
	switch res.Type {
	case "scalar", "string":
		var p []any
		if err := dec(&p); err != nil {
			return queryResult{}, err
		}
		pt, err := parsePoint(p)
		if err != nil {
			return queryResult{}, err
		}
		if res.Type == "string" {
			pt.V = 0
		}
		res.Series = []resultSeries{{Metric: map[string]string{}, Labels: "{}", Points: []resultPoint{pt}}}
	case "vector", "matrix":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		}
		if err := dec(&series); err != nil {
			return queryResult{}, err
		}
		for _, s := range series {
			rs := resultSeries{Metric: s.Metric, Labels: canonicalLabels(s.Metric)}
			if res.Type == "vector" {
				s.Values = [][]any{s.Value}
			}
			for _, v := range s.Values {
				pt, err := parsePoint(v)
				if err != nil {
					return queryResult{}, err
				}
				rs.Points = append(rs.Points, pt)
			}
			res.Series = append(res.Series, rs)
		}
	default:
		return queryResult{}, fmt.Errorf("unknown result type %q", res.Type)
	}
	return res, nil
}

func parsePoint(p []any) (resultPoint, error) {
	if len(p) != 2 {
		return resultPoint{}, fmt.Errorf("point %v does not have two elements", p)
	}
	ts, ok := p[0].(json.Number)
	if !ok {
		return resultPoint{}, fmt.Errorf("point %v: timestamp is not a number", p)
	}
	raw, ok := p[1].(string)
	if !ok {
		return resultPoint{}, fmt.Errorf("point %v: value is not a string", p)
	}
	sec, err := strconv.ParseFloat(string(ts), 64)
	if err != nil {
		return resultPoint{}, err
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		// A string result.
		v = 0
	}
	return resultPoint{T: int64(math.Round(sec * 1000)), V: v, Raw: raw}, nil
}

// canonicalLabels writes a label set with sorted names and quoted values.
func canonicalLabels(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[n]))
	}
	b.WriteByte('}')
	return b.String()
}

// labelValues runs /api/v1/label/NAME/values with optional parameters.
func (c apiClient) labelValues(ctx context.Context, name string, params url.Values) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/v1/label/"+url.PathEscape(name)+"/values?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s label values: %w", c.name, err)
	}
	defer resp.Body.Close()
	var ans struct {
		Status    string   `json:"status"`
		ErrorType string   `json:"errorType"`
		Error     string   `json:"error"`
		Data      []string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return nil, fmt.Errorf("%s label values: decode: %w", c.name, err)
	}
	if ans.Status != "success" {
		return nil, &apiError{Type: ans.ErrorType, Msg: ans.Error}
	}
	return ans.Data, nil
}

// mapLabels returns r with every label set rewritten by f.
func (r queryResult) mapLabels(f func(map[string]string) map[string]string) queryResult {
	out := queryResult{Type: r.Type, Series: make([]resultSeries, len(r.Series))}
	for i, s := range r.Series {
		m := f(maps.Clone(s.Metric))
		out.Series[i] = resultSeries{Metric: m, Labels: canonicalLabels(m), Points: s.Points}
	}
	return out
}

// empty says whether a result has no series.
func (r queryResult) empty() bool { return len(r.Series) == 0 }

// sameFloat says whether two sample values are equal within 1e-9 relative:
// NaN equals NaN, infinities must be the same.
func sameFloat(a, b float64) bool {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.IsNaN(a) && math.IsNaN(b)
	case math.IsInf(a, 0) || math.IsInf(b, 0):
		return a == b
	case a == b:
		return true
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// diffResults describes how got differs from want ("" when it does not).
// Unless ordered, series are compared as sets.
func diffResults(want, got queryResult, wantName, gotName string, ordered bool) string {
	if want.Type != got.Type {
		return fmt.Sprintf("result type: %s %s, %s %s", wantName, want.Type, gotName, got.Type)
	}
	ws, gs := want.Series, got.Series
	if !ordered {
		ws, gs = sortedSeries(ws), sortedSeries(gs)
	}
	var diffs []string
	add := func(format string, args ...any) {
		if len(diffs) < 12 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	if len(ws) != len(gs) {
		add("%d series from %s, %d from %s", len(ws), wantName, len(gs), gotName)
	}
	i, j := 0, 0
	for i < len(ws) || j < len(gs) {
		switch {
		case j >= len(gs) || (i < len(ws) && !ordered && ws[i].Labels < gs[j].Labels):
			add("only %s has %s", wantName, ws[i].Labels)
			i++
			continue
		case i >= len(ws) || (!ordered && gs[j].Labels < ws[i].Labels):
			add("only %s has %s", gotName, gs[j].Labels)
			j++
			continue
		case ws[i].Labels != gs[j].Labels:
			add("series %d: %s from %s, %s from %s", i, ws[i].Labels, wantName, gs[j].Labels, gotName)
		default:
			if d := diffPoints(ws[i].Points, gs[j].Points, wantName, gotName, want.Type == "string"); d != "" {
				add("%s: %s", ws[i].Labels, d)
			}
		}
		i++
		j++
	}
	return strings.Join(diffs, "\n")
}

// diffPoints compares points; exact compares the values as written (for
// string results).
func diffPoints(want, got []resultPoint, wantName, gotName string, exact bool) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d points from %s, %d from %s (first %s, %s)", len(want), wantName, len(got), gotName, firstPoint(want), firstPoint(got))
	}
	for k := range want {
		w, g := want[k], got[k]
		if w.T != g.T {
			return fmt.Sprintf("point %d at %s from %s, at %s from %s", k, formatSeconds(w.T), wantName, formatSeconds(g.T), gotName)
		}
		if (exact && w.Raw != g.Raw) || (!exact && !sameFloat(w.V, g.V)) {
			return fmt.Sprintf("at %s: %s from %s, %s from %s", formatSeconds(w.T), w.Raw, wantName, g.Raw, gotName)
		}
	}
	return ""
}

func firstPoint(ps []resultPoint) string {
	if len(ps) == 0 {
		return "none"
	}
	return ps[0].Raw + " @" + formatSeconds(ps[0].T)
}

func sortedSeries(s []resultSeries) []resultSeries {
	out := append([]resultSeries(nil), s...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out
}
