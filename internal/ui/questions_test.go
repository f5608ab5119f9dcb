package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/ui"
)

// openServiceStore is a cluster without GPUs: kube-state-metrics of two
// nodes (one not ready), a deployment short of a replica and a pod named
// evil that restarts; vLLM serving llama (its queue long, its KV cache
// full, its TTFT SLO burning) and a model named evil; the span metrics of
// a gateway whose tenant-c fails 78 % of its requests (its p95 1.85 s,
// tenant-a's 300 ms), and a tenant named evil.
func openServiceStore(t *testing.T) *store.Embedded {
	t.Helper()
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	app := s.AppenderV2(t.Context())
	add := func(ts time.Time, v float64, kv ...string) {
		t.Helper()
		_, err := app.Append(0, labels.FromStrings(kv...), 0, ts.UnixMilli(), v, nil, nil, storage.AOptions{})
		require.NoError(t, err)
	}
	k := 0.0
	for ts := now.Add(-time.Hour); !ts.After(now); ts = ts.Add(15 * time.Second) {
		k++
		add(ts, 1, "__name__", "kube_node_status_condition", "condition", "Ready", "status", "true", "node", "node-a")
		add(ts, 0, "__name__", "kube_node_status_condition", "condition", "Ready", "status", "true", "node", "node-b")
		add(ts, 1, "__name__", "kube_node_status_condition", "condition", "Ready", "status", "false", "node", "node-b")
		add(ts, 1, "__name__", "kube_pod_info", "namespace", "serve", "pod", evil, "node", "node-a", "created_by_kind", "ReplicaSet", "created_by_name", "api-7d9")
		add(ts, 3, "__name__", "kube_deployment_spec_replicas", "namespace", "serve", "deployment", "api")
		add(ts, 2, "__name__", "kube_deployment_status_replicas_available", "namespace", "serve", "deployment", "api")
		add(ts, float64(int(k/60)), "__name__", "kube_pod_container_status_restarts_total", "namespace", "serve", "pod", evil, "container", "app")
		vllm := func(name string, v float64, kv ...string) {
			add(ts, v, append([]string{"__name__", name, "namespace", "serve", "model_name", "llama", "pod", evil}, kv...)...)
		}
		vllm("vllm:num_requests_running", 7)
		vllm("vllm:num_requests_waiting", 30)
		vllm("vllm:kv_cache_usage_perc", 0.97)
		vllm("vllm:generation_tokens_total", 1500*k)
		vllm("vllm:request_success_total", 10*k, "finished_reason", "stop")
		for le, n := range map[string]float64{"0.5": 5, "1.0": 8, "+Inf": 10} {
			vllm("vllm:time_to_first_token_seconds_bucket", n*k, "le", le)
		}
		vllm("vllm:time_to_first_token_seconds_count", 10*k)
		add(ts, 1, "__name__", "vllm:num_requests_running", "namespace", "serve", "model_name", evil, "pod", "p")
		slo := []string{"slo", "llm-time-to-first-token", "namespace", "serve", "model", "llama"}
		add(ts, 20, append([]string{"__name__", "slo:current_burn_rate:ratio", "slo_window", "5m"}, slo...)...)
		add(ts, 0.5, append([]string{"__name__", "slo:sli_error:ratio_rate1h", "slo_window", "1h"}, slo...)...)
		add(ts, 0.95, "__name__", "slo:objective:ratio", "slo", "llm-time-to-first-token")
		for tenant, r := range map[string][2]float64{"tenant-a": {99, 1}, "tenant-c": {22, 78}, evil: {10, 0}} {
			for n, code := range []string{"STATUS_CODE_OK", "STATUS_CODE_ERROR"} {
				add(ts, r[n]*k, "__name__", "traces_span_metrics_calls_total", "service_name", "gateway", "span_name", "POST /chat",
					"span_kind", "SPAN_KIND_SERVER", "status_code", code, "tenant", tenant)
			}
		}
		for tenant, buckets := range map[string]map[string]float64{"tenant-a": {"0.1": 90, "0.5": 100, "+Inf": 100}, "tenant-c": {"0.5": 50, "2": 100, "+Inf": 100}} {
			for le, n := range buckets {
				add(ts, n*k, "__name__", "traces_span_metrics_duration_seconds_bucket", "service_name", "gateway", "span_name", "POST /chat",
					"span_kind", "SPAN_KIND_SERVER", "tenant", tenant, "le", le)
			}
		}
		add(ts, 2*k, "__name__", "traces_span_metrics_timeouts_total", "service_name", "gateway")
	}
	require.NoError(t, app.Commit())
	return s
}

func newQuestionServer(t *testing.T, s ui.Queryable) (*ui.Handler, *httptest.Server) {
	t.Helper()
	h, err := ui.New(ui.Options{Store: s, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func TestPlatform(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	code, body := get(t, srv, "/platform")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, `data-verdict="unhealthy">No: 1 node is not ready; 1 deployment has fewer replicas available than desired; 1 pod&#39;s containers restarted; 38 % of the requests failed.</p>`, "the answer first")
	require.Contains(t, body, "<strong>1 of 2</strong> nodes ready")
	require.Contains(t, body, `<td class="entity">node-b</td><td>not ready</td>`)
	require.Contains(t, body, `<tr class="bad"><td class="entity">serve</td><td class="entity">api</td><td class="num">2</td><td class="num">3</td></tr>`)
	require.Contains(t, body, "<h3>Nodes ready</h3>", "the charts second")
	require.Contains(t, body, `<pre class="query"><code>sum(kube_node_status_condition{condition=&#34;Ready&#34;, status=&#34;true&#34;})</code></pre>`, "read by the catalog's kube-state-metrics name")
	require.Contains(t, body, "Requests succeeded (the services&#39; spans)")
	require.Contains(t, body, `href="/platform"`)
}

func TestInference(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	code, body := get(t, srv, "/inference")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, `data-verdict="unhealthy">No: llama&#39;s KV cache is 97 % full; llama has 30 requests queued (its SLO: below 20); llama breaches llm-time-to-first-token (burn 20× (5m), 10× (1h)).`)
	require.Contains(t, body, `<tr class="model bad" data-model="llama">`)
	require.Contains(t, body, `<td class="num bad">97 %</td>`, "KV cache")
	require.Contains(t, body, `<td class="num bad">30</td>`, "the queue")
	require.Contains(t, body, `<td class="num">100/s</td>`, "tokens per second")
	require.Contains(t, body, `<div class="slo bad" data-slo="llm-time-to-first-token"><span class="kind">llm-time-to-first-token</span> <span class="muted">(95 % within 1 s)</span>: burn 20× (5m), 10× (1h)</div>`)
	require.Contains(t, body, "<h3>p95 time to first token (s)</h3>")
	require.Contains(t, body, `<line class="limit"`, "the TTFT SLO's threshold on its chart")
	require.Contains(t, body, `histogram_quantile(0.95, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`, "the catalog's vLLM names")
}

func TestFailures(t *testing.T) {
	h, srv := newQuestionServer(t, openServiceStore(t))
	code, body := get(t, srv, "/failures")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Regexp(t, `data-verdict="unhealthy">38 % of the [\d.]+k requests the services served failed; tenant tenant-c has 98\.7\d? % of the failures \(78 % of its requests failed\)`, body)
	require.Contains(t, body, `<section class="breakdown" data-by="tenant"`)
	require.Contains(t, body, `<tr data-value="tenant-c">`)
	require.Contains(t, body, "<strong>", "counts")
	require.Contains(t, body, "timeouts")
	require.Contains(t, body, "<h3>Failed requests per second by tenant</h3>")

	api := httptest.NewServer(h.APIs()["/api/v1/failures"])
	defer api.Close()
	resp, err := api.Client().Get(api.URL + "/api/v1/failures?from=1h&to=2026-11-12T03:00:00Z")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Data   struct {
			Verdict    string `json:"verdict"`
			Breakdowns []struct {
				By   string `json:"by"`
				Rows []struct {
					Value string  `json:"value"`
					Rate  float64 `json:"error_ratio"`
					Share float64 `json:"share_of_failures"`
				} `json:"rows"`
			} `json:"breakdowns"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "success", out.Status)
	require.Equal(t, "unhealthy", out.Data.Verdict)
	require.Equal(t, "tenant", out.Data.Breakdowns[0].By)
	require.Equal(t, "tenant-c", out.Data.Breakdowns[0].Rows[0].Value)
	require.InDelta(t, 0.78, out.Data.Breakdowns[0].Rows[0].Rate, 0.001)

	resp, err = api.Client().Get(api.URL + "/api/v1/failures?from=soon")
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
}

func TestQuestionAPIs(t *testing.T) {
	h, _ := newQuestionServer(t, openServiceStore(t))
	for _, path := range []string{"/api/v1/platform", "/api/v1/inference", "/api/v1/failures", "/api/v1/tenants", "/api/v1/gpus", "/api/v1/topology"} {
		hd, ok := h.APIs()[path]
		require.True(t, ok, path)
		rec := httptest.NewRecorder()
		hd.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		var out struct {
			Status string          `json:"status"`
			Data   json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), path)
		require.Equal(t, "success", out.Status, path)
	}
}

func TestQuestionsEscape(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	for _, path := range []string{"/platform", "/inference", "/failures", "/tenants", "/topology"} {
		_, body := get(t, srv, path)
		require.NotContains(t, body, evil, path)
		require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", path)
	}
}

func TestQuestionsEmptyStore(t *testing.T) {
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, srv := newQuestionServer(t, s)
	for _, path := range []string{"/platform", "/inference", "/failures", "/gpus", "/topology"} {
		code, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, code, path)
		require.Contains(t, body, "No ", path)
		if path != "/gpus" && path != "/topology" {
			require.Contains(t, body, `data-verdict="no data">No data yet`, path)
		}
		require.NotContains(t, body, "<svg", path)
	}
}

func TestQuestionsWithoutGPUs(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	code, body := get(t, srv, "/gpus")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No GPU reports to Vigil")
	code, body = get(t, srv, "/platform?from=2026-11-12T03:00:00Z&to=2026-11-12T02:00:00Z")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "bad time range")
	require.True(t, strings.Contains(body, "data-verdict="), "the page renders the default window")
}

func TestTopology(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	code, body := get(t, srv, "/topology")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, `<section class="topo-node" data-node="node-a"`)
	require.Contains(t, body, `<td class="entity">serve/&lt;script&gt;alert(1)&lt;/script&gt;</td>`, "the pod on its node")
	require.Contains(t, body, `<form class="search" method="get" action="/topology" role="search">`, "a GET form, no script")

	_, body = get(t, srv, "/topology?q=NODE-B")
	require.Contains(t, body, `data-node="node-b"`)
	require.NotContains(t, body, `data-node="node-a"`, "a search keeps what matches")
	require.Contains(t, body, `value="NODE-B"`)

	_, body = get(t, srv, "/topology?q=script")
	require.Contains(t, body, `data-node="node-a"`, "a node whose pod matches")
	require.NotContains(t, body, `data-node="node-b"`)

	_, body = get(t, srv, "/topology?q=nowhere")
	require.Contains(t, body, "Nothing matches &#34;nowhere&#34;")
}
