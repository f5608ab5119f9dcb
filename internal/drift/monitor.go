package drift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// MetricName is the series drift results become (DESIGN.md):
// vigil_feature_drift{model, feature, method}.
const MetricName = "vigil_feature_drift"

// Job is one scheduled drift evaluation of `vigil serve` (an item of the
// drift section of vigil.yaml): a feature histogram's current window
// against its baseline window, every Interval.
type Job struct {
	// Metric is the classic histogram a model server exports for a
	// feature (without _bucket).
	Metric string `yaml:"metric"`
	// Model names the model; ModelLabel instead takes it from a label of
	// the histogram (one model per value).
	Model      string `yaml:"model"`
	ModelLabel string `yaml:"model_label"`
	// By are the labels whose values name a feature; none: the metric
	// is the feature.
	By []string `yaml:"by"`
	// BaselineWindow is compared with CurrentWindow, which ends at the
	// evaluation time; the baseline ends where the current one starts.
	BaselineWindow model.Duration `yaml:"baseline_window"`
	CurrentWindow  model.Duration `yaml:"current_window"`
	// Method is a binned method (psi, kl, js, hellinger, linf, chisquare).
	Method string `yaml:"method"`
	// Interval is how often the job runs.
	Interval model.Duration `yaml:"interval"`
}

// SetDefaults fills the defaults: PSI over the last hour against the
// 24 hours before it, every 5 minutes.
func (j *Job) SetDefaults() {
	*j = Job{
		BaselineWindow: model.Duration(24 * time.Hour), CurrentWindow: model.Duration(time.Hour),
		Method: string(MethodPSI), Interval: model.Duration(5 * time.Minute),
	}
}

// Validate reports the first invalid field by its YAML name.
func (j Job) Validate() error {
	switch {
	case !model.LegacyValidation.IsValidMetricName(j.Metric):
		return fmt.Errorf("metric: %q is not a metric name", j.Metric)
	case j.Model == "" && j.ModelLabel == "":
		return errors.New("model: give model (a name) or model_label (the label naming it)")
	case j.Model != "" && j.ModelLabel != "":
		return errors.New("model: give model or model_label, not both")
	case j.BaselineWindow <= 0:
		return fmt.Errorf("baseline_window: must be positive, got %s", j.BaselineWindow)
	case j.CurrentWindow <= 0:
		return fmt.Errorf("current_window: must be positive, got %s", j.CurrentWindow)
	case j.Interval < model.Duration(time.Second):
		return fmt.Errorf("interval: must be at least 1s, got %s", j.Interval)
	}
	for _, l := range append([]string{j.ModelLabel}, j.By...) {
		if l != "" && (!model.LegacyValidation.IsValidLabelName(l) || l == "le") {
			return fmt.Errorf("by: %q is not a label that can split a histogram", l)
		}
	}
	m, err := ParseMethod(j.Method)
	if err != nil {
		return fmt.Errorf("method: %w", err)
	}
	if m.NeedsValues() {
		return fmt.Errorf("method: %s needs the values, not histogram buckets: use psi, kl, js, hellinger, linf or chisquare", m)
	}
	return nil
}

// Monitor runs drift jobs over a store and appends their scores as
// vigil_feature_drift{model, feature, method}: what the drift SLO preset
// alerts on and the diagnosis reads.
type Monitor struct {
	jobs   []Job
	st     Store
	app    storage.AppendableV2
	logger *slog.Logger
	last   []time.Time
}

// NewMonitor checks the jobs and returns their monitor.
func NewMonitor(jobs []Job, st Store, app storage.AppendableV2, logger *slog.Logger) (*Monitor, error) {
	for i, j := range jobs {
		if err := j.Validate(); err != nil {
			return nil, fmt.Errorf("drift[%d].%w", i, err)
		}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Monitor{jobs: jobs, st: st, app: app, logger: logger, last: make([]time.Time, len(jobs))}, nil
}

// Evaluate runs the jobs due at at (data clock) and appends their scores
// at at. A job whose windows hold no observation is skipped quietly; a
// failing job is reported and the others still run.
func (m *Monitor) Evaluate(ctx context.Context, at time.Time) error {
	var errs []error
	for i, j := range m.jobs {
		if !m.last[i].IsZero() && at.Sub(m.last[i]) < time.Duration(j.Interval) {
			continue
		}
		m.last[i] = at
		if err := m.run(ctx, j, at); err != nil {
			errs = append(errs, fmt.Errorf("drift of %s: %w", j.Metric, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Monitor) run(ctx context.Context, j Job, at time.Time) error {
	by := j.By
	if j.ModelLabel != "" {
		by = append([]string{j.ModelLabel}, j.By...)
	}
	meth, _ := ParseMethod(j.Method)
	w := Windows{Metric: j.Metric, By: by, Baseline: time.Duration(j.BaselineWindow), Current: time.Duration(j.CurrentWindow), Method: meth}
	results, _, err := CompareWindows(ctx, m.st, w, at)
	if err != nil {
		if errors.Is(err, ErrInput) {
			m.logger.Debug("drift job skipped", "metric", j.Metric, "reason", err)
			return nil
		}
		return err
	}
	app := m.app.AppenderV2(ctx)
	for _, r := range results {
		model := j.Model
		if j.ModelLabel != "" {
			model = r.Labels[j.ModelLabel]
		}
		ls := labels.FromStrings("__name__", MetricName, "model", model, "feature", featureOf(j, r.Labels), "method", string(r.Method))
		if _, err := app.Append(0, ls, 0, at.UnixMilli(), r.Score, nil, nil, storage.AppendV2Options{}); err != nil {
			_ = app.Rollback()
			return fmt.Errorf("append %s: %w", ls, err)
		}
	}
	return app.Commit()
}

// featureOf names a feature by its By labels' values (a=x,b=y), or the
// metric's name when it has none.
func featureOf(j Job, ls map[string]string) string {
	if len(j.By) == 0 {
		return j.Metric
	}
	if len(j.By) == 1 {
		return ls[j.By[0]]
	}
	parts := make([]string, 0, len(j.By))
	for _, l := range j.By {
		parts = append(parts, l+"="+ls[l])
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
