package ui_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/ui"
)

// slowStore answers a range query's selects (a plot's or a chart's) only
// once gate is closed, or instant ones too with all; everything else at
// once.
type slowStore struct {
	*store.Embedded
	gate    chan struct{}
	all     bool
	selects atomic.Int32
}

func (s *slowStore) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := s.Embedded.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return &slowQuerier{Querier: q, s: s}, nil
}

func (s *slowStore) Engine() promql.QueryEngine { return s.Embedded.Engine() }

type slowQuerier struct {
	storage.Querier
	s *slowStore
}

func (q *slowQuerier) Select(ctx context.Context, sorted bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	q.s.selects.Add(1)
	if q.s.all || (hints != nil && hints.Step > 0) {
		select {
		case <-q.s.gate:
		case <-ctx.Done():
			return storage.ErrSeriesSet(ctx.Err())
		}
	}
	return q.Querier.Select(ctx, sorted, hints, ms...)
}

func newSlowServer(t *testing.T, s *slowStore) *httptest.Server {
	t.Helper()
	h, err := ui.New(ui.Options{Store: s, Incidents: testIncidents(), Now: func() time.Time { return now }, RenderBudget: 100 * time.Millisecond})
	require.NoError(t, err)
	mux := http.NewServeMux()
	for path, api := range h.APIs() {
		mux.Handle(path, api)
	}
	mux.Handle("/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// reloadOf returns the URL a loading page reloads to, from its meta
// refresh, and checks its interval.
func reloadOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`<meta http-equiv="refresh" content="2; url=([^"]+)">`).FindStringSubmatch(body)
	require.NotNil(t, m, "a loading page reloads itself")
	return html.UnescapeString(m[1])
}

func TestLoadingPlots(t *testing.T) {
	s := &slowStore{Embedded: openStore(t), gate: make(chan struct{})}
	srv := newSlowServer(t, s)

	// The plot's query waits: the page renders at its budget with
	// everything else, says the plot is loading, and reloads itself with
	// its data clock pinned.
	start := time.Now()
	code, body := get(t, srv, "/incidents/abc123?refresh=30")
	require.Equal(t, http.StatusOK, code)
	require.Less(t, time.Since(start), 5*time.Second, "the page waited on its slow query")
	requireOffline(t, body)
	require.Contains(t, body, "drain gpu-node-03 and reset the GPU", "what the page has is there")
	require.Contains(t, body, `class="loading" role="status"`)
	require.Contains(t, body, `Still loading: 1 query ran past 100ms`)
	require.NotContains(t, body, `<svg class="evidence-plot"`)
	reload := reloadOf(t, body)
	require.Contains(t, reload, "/incidents/abc123?")
	require.Contains(t, reload, "at=1794452400000", "the data clock pinned")
	require.Contains(t, reload, "refresh=30", "the page's own state kept")
	require.NotContains(t, body, `content="30"`, "the reload replaces the auto-refresh while loading")
	// The page's links do not carry the pin.
	require.NotRegexp(t, `href="[^"]*at=`, body)

	// The query answers; the reload finds its answer and has the plot.
	close(s.gate)
	require.Eventually(t, func() bool {
		_, body = get(t, srv, reload)
		return !strings.Contains(body, "Still loading")
	}, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, body, `<svg class="evidence-plot"`)
	require.Contains(t, body, `data-series="Hostname=gpu-node-03 gpu=0"`)
	require.Contains(t, body, `data-peers="6"`)
	require.Contains(t, body, `<meta http-equiv="refresh" content="30">`, "auto-refresh is back")
}

func TestLoadingPage(t *testing.T) {
	s := &slowStore{Embedded: openStore(t), gate: make(chan struct{}), all: true}
	srv := newSlowServer(t, s)

	// The page's own data waits (its answer's counts): its frame says so.
	code, body := get(t, srv, "/gpus")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "this page&#39;s data is still being read")
	require.Contains(t, body, "<title>Loading · Vigil</title>")
	reload := reloadOf(t, body)

	// The JSON API has no budget: it waits for its queries.
	done := make(chan struct{})
	var status int
	var raw string
	var out struct {
		Data struct {
			GPUs int `json:"gpus"`
		} `json:"data"`
	}
	go func() {
		defer close(done)
		resp, err := srv.Client().Get(srv.URL + "/api/v1/gpus")
		if err != nil {
			return
		}
		defer resp.Body.Close()
		status = resp.StatusCode
		b, _ := io.ReadAll(resp.Body)
		raw = string(b)
		_ = json.Unmarshal(b, &out)
	}()
	select {
	case <-done:
		t.Fatalf("the API answered before its queries could: %d %s", status, raw)
	case <-time.After(300 * time.Millisecond):
	}
	close(s.gate)
	<-done
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 11, out.Data.GPUs)

	require.Eventually(t, func() bool {
		_, body = get(t, srv, reload)
		return !strings.Contains(body, "still being read")
	}, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, body, "gpu-node-09")
}

func TestPinnedClock(t *testing.T) {
	srv := newServer(t, testIncidents())
	// A bad pin says so and shows now; a stale one is ignored.
	code, body := get(t, srv, "/platform?at=soon")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "at=&#34;soon&#34; is not a time in Unix milliseconds")
	code, body = get(t, srv, "/platform?at=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `datetime="2026-11-12T03:00:00Z"`, "the data clock is now")
	code, body = get(t, srv, "/platform?at=1794452340000") // a minute before now
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `datetime="2026-11-12T02:59:00Z"`, "the data clock pinned")
}

func TestLoadsReadAnew(t *testing.T) {
	s := &slowStore{Embedded: openStore(t), gate: make(chan struct{})}
	close(s.gate)
	srv := newSlowServer(t, s)
	// A page asked anew reads anew, even for the same window: only a
	// loading page's reload takes the answers kept for it.
	path := "/incidents/abc123?from=2026-11-12T02:00:00Z&to=2026-11-12T03:00:00Z"
	_, body := get(t, srv, path)
	require.Contains(t, body, `<svg class="evidence-plot"`)
	first := s.selects.Load()
	require.Positive(t, first)
	_, _ = get(t, srv, path)
	require.Equal(t, 2*first, s.selects.Load())
	_, _ = get(t, srv, path+"&at=1794452400000")
	require.Equal(t, 2*first, s.selects.Load(), "the reload took the kept answers")
}
