package push_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/api"
	"github.com/vigil-obs/vigil/internal/ingest/push"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// env is the push endpoint mounted in Vigil's API over an embedded store.
type env struct {
	url   string
	clock *clock
	push  *push.Handler
	reg   *prometheus.Registry
}

func newEnv(t *testing.T, opts push.Options) *env {
	t.Helper()
	c := &clock{t: time.Now().Truncate(time.Second)}
	reg := prometheus.NewRegistry()
	st, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), c.Now, nil, reg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	opts.Appendable, opts.Now, opts.Registerer = st, c.Now, reg
	p, err := push.New(opts)
	require.NoError(t, err)
	h, err := api.New(api.Options{Store: st, Gatherer: reg, Push: p})
	require.NoError(t, err)
	h.SetReady(true)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{url: srv.URL, clock: c, push: p, reg: reg}
}

// do sends a request and returns the status and the body.
func (e *env) do(t *testing.T, method, path, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// query evaluates q through the API at the clock's time and returns the
// series as `{a="1",b="2"} value` lines, sorted.
func (e *env) query(t *testing.T, q string) []string {
	t.Helper()
	ts := strconv.FormatFloat(float64(e.clock.Now().UnixMilli())/1000, 'f', 3, 64)
	code, body := e.do(t, http.MethodGet, "/api/v1/query?query="+url.QueryEscape(q)+"&time="+ts, "", "")
	require.Equal(t, http.StatusOK, code, body)
	var resp struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	out := []string{}
	for _, r := range resp.Data.Result {
		out = append(out, seriesString(r.Metric)+" "+r.Value[1].(string))
	}
	sort.Strings(out)
	return out
}

// seriesString writes labels as name{a="1",b="2"}, names sorted, empty
// values left out (an empty label is no label in Prometheus).
func seriesString(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n, v := range m {
		if n != "__name__" && v != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.Quote(m[n])
	}
	return m["__name__"] + "{" + strings.Join(parts, ",") + "}"
}

// requests returns vigil_push_requests_total{code}.
func (e *env) requests(t *testing.T, code string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "vigil_push_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// groups returns vigil_push_groups.
func (e *env) groups(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GatherAndCount(e.reg, "vigil_push_groups")
	require.NoError(t, err)
	require.Equal(t, 1, v)
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "vigil_push_groups" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// samples returns vigil_push_samples_total.
func (e *env) samples(t *testing.T) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "vigil_push_samples_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

// nopAppendable is an AppendableV2 that is never called.
type nopAppendable struct{}

func (nopAppendable) AppenderV2(context.Context) storage.AppenderV2 { return nil }
