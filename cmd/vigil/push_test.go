package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	clientpush "github.com/prometheus/client_golang/prometheus/push"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestServePush pushes a drift CronJob's and an evaluation job's gauges to
// a running vigil serve with client_golang's push package, as they would
// push to a Pushgateway: PromQL finds them with their grouping labels, and
// DELETE makes them stale.
func TestServePush(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := startServe(t, ctx, "serve", "--config", writeConfig(t, filepath.Join(dir, "data"), "127.0.0.1:0"))

	drift := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vigil_feature_drift", Help: "Drift score of a feature."}, []string{"model", "feature", "method"})
	drift.WithLabelValues("m", "f", "psi").Set(0.31)
	acc := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "model_accuracy", Help: "Accuracy of the model."}, []string{"model"})
	acc.WithLabelValues("m").Set(0.92)
	p := clientpush.New(s.url, "drift").Grouping("instance", "cron-1").Client(s.client)
	require.NoError(t, p.Collector(drift).Collector(acc).Push())

	got := queryVector(t, s, `vigil_feature_drift{method="psi"}`)
	require.Len(t, got, 1)
	require.Equal(t, map[string]string{"__name__": "vigil_feature_drift", "job": "drift", "instance": "cron-1", "model": "m", "feature": "f", "method": "psi"}, got[0].Metric)
	require.Equal(t, "0.31", got[0].Value[1])
	got = queryVector(t, s, `model_accuracy`)
	require.Len(t, got, 1)
	require.Equal(t, "0.92", got[0].Value[1])
	require.Len(t, queryVector(t, s, `push_time_seconds{job="drift",instance="cron-1"} > 0`), 1)

	require.NoError(t, clientpush.New(s.url, "drift").Grouping("instance", "cron-1").Client(s.client).Delete())
	require.Empty(t, queryVector(t, s, `{job="drift"}`))

	code, body := s.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `vigil_push_requests_total{code="200"} 1`)
	require.Contains(t, body, `vigil_push_requests_total{code="202"} 1`)
	require.Contains(t, body, "vigil_push_groups 0")
	code, _ = s.get(t, "/metrics/job/drift")
	require.Equal(t, http.StatusMethodNotAllowed, code)

	cancel()
	require.NoError(t, <-s.done)
	require.False(t, strings.Contains(s.stderr.String(), "level=ERROR"), s.stderr.String())
}
