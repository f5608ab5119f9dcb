package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/buildinfo"
)

// WebhookVersion is the version of Alertmanager's webhook payload that
// WebhookMessage follows.
const WebhookVersion = "4"

// WebhookReceiver is the receiver name in webhook payloads.
const WebhookReceiver = "vigil"

// WebhookMessage is the body of a webhook POST: Alertmanager's webhook
// payload, version 4, as Alertmanager sends it for a route with
// group_by: ['...'] — every alert is its own group, so one message
// carries one alert, groupLabels are its labels and groupKey is stable
// for its identity.
type WebhookMessage struct {
	Receiver          string            `json:"receiver"`
	Status            string            `json:"status"`
	Alerts            []WebhookAlert    `json:"alerts"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   uint64            `json:"truncatedAlerts"`
}

// WebhookAlert is one alert of a WebhookMessage.
type WebhookAlert struct {
	// Status is "firing" or "resolved".
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	// Fingerprint is Alertmanager's: the hash of the labels.
	Fingerprint string `json:"fingerprint"`
}

// webhookMessage builds the payload for a at now (wall clock); the alert
// is resolved when it ends at or before now.
func webhookMessage(a *Alert, now time.Time, externalURL string) WebhookMessage {
	status := string(model.AlertFiring)
	if a.ResolvedAt(now) {
		status = string(model.AlertResolved)
	}
	ls, ann := a.Labels.Map(), a.Annotations.Map()
	return WebhookMessage{
		Receiver: WebhookReceiver,
		Status:   status,
		Alerts: []WebhookAlert{{
			Status: status, Labels: ls, Annotations: ann,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, GeneratorURL: a.GeneratorURL,
			Fingerprint: Fingerprint(a),
		}},
		GroupLabels:       ls,
		CommonLabels:      ls,
		CommonAnnotations: ann,
		ExternalURL:       externalURL,
		Version:           WebhookVersion,
		GroupKey:          "{}:" + labelSet(a).String(),
	}
}

// Fingerprint returns Alertmanager's fingerprint of a: the hash of its
// labels as 16 hex digits, what /api/v2/alerts and webhooks show.
func Fingerprint(a *Alert) string { return labelSet(a).Fingerprint().String() }

func labelSet(a *Alert) model.LabelSet {
	ls := make(model.LabelSet, a.Labels.Len())
	for k, v := range a.Labels.Map() {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	return ls
}

// Retries of a webhook request that failed for a reason that may pass (a
// network error, a 5xx or 429 answer).
const (
	webhookAttempts = 3
	webhookBackoff  = time.Second
)

// webhook delivers payloads to one URL from a bounded queue, oldest
// first, with retries; it counts what happens to them.
type webhook struct {
	target   string // the URL without user information
	user     *url.Userinfo
	name     string // redacted: the receiver label and log value
	client   *http.Client
	timeout  time.Duration
	capacity int
	attempts int
	backoff  time.Duration
	logger   *slog.Logger
	counters counters

	mu      sync.Mutex
	queue   [][]byte
	closed  bool
	hasWork chan struct{}
}

func newWebhook(u *url.URL, name string, client *http.Client, cfg Config, logger *slog.Logger) *webhook {
	t := *u
	t.User = nil
	return &webhook{
		target: t.String(), user: u.User, name: name, client: client,
		timeout: time.Duration(cfg.Timeout), capacity: cfg.QueueCapacity,
		attempts: webhookAttempts, backoff: webhookBackoff,
		logger:  logger.With("receiver", name),
		hasWork: make(chan struct{}, 1),
	}
}

// enqueue adds payloads, dropping the oldest beyond the capacity.
func (w *webhook) enqueue(payloads ...[]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.counters.dropped.Add(int64(len(payloads)))
		return
	}
	w.queue = append(w.queue, payloads...)
	if d := len(w.queue) - w.capacity; d > 0 {
		w.logger.Warn("webhook queue full, dropping the oldest alerts", "count", d)
		w.counters.dropped.Add(int64(d))
		w.queue = append(w.queue[:0], w.queue[d:]...)
	}
	w.counters.queued.Store(int64(len(w.queue)))
	select {
	case w.hasWork <- struct{}{}:
	default:
	}
}

func (w *webhook) pop() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil, false
	}
	p := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	w.counters.queued.Store(int64(len(w.queue)))
	return p, true
}

// run delivers queued payloads until stop is closed, then drains.
func (w *webhook) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			w.drain()
			return
		case <-w.hasWork:
		}
		for {
			select {
			case <-stop:
				w.drain()
				return
			default:
			}
			p, ok := w.pop()
			if !ok {
				break
			}
			w.deliver(p, stop)
		}
	}
}

// deliver posts p, retrying with a doubling backoff while the failure may
// pass, and stops retrying when stop is closed.
func (w *webhook) deliver(p []byte, stop <-chan struct{}) {
	backoff := w.backoff
	for attempt := 1; ; attempt++ {
		retry, err := w.post(p)
		if err == nil {
			w.counters.sent.Add(1)
			return
		}
		w.counters.failed.Add(1)
		if !retry || attempt >= w.attempts || !sleep(backoff, stop) {
			w.counters.dropped.Add(1)
			w.logger.Warn("send alerts to webhook", "count", 1, "attempts", attempt, "err", err)
			return
		}
		backoff *= 2
	}
}

// sleep waits d and reports true, or false when stop closes first.
func sleep(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// drain closes the queue and makes one attempt for each payload left; the
// first failure drops the rest, so a receiver that is down does not hold
// shutdown for a timeout per alert.
func (w *webhook) drain() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	for {
		p, ok := w.pop()
		if !ok {
			return
		}
		_, err := w.post(p)
		if err == nil {
			w.counters.sent.Add(1)
			continue
		}
		w.counters.failed.Add(1)
		w.mu.Lock()
		n := len(w.queue) + 1
		w.queue = nil
		w.counters.queued.Store(0)
		w.mu.Unlock()
		w.counters.dropped.Add(int64(n))
		w.logger.Warn("send alerts to webhook on shutdown, dropping the rest", "count", n, "err", err)
		return
	}
}

// post sends one payload and says whether a failure may pass on a retry.
func (w *webhook) post(p []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.target, bytes.NewReader(p))
	if err != nil {
		return false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vigil/"+buildinfo.Version)
	if w.user != nil {
		pw, _ := w.user.Password()
		req.SetBasicAuth(w.user.Username(), pw)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may carry a token
		}
		return true, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	retry = resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
	return retry, fmt.Errorf("answer %s", resp.Status)
}

// marshalWebhook encodes the payload of each alert.
func marshalWebhook(alerts []*Alert, now time.Time, externalURL string) ([][]byte, error) {
	out := make([][]byte, 0, len(alerts))
	for _, a := range alerts {
		b, err := json.Marshal(webhookMessage(a, now, externalURL))
		if err != nil {
			return nil, fmt.Errorf("encode webhook payload: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}
