package redact

import (
	"context"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// A label value is redacted exactly as an attribute value of the same key
// is: every fake secret of the corpus, under its key or a neutral one.
func TestLabelLikeAttribute(t *testing.T) {
	r := newTestRedactor(t, Default())
	n := 0
	for _, s := range redacttest.Secrets(7, 3) {
		name := s.Key
		if name == "" {
			name = "path"
		}
		v := pcommon.NewValueStr(s.Text)
		r.Value(name, v)
		got, changed := r.Label(labelName(name), s.Text)
		require.Equal(t, v.Str(), got, "%s under %s", s.Kind, name)
		require.Equal(t, v.Str() != s.Text, changed, s.Kind)
		if changed {
			n++
		}
	}
	require.Positive(t, n)
}

// labelName is key as Prometheus's OTLP translation names a label (dots
// become underscores); the key rules match either spelling.
func labelName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if c == '.' || c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

func TestLabels(t *testing.T) {
	r := newTestRedactor(t, Default())
	benign := labels.FromStrings("__name__", "password_resets_total", "job", "auth", "path", "/login")
	out, changed := r.Labels(benign)
	require.False(t, changed)
	require.Equal(t, benign, out)

	secret := labels.FromStrings("__name__", "db_up", "password", "hunter2-but-longer", "dsn", "postgres://app:s3cr3tpw@db:5432/x", "job", "db")
	out, changed = r.Labels(secret)
	require.True(t, changed)
	require.Equal(t, "db_up", out.Get("__name__"), "the metric name is never touched")
	require.Equal(t, "[REDACTED:secret-key]", out.Get("password"))
	require.NotContains(t, out.Get("dsn"), "s3cr3tpw")
	require.Equal(t, "db", out.Get("job"))
}

// recorder keeps what was appended.
type recorder struct{ got []labels.Labels }

func (r *recorder) AppenderV2(context.Context) storage.AppenderV2 { return &recApp{r: r} }

type recApp struct{ r *recorder }

func (a *recApp) Append(_ storage.SeriesRef, ls labels.Labels, _, _ int64, _ float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	a.r.got = append(a.r.got, ls)
	for _, e := range opts.Exemplars {
		a.r.got = append(a.r.got, e.Labels)
	}
	return 1, nil
}
func (a *recApp) Commit() error   { return nil }
func (a *recApp) Rollback() error { return nil }

// The appendable redacts samples' and exemplars' labels, the same series
// again from its cache.
func TestAppendable(t *testing.T) {
	r := newTestRedactor(t, Default())
	rec := &recorder{}
	app := r.Appendable(rec).AppenderV2(t.Context())
	ls := labels.FromStrings("__name__", "up", "token", "ghp_"+"0123456789abcdefghijABCDEFGHIJ012345")
	ex := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "abc", "authorization", "Bearer abcdefghijklmnopqrstuvwxyz012345")}
	for range 3 {
		_, err := app.Append(0, ls, 0, 1, 1, nil, nil, storage.AOptions{Exemplars: []exemplar.Exemplar{ex}})
		require.NoError(t, err)
	}
	require.Len(t, rec.got, 6)
	for _, got := range rec.got {
		got.Range(func(l labels.Label) {
			require.NotContains(t, l.Value, "0123456789abcdefghij")
			require.NotContains(t, l.Value, "abcdefghijklmnopqrstuvwxyz")
		})
	}
	require.Equal(t, "up", rec.got[0].Get("__name__"))
	require.Equal(t, "abc", rec.got[1].Get("trace_id"))
}
