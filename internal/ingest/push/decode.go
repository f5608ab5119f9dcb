package push

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protodelim"
)

// errTooLarge is a body over Options.MaxBodyBytes.
var errTooLarge = errors.New("request body too large")

// Names of the metrics the endpoint adds to every group.
const (
	pushTimeName        = "push_time_seconds"
	pushFailureTimeName = "push_failure_time_seconds"
)

// readBody reads the (gzip-decoded) body, at most limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", errTooLarge, r.ContentLength, limit)
	}
	var body io.Reader = io.LimitReader(r.Body, limit+1)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("read gzip body: %w", err)
		}
		defer gz.Close()
		body = gz
	default:
		return nil, fmt.Errorf("unsupported content encoding %q: send gzip or nothing", enc)
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: over the limit of %d bytes", errTooLarge, limit)
	}
	return b, nil
}

// decodeFamilies decodes a body in the format its Content-Type names:
// client_golang's delimited protobuf, else the text format (the
// Pushgateway's fall-back), with expfmt's text decoder. A later family of
// the same name replaces an earlier one, as on the Pushgateway.
func decodeFamilies(body []byte, header http.Header) (map[string]*dto.MetricFamily, error) {
	fams := map[string]*dto.MetricFamily{}
	if expfmt.ResponseFormat(header).FormatType() == expfmt.TypeProtoDelim {
		// Not expfmt's decoder: it reads a message of any length its
		// prefix claims, so that 7 bytes can make it allocate terabytes.
		// No message is longer than the body.
		r := bufio.NewReader(bytes.NewReader(body))
		opts := protodelim.UnmarshalOptions{MaxSize: int64(len(body))}
		for {
			mf := &dto.MetricFamily{}
			if err := opts.UnmarshalFrom(r, mf); err != nil {
				if errors.Is(err, io.EOF) {
					return fams, nil
				}
				return nil, fmt.Errorf("decode protobuf body: %w", err)
			}
			fams[mf.GetName()] = mf
		}
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeTextPlain))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				return fams, nil
			}
			return nil, err
		}
		fams[mf.GetName()] = mf
	}
}

// family is one pushed metric family as stored: its samples carry the
// grouping labels.
type family struct {
	name, help string
	typ        model.MetricType
	series     []series
}

// series is one sample of a group: its labels and last value.
type series struct {
	lset labels.Labels
	v    float64
}

// flatten checks a family the way the Pushgateway's consistency check does
// and turns it into samples with the grouping labels set.
func flatten(mf *dto.MetricFamily, key groupingKey) (*family, error) {
	name := mf.GetName()
	if !model.UTF8Validation.IsValidMetricName(name) {
		return nil, fmt.Errorf("invalid metric name %q", name)
	}
	f := &family{name: name, help: mf.GetHelp()}
	b := labels.NewBuilder(labels.EmptyLabels())
	add := func(m *dto.Metric, suffix string, v float64, extra ...string) {
		b.Reset(labels.EmptyLabels())
		for _, lp := range m.GetLabel() {
			b.Set(lp.GetName(), lp.GetValue())
		}
		for _, p := range key {
			b.Set(p.name, p.value)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Set(extra[i], extra[i+1])
		}
		b.Set(model.MetricNameLabel, name+suffix)
		f.series = append(f.series, series{lset: b.Labels(), v: v})
	}
	for _, m := range mf.GetMetric() {
		if m.TimestampMs != nil {
			return nil, errors.New("pushed metrics must not have timestamps")
		}
		if err := checkLabels(name, m); err != nil {
			return nil, err
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			f.typ = model.MetricTypeCounter
			if m.Counter == nil {
				return nil, fmt.Errorf("metric %s of type counter has a sample without a counter value", name)
			}
			add(m, "", m.Counter.GetValue())
		case dto.MetricType_GAUGE:
			f.typ = model.MetricTypeGauge
			if m.Gauge == nil {
				return nil, fmt.Errorf("metric %s of type gauge has a sample without a gauge value", name)
			}
			add(m, "", m.Gauge.GetValue())
		case dto.MetricType_UNTYPED:
			f.typ = model.MetricTypeUnknown
			if m.Untyped == nil {
				return nil, fmt.Errorf("metric %s of type untyped has a sample without a value", name)
			}
			add(m, "", m.Untyped.GetValue())
		case dto.MetricType_SUMMARY:
			f.typ = model.MetricTypeSummary
			s := m.Summary
			if s == nil {
				return nil, fmt.Errorf("metric %s of type summary has a sample without a summary", name)
			}
			for _, q := range s.GetQuantile() {
				add(m, "", q.GetValue(), model.QuantileLabel, formatFloat(q.GetQuantile()))
			}
			add(m, "_sum", s.GetSampleSum())
			add(m, "_count", float64(s.GetSampleCount()))
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			f.typ = model.MetricTypeHistogram
			if mf.GetType() == dto.MetricType_GAUGE_HISTOGRAM {
				f.typ = model.MetricTypeGaugeHistogram
			}
			h := m.Histogram
			if h == nil {
				return nil, fmt.Errorf("metric %s of type histogram has a sample without a histogram", name)
			}
			inf := false
			for _, bk := range h.GetBucket() {
				if math.IsInf(bk.GetUpperBound(), 1) {
					inf = true
				}
				add(m, "_bucket", float64(bk.GetCumulativeCount()), model.BucketLabel, formatFloat(bk.GetUpperBound()))
			}
			if !inf {
				add(m, "_bucket", float64(h.GetSampleCount()), model.BucketLabel, "+Inf")
			}
			add(m, "_sum", h.GetSampleSum())
			add(m, "_count", float64(h.GetSampleCount()))
		default:
			return nil, fmt.Errorf("metric %s has unknown type %v", name, mf.GetType())
		}
	}
	return f, nil
}

// checkLabels rejects what the Pushgateway's gatherer rejects: invalid or
// reserved names, the same name twice, values that are not UTF-8.
func checkLabels(name string, m *dto.Metric) error {
	seen := make(map[string]struct{}, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		ln := lp.GetName()
		if !model.UTF8Validation.IsValidLabelName(ln) || strings.HasPrefix(ln, model.ReservedLabelPrefix) {
			return fmt.Errorf("metric %s: invalid label name %q", name, ln)
		}
		if _, dup := seen[ln]; dup {
			return fmt.Errorf("metric %s: label %s appears twice", name, ln)
		}
		seen[ln] = struct{}{}
		if !utf8.ValidString(lp.GetValue()) {
			return fmt.Errorf("metric %s: value of label %s is not valid UTF-8", name, ln)
		}
	}
	return nil
}

// formatFloat writes le and quantile values as client_golang's text format
// does, so that series match a scraped Pushgateway's.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
