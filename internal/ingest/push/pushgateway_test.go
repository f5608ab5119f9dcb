package push_test

import (
	"net/http"
	"os/exec"
	"sort"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/peertest"
)

// pushgatewaySnapshot returns what the Pushgateway at url exposes for job
// drift, as the sequence's lines.
func pushgatewaySnapshot(t *testing.T, url string) []string {
	t.Helper()
	return pushgatewayJob(t, url, "drift")
}

// pushgatewayJob returns what the Pushgateway at url exposes for a job.
func pushgatewayJob(t *testing.T, url, job string) []string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	var out []string
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			lbls := map[string]string{"__name__": name}
			for _, lp := range m.GetLabel() {
				lbls[lp.GetName()] = lp.GetValue()
			}
			if lbls["job"] != job {
				continue
			}
			var v float64
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			default:
				v = m.GetUntyped().GetValue()
			}
			out = append(out, line(seriesString(lbls), v))
		}
	}
	sort.Strings(out)
	return out
}

// TestPushSameAsPushgateway runs the same pushes through client_golang
// against Debian's Pushgateway and against Vigil's endpoint: after every
// step Vigil's PromQL sees the series the Pushgateway exposes.
func TestPushSameAsPushgateway(t *testing.T) {
	if _, err := exec.LookPath("prometheus-pushgateway"); err != nil {
		t.Skip("prometheus-pushgateway is not installed (make deps installs it)")
	}
	pg := peertest.StartPushgateway(t)
	e := newEnv(t, push.Options{})
	for _, s := range pushSequence() {
		e.clock.Add(time.Second)
		s.do(t, pg.URL)
		s.do(t, e.url)
		fromPG := pushgatewaySnapshot(t, pg.URL)
		require.Equal(t, s.want, fromPG, "Pushgateway after %s", s.name)
		require.Equal(t, fromPG, e.snapshot(t), "Vigil after %s", s.name)
	}
}

// TestPushErrorsSameAsPushgateway sends the same raw requests, good and
// bad, to both: the status codes and the series held agree.
func TestPushErrorsSameAsPushgateway(t *testing.T) {
	if _, err := exec.LookPath("prometheus-pushgateway"); err != nil {
		t.Skip("prometheus-pushgateway is not installed (make deps installs it)")
	}
	pg := peertest.StartPushgateway(t)
	e := newEnv(t, push.Options{})
	requests := []struct{ method, path, body string }{
		{http.MethodGet, "/metrics/job/t", ""},
		{http.MethodPut, "/metrics/job/t/a", "m 1\n"},
		{http.MethodPut, "/metrics/job/t/__a/b", "m 1\n"},
		{http.MethodPut, "/metrics/job/t", "bad{ 1\n"},
		{http.MethodPut, "/metrics/job/t", "m 1 1700000000000\n"},
		{http.MethodPut, "/metrics/job/t", "# TYPE m counter\nm{a=\"1\"} 1\nm{a=\"2\"} 2\n"},
		{http.MethodPut, "/metrics/job/t", "n 1\nn 2\n"},
		{http.MethodPut, "/metrics/job/u", "# TYPE m gauge\nm 1\n"},
		{http.MethodPost, "/metrics/job/t/b/2", "o{job=\"x\",b=\"3\"} 3\n"},
		{http.MethodPost, "/metrics/job/t", "push_time_seconds 5\n"},
		{http.MethodPost, "/metrics/job/t", ""},
		{http.MethodPost, "/metrics/job/t", "# TYPE m counter\nm{a=\"1\"} 4\n"},
		{http.MethodPut, "/metrics/job/t/b@base64/YS9i", "p 1\n"},
		{http.MethodDelete, "/metrics/job/none", ""},
	}
	pgEnv := &env{url: pg.URL, clock: e.clock}
	for _, r := range requests {
		e.clock.Add(time.Second)
		want, wantBody := pgEnv.do(t, r.method, r.path, "", r.body)
		got, gotBody := e.do(t, r.method, r.path, "", r.body)
		require.Equal(t, want, got, "%s %s %q: Pushgateway said %q, Vigil %q", r.method, r.path, r.body, wantBody, gotBody)
		for _, job := range []string{"t", "u"} {
			var held []string
			for _, l := range e.query(t, `{job="`+job+`"}`) {
				held = append(held, parseLine(t, l))
			}
			require.Equal(t, pushgatewayJob(t, pg.URL, job), held, "job %s after %s %s %q", job, r.method, r.path, r.body)
		}
	}
}
