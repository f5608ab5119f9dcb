package fileimport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/vigil-obs/vigil/internal/openmetrics"
)

// ErrOTLPNotMetrics is returned for an OTLP JSON file of traces or logs:
// what the request-path analysis reads, not the metrics store.
var ErrOTLPNotMetrics = errors.New("OTLP JSON of traces or logs, not metrics")

// OTLP signals as the first key of an export request names them.
const (
	otlpMetrics = "resourceMetrics"
	otlpSpans   = "resourceSpans"
	otlpLogs    = "resourceLogs"
)

// otlpSignal returns the first key of data's first JSON object when it is
// an OTLP export request (resourceMetrics, resourceSpans, resourceLogs), or
// "".
func otlpSignal(data []byte) string {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return ""
	}
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch k, _ := tok.(string); k {
	case otlpMetrics, otlpSpans, otlpLogs:
		return k
	}
	return ""
}

// otlpPromoted are the resource attributes kept as labels: those that name
// the entity a series belongs to (the Kubernetes semantic conventions).
var otlpPromoted = []string{
	"k8s.node.name", "k8s.namespace.name", "k8s.pod.name", "k8s.container.name",
	"k8s.deployment.name", "k8s.statefulset.name", "k8s.job.name", "host.name",
}

// otlpToOpenMetrics converts OTLP JSON metrics, one export request per
// line (the OpenTelemetry Collector's file exporter), to OpenMetrics text
// with Prometheus's own OTLP translation (metric names with unit and type
// suffixes, service.name as job, service.instance.id as instance, the
// Kubernetes resource attributes as labels). Exponential histograms, which
// become native histograms, are counted in skipped.
func otlpToOpenMetrics(name string, data []byte) (_ []byte, skipped int, _ error) {
	app := &captureAppender{}
	conv := prometheusremotewrite.NewPrometheusConverter(app)
	settings := prometheusremotewrite.Settings{
		AddMetricSuffixes:         true,
		PromoteResourceAttributes: prometheusremotewrite.NewPromoteResourceAttributes(config.OTLPConfig{PromoteResourceAttributes: otlpPromoted}),
		LookbackDelta:             5 * time.Minute,
	}
	var um pmetric.JSONUnmarshaler
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		md, err := um.UnmarshalMetrics(line)
		if err != nil {
			return nil, 0, fmt.Errorf("%s:%d: OTLP metrics JSON: %w", name, i+1, err)
		}
		if _, err := conv.FromMetrics(context.Background(), md, settings); err != nil {
			return nil, 0, fmt.Errorf("%s:%d: translate OTLP metrics: %w", name, i+1, err)
		}
	}
	return app.openMetrics(), app.skipped, nil
}

// captureAppender keeps the float samples the translator appends.
type captureAppender struct {
	samples []capturedSample
	skipped int
}

type capturedSample struct {
	lset labels.Labels
	t    int64
	v    float64
}

var _ storage.AppenderV2 = (*captureAppender)(nil)

// Append keeps a float sample; histogram samples are counted as skipped.
func (a *captureAppender) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	if h != nil || fh != nil {
		a.skipped++
		return 0, nil
	}
	a.samples = append(a.samples, capturedSample{ls.Copy(), t, v})
	return 0, nil
}

// Commit is a no-op: the samples are kept as they come.
func (a *captureAppender) Commit() error { return nil }

// Rollback is a no-op.
func (a *captureAppender) Rollback() error { return nil }

// openMetrics writes the samples as OpenMetrics text, series by series in
// label order, each in time order, timestamps in seconds.
func (a *captureAppender) openMetrics() []byte {
	slices.SortStableFunc(a.samples, func(x, y capturedSample) int {
		if c := labels.Compare(x.lset, y.lset); c != 0 {
			return c
		}
		return int(x.t - y.t)
	})
	var b bytes.Buffer
	buf := make([]byte, 0, 32)
	for _, s := range a.samples {
		b.WriteString(s.lset.Get(model.MetricNameLabel))
		first := true
		s.lset.Range(func(l labels.Label) {
			if l.Name == model.MetricNameLabel {
				return
			}
			if first {
				b.WriteByte('{')
				first = false
			} else {
				b.WriteByte(',')
			}
			b.WriteString(l.Name)
			b.WriteString(`="`)
			b.WriteString(openmetrics.EscapeLabelValue(l.Value))
			b.WriteByte('"')
		})
		if !first {
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.Write(openmetrics.AppendValue(buf[:0], s.v))
		b.WriteByte(' ')
		b.Write(openmetrics.AppendSeconds(buf[:0], s.t))
		b.WriteByte('\n')
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}
