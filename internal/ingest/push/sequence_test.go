package push_test

import (
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	clientpush "github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

// step is one push of the shared sequence and what the receiver holds
// after it, as seriesString lines with push_time_seconds's value "T" when
// set.
type step struct {
	name string
	do   func(t *testing.T, url string)
	want []string
}

// pusher returns client_golang's pusher for job drift and the pipeline
// grouping label, with a drift gauge (when drift >= 0) and an accuracy
// gauge (when acc >= 0); text selects the text format over protobuf.
func pusher(url, pipeline string, drift, acc float64, text bool) *clientpush.Pusher {
	p := clientpush.New(url, "drift").Grouping("pipeline", pipeline)
	if drift >= 0 {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vigil_feature_drift", Help: "Drift score of a feature."}, []string{"model", "feature", "method"})
		g.WithLabelValues("m", "f", "psi").Set(drift)
		p.Collector(g)
	}
	if acc >= 0 {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "model_accuracy", Help: "Accuracy of the model."}, []string{"model"})
		g.WithLabelValues("m").Set(acc)
		p.Collector(g)
	}
	if text {
		p.Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	}
	return p
}

// pushSequence is PUT, POST, PUT, a second group, DELETE, through the
// real client, as a drift CronJob and an evaluation job would push.
func pushSequence() []step {
	return []step{
		{"put", func(t *testing.T, url string) {
			require.NoError(t, pusher(url, "nightly", 0.31, 0.92, false).Push())
		}, []string{
			`model_accuracy{job="drift",model="m",pipeline="nightly"} 0.92`,
			`push_failure_time_seconds{job="drift",pipeline="nightly"} 0`,
			`push_time_seconds{job="drift",pipeline="nightly"} T`,
			`vigil_feature_drift{feature="f",job="drift",method="psi",model="m",pipeline="nightly"} 0.31`,
		}},
		{"post replaces only the families pushed", func(t *testing.T, url string) {
			require.NoError(t, pusher(url, "nightly", -1, 0.88, true).Add())
		}, []string{
			`model_accuracy{job="drift",model="m",pipeline="nightly"} 0.88`,
			`push_failure_time_seconds{job="drift",pipeline="nightly"} 0`,
			`push_time_seconds{job="drift",pipeline="nightly"} T`,
			`vigil_feature_drift{feature="f",job="drift",method="psi",model="m",pipeline="nightly"} 0.31`,
		}},
		{"put replaces the group", func(t *testing.T, url string) {
			require.NoError(t, pusher(url, "nightly", -1, 0.9, false).Push())
		}, []string{
			`model_accuracy{job="drift",model="m",pipeline="nightly"} 0.9`,
			`push_failure_time_seconds{job="drift",pipeline="nightly"} 0`,
			`push_time_seconds{job="drift",pipeline="nightly"} T`,
		}},
		{"a second group", func(t *testing.T, url string) {
			require.NoError(t, pusher(url, "hourly", 0.05, -1, true).Push())
		}, []string{
			`model_accuracy{job="drift",model="m",pipeline="nightly"} 0.9`,
			`push_failure_time_seconds{job="drift",pipeline="hourly"} 0`,
			`push_failure_time_seconds{job="drift",pipeline="nightly"} 0`,
			`push_time_seconds{job="drift",pipeline="hourly"} T`,
			`push_time_seconds{job="drift",pipeline="nightly"} T`,
			`vigil_feature_drift{feature="f",job="drift",method="psi",model="m",pipeline="hourly"} 0.05`,
		}},
		{"delete", func(t *testing.T, url string) {
			require.NoError(t, clientpush.New(url, "drift").Grouping("pipeline", "nightly").Delete())
		}, []string{
			`push_failure_time_seconds{job="drift",pipeline="hourly"} 0`,
			`push_time_seconds{job="drift",pipeline="hourly"} T`,
			`vigil_feature_drift{feature="f",job="drift",method="psi",model="m",pipeline="hourly"} 0.05`,
		}},
	}
}

// line is one series as the sequence's want lists write it.
func line(series string, v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if (len(series) > 17 && series[:17] == "push_time_seconds" || len(series) > 25 && series[:25] == "push_failure_time_seconds") && v != 0 {
		s = "T"
	}
	return series + " " + s
}
