package alert

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeAM records what Prometheus's notifier posts: path, basic auth and
// the alerts of each request.
type fakeAM struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []fakeRequest
}

type fakeRequest struct {
	path, user, password string
	alerts               []amAlert
}

func newFakeAM(t *testing.T) *fakeAM {
	t.Helper()
	f := &fakeAM{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var alerts []amAlert
		if err := json.Unmarshal(b, &alerts); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		user, pw, _ := r.BasicAuth()
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeRequest{path: r.URL.Path, user: user, password: pw, alerts: alerts})
		f.mu.Unlock()
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAM) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// TestAlertmanagerURL checks what one Alertmanager URL becomes: the API v2
// path under its prefix, its user information as basic auth, and a
// receiver label and logs without them. Alerts sent before Run arrive
// once it starts.
func TestAlertmanagerURL(t *testing.T) {
	am := newFakeAM(t)
	cfg := Default()
	cfg.Alertmanagers = []string{strings.Replace(am.srv.URL, "http://", "http://vigil:s3cret@", 1) + "/am"}
	h := newHarness(t, cfg)
	spec := stallSpec("evidence from the cluster")
	now := time.Now()
	h.n.Send(h.n.Alert(spec, now)) // before Run: held until the targets are set
	h.run(t)
	eventually(t, func() bool { return len(am.requests()) == 1 }, "the alert sent before Run arrives")

	req := am.requests()[0]
	require.Equal(t, "/am/api/v2/alerts", req.path)
	require.Equal(t, "vigil", req.user)
	require.Equal(t, "s3cret", req.password)
	require.Len(t, req.alerts, 1)
	got := req.alerts[0]
	require.Equal(t, spec.Labels, got.Labels)
	require.Equal(t, spec.Annotations, got.Annotations)
	require.True(t, spec.StartsAt.Equal(got.StartsAt))
	require.True(t, now.Add(4*time.Minute).Truncate(time.Millisecond).Equal(got.EndsAt), "endsAt %s", got.EndsAt)

	recv := am.srv.URL + "/am/api/v2/alerts"
	require.Equal(t, 1.0, h.metric(t, "vigil_notifications_sent_total", recv))
	require.Equal(t, 0.0, h.metric(t, "vigil_notifications_queue_length", recv))
	require.Equal(t, 10000.0, h.metric(t, "vigil_notifications_queue_capacity", ""))
	logs := h.logs.String()
	require.Contains(t, logs, "notifier started")
	require.Contains(t, logs, am.srv.URL+"/am")
	require.NotContains(t, logs, "s3cret")
	require.NotContains(t, logs, "evidence from the cluster", "annotations are never logged")
}

// TestMetricsWithoutReceivers checks the metrics of a notifier with no
// receiver: only the queue capacity, and Send is harmless.
func TestMetricsWithoutReceivers(t *testing.T) {
	h := newHarness(t, Default())
	h.run(t)
	h.n.Send(h.n.Alert(stallSpec("x"), time.Now()))
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	require.Equal(t, "vigil_notifications_queue_capacity", mfs[0].GetName())
}
