package alert

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// hook is a webhook receiver that records what it gets and answers with
// the status codes of answers, then 200.
type hook struct {
	srv     *httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	answers []int
	hits    atomic.Int64
}

func newHook(t *testing.T, answers ...int) *hook {
	t.Helper()
	h := &hook{answers: answers}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		code := http.StatusOK
		if len(h.answers) > 0 {
			code, h.answers = h.answers[0], h.answers[1:]
		}
		if code == http.StatusOK {
			h.bodies = append(h.bodies, b)
			h.headers = append(h.headers, r.Header.Clone())
		}
		h.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) received() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

// message decodes the i-th payload into a generic map, so the test sees
// the JSON keys as a webhook consumer does.
func (h *hook) message(t *testing.T, i int) (map[string]any, http.Header) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var m map[string]any
	require.NoError(t, json.Unmarshal(h.bodies[i], &m))
	return m, h.headers[i]
}

// wall is the wall clock of the webhook tests.
var wall = time.Date(2026, 11, 12, 2, 50, 0, 0, time.UTC)

func stallSpec(summary string) Spec {
	return Spec{
		Labels:       map[string]string{"alertname": "training_stall", "severity": "page", "namespace": "ml-train", "workload": "llm-pretrain"},
		Annotations:  map[string]string{"summary": summary},
		StartsAt:     wall.Add(-150 * time.Second),
		GeneratorURL: "https://vigil.example.com/api/v1/incidents/3f2a",
	}
}

func webhookConfig(urls ...string) Config {
	cfg := Default()
	cfg.Webhooks = urls
	cfg.ExternalURL = "https://vigil.example.com"
	cfg.Timeout = model.Duration(5 * time.Second)
	return cfg
}

func TestWebhookPayload(t *testing.T) {
	hk := newHook(t)
	url := strings.Replace(hk.srv.URL, "http://", "http://vigil:s3cret@", 1) + "/hook?token=abc"
	h := newHarness(t, webhookConfig(url), WithClock(func() time.Time { return wall }))
	stop := h.run(t)

	firing := h.n.Alert(stallSpec("first diagnosis"), wall)
	h.n.Send(firing)
	eventually(t, func() bool { return hk.received() == 1 }, "the firing alert arrives")
	resolved := stallSpec("second diagnosis")
	resolved.ResolvedAt = wall.Add(-time.Second)
	h.n.Send(h.n.Alert(resolved, wall))
	eventually(t, func() bool { return hk.received() == 2 }, "the resolve arrives")
	stop()

	msg, hdr := hk.message(t, 0)
	require.Equal(t, "application/json", hdr.Get("Content-Type"))
	user, pw, ok := (&http.Request{Header: hdr}).BasicAuth()
	require.True(t, ok, "the URL's user information is sent as basic auth")
	require.Equal(t, "vigil", user)
	require.Equal(t, "s3cret", pw)

	labels := map[string]any{"alertname": "training_stall", "severity": "page", "namespace": "ml-train", "workload": "llm-pretrain"}
	fp := Fingerprint(firing)
	require.Equal(t, map[string]any{
		"receiver": "vigil",
		"status":   "firing",
		"alerts": []any{map[string]any{
			"status":       "firing",
			"labels":       labels,
			"annotations":  map[string]any{"summary": "first diagnosis"},
			"startsAt":     "2026-11-12T02:47:30Z",
			"endsAt":       "2026-11-12T02:54:00Z",
			"generatorURL": "https://vigil.example.com/api/v1/incidents/3f2a",
			"fingerprint":  fp,
		}},
		"groupLabels":       labels,
		"commonLabels":      labels,
		"commonAnnotations": map[string]any{"summary": "first diagnosis"},
		"externalURL":       "https://vigil.example.com",
		"version":           "4",
		"groupKey":          `{}:{alertname="training_stall", namespace="ml-train", severity="page", workload="llm-pretrain"}`,
		"truncatedAlerts":   float64(0),
	}, msg)

	second, _ := hk.message(t, 1)
	require.Equal(t, "resolved", second["status"])
	a := second["alerts"].([]any)[0].(map[string]any)
	require.Equal(t, "resolved", a["status"])
	require.Equal(t, "2026-11-12T02:49:59Z", a["endsAt"])
	require.Equal(t, fp, a["fingerprint"], "same identity labels, same fingerprint")
	require.Equal(t, msg["groupKey"], second["groupKey"], "same identity labels, same group")
	require.Equal(t, "second diagnosis", a["annotations"].(map[string]any)["summary"])

	recv := strings.TrimSuffix(hk.srv.URL, "/") + "/hook"
	require.Equal(t, 2.0, h.metric(t, "vigil_notifications_sent_total", recv), "the receiver label has no credentials")
	require.Equal(t, 0.0, h.metric(t, "vigil_notifications_failed_total", recv))
	require.NotContains(t, h.logs.String(), "s3cret")
	require.NotContains(t, h.logs.String(), "token=abc")
	require.NotContains(t, h.logs.String(), "diagnosis", "annotations are never logged")
}

// TestExternalLabels: the external labels are added to every alert that
// lacks the name, and an alert's own label wins, as Prometheus's
// global.external_labels; the alert handed to Send is not changed.
func TestExternalLabels(t *testing.T) {
	hk := newHook(t)
	cfg := webhookConfig(hk.srv.URL)
	cfg.ExternalLabels = map[string]string{"cluster": "a", "namespace": "other"}
	h := newHarness(t, cfg, WithClock(func() time.Time { return wall }))
	stop := h.run(t)
	a := h.n.Alert(stallSpec("diagnosis"), wall)
	h.n.Send(a)
	eventually(t, func() bool { return hk.received() == 1 }, "the alert arrives")
	stop()
	msg, _ := hk.message(t, 0)
	got := msg["alerts"].([]any)[0].(map[string]any)["labels"].(map[string]any)
	require.Equal(t, map[string]any{"alertname": "training_stall", "severity": "page", "namespace": "ml-train",
		"workload": "llm-pretrain", "cluster": "a"}, got)
	require.Empty(t, a.Labels.Get("cluster"), "the caller's alert is left as it was")
}

func TestWebhookRetries(t *testing.T) {
	f := func(name string, answers []int, wantHits, wantSent, wantFailed, wantDropped float64) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			hk := newHook(t, answers...)
			h := newHarness(t, webhookConfig(hk.srv.URL))
			h.run(t)
			h.n.Send(h.n.Alert(stallSpec("x"), time.Now()))
			eventually(t, func() bool {
				return h.metric(t, "vigil_notifications_sent_total", hk.srv.URL)+
					h.metric(t, "vigil_notifications_dropped_total", hk.srv.URL) == 1
			}, "the alert is delivered or given up")
			require.Equal(t, wantHits, float64(hk.hits.Load()))
			require.Equal(t, wantSent, h.metric(t, "vigil_notifications_sent_total", hk.srv.URL))
			require.Equal(t, wantFailed, h.metric(t, "vigil_notifications_failed_total", hk.srv.URL))
			require.Equal(t, wantDropped, h.metric(t, "vigil_notifications_dropped_total", hk.srv.URL))
		})
	}
	f("5xx then success", []int{503, 500}, 3, 1, 2, 0)
	f("429 then success", []int{429}, 2, 1, 1, 0)
	f("5xx every time", []int{502, 502, 502, 502}, 3, 0, 3, 1)
	f("4xx is not retried", []int{400}, 1, 0, 1, 1)
}

// TestWebhookDown sends to a receiver that is down: the queue holds at
// most QueueCapacity alerts, every attempt is counted, nothing crashes,
// and Run still returns promptly.
func TestWebhookDown(t *testing.T) {
	down := "http://" + peertest.FreeAddr(t) + "/hook"
	cfg := webhookConfig(down)
	cfg.QueueCapacity = 3
	h := newHarness(t, cfg)
	for i := range 10 {
		s := stallSpec("x")
		s.Labels["workload"] = string(rune('a' + i))
		h.n.Send(h.n.Alert(s, time.Now()))
	}
	require.Equal(t, 3.0, h.metric(t, "vigil_notifications_queue_length", down), "the queue is bounded")
	require.Equal(t, 7.0, h.metric(t, "vigil_notifications_dropped_total", down), "the oldest are dropped")
	h.run(t)
	eventually(t, func() bool { return h.metric(t, "vigil_notifications_dropped_total", down) == 10 }, "every alert is given up")
	require.Equal(t, 9.0, h.metric(t, "vigil_notifications_failed_total", down), "3 alerts × 3 attempts")
	require.Equal(t, 0.0, h.metric(t, "vigil_notifications_sent_total", down))
	require.Equal(t, 0.0, h.metric(t, "vigil_notifications_queue_length", down))
	require.Contains(t, h.logs.String(), "send alerts to webhook")
}

// TestWebhookShutdownDrains checks that what is queued when Run ends is
// still sent, and that Send after Run does nothing.
func TestWebhookShutdownDrains(t *testing.T) {
	hk := newHook(t)
	h := newHarness(t, webhookConfig(hk.srv.URL))
	h.n.Send(h.n.Alert(stallSpec("a"), time.Now()), h.n.Alert(stallSpec("b"), time.Now()))
	stop := h.run(t)
	stop()
	require.Equal(t, 2, hk.received())
	h.n.Send(h.n.Alert(stallSpec("c"), time.Now()))
	require.Equal(t, 2, hk.received())
	require.Equal(t, 2.0, h.metric(t, "vigil_notifications_sent_total", hk.srv.URL))
}

func TestRunTwice(t *testing.T) {
	h := newHarness(t, Default())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, h.n.Run(ctx), "a cancelled Run returns at once")
	require.ErrorContains(t, h.n.Run(t.Context()), "Run was already called")
}

func TestNewRejectsBadConfig(t *testing.T) {
	cfg := Default()
	cfg.Alertmanagers = []string{"ftp://x"}
	_, err := New(cfg, nil, nil)
	require.ErrorContains(t, err, `alerting config: alertmanagers: entry 1 "ftp://x"`)
}
