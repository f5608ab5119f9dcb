package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/store"
)

func TestTenants(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	code, body := get(t, srv, "/tenants")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, `<p class="answer verdict-unhealthy" data-verdict="unhealthy">tenant-c has 98.73 % of the failures (78 % of its requests failed).</p>`, "the answer first")
	require.Contains(t, body, "<strong>3</strong> tenants")
	require.Contains(t, body, `<a href="/tenants" aria-current="page">Tenants</a>`, "the nav entry")

	rows := regexp.MustCompile(`<tr(?: class="bad")? data-tenant="([^"]*)">`).FindAllStringSubmatch(body, -1)
	var order []string
	for _, m := range rows {
		order = append(order, m[1])
	}
	require.Equal(t, []string{"tenant-c", "tenant-a", "&lt;script&gt;alert(1)&lt;/script&gt;"}, order, "worst share of the failures first")
	require.Contains(t, body, `<tr class="bad" data-tenant="tenant-c">`)
	require.Contains(t, body, `<td class="num">78 %</td>`, "tenant-c's error ratio")
	require.Contains(t, body, `<td class="num">1.85 s</td>`, "tenant-c's p95")
	require.Contains(t, body, `<td class="num">300 ms</td>`, "tenant-a's p95")
	require.Contains(t, body, `<td class="entity">gateway</td>`, "the services it used")
	require.Less(t, regexp.MustCompile(`data-tenant=`).FindStringIndex(body)[0], regexp.MustCompile(`<h3>`).FindStringIndex(body)[0], "the table before the charts")
	require.Contains(t, body, "<h3>Error ratio by tenant</h3>")
	require.Contains(t, body, "<h3>p95 latency by tenant (s)</h3>")
	require.Contains(t, body, `histogram_quantile(0.95, sum by (le, tenant) (rate(traces_span_metrics_duration_seconds_bucket`)
}

func TestTenantsAPI(t *testing.T) {
	h, _ := newQuestionServer(t, openServiceStore(t))
	hd, ok := h.APIs()["/api/v1/tenants"]
	require.True(t, ok)
	api := httptest.NewServer(hd)
	defer api.Close()
	resp, err := api.Client().Get(api.URL + "/api/v1/tenants?from=1h&to=2026-11-12T03:00:00Z")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Status string `json:"status"`
		Data   struct {
			Verdict string   `json:"verdict"`
			Answer  string   `json:"answer"`
			Labels  []string `json:"labels_looked_for"`
			Tenants []struct {
				Tenant   string   `json:"tenant"`
				Requests float64  `json:"requests"`
				Failed   float64  `json:"failed"`
				Rate     float64  `json:"error_ratio"`
				Share    float64  `json:"share_of_failures"`
				P95      *float64 `json:"p95_seconds"`
				Services []string `json:"services"`
			} `json:"tenants"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "success", out.Status)
	require.Equal(t, "unhealthy", out.Data.Verdict)
	require.Equal(t, "tenant-c has 98.73 % of the failures (78 % of its requests failed).", out.Data.Answer)
	require.Equal(t, []string{"tenant"}, out.Data.Labels)
	require.Len(t, out.Data.Tenants, 3)
	c, a, e := out.Data.Tenants[0], out.Data.Tenants[1], out.Data.Tenants[2]
	require.Equal(t, "tenant-c", c.Tenant)
	require.InDelta(t, 0.78, c.Rate, 0.001)
	require.InDelta(t, 78.0/79, c.Share, 0.001)
	require.InDelta(t, 0.78*c.Requests, c.Failed, 1)
	require.NotNil(t, c.P95)
	require.InDelta(t, 1.85, *c.P95, 0.01)
	require.Equal(t, []string{"gateway"}, c.Services)
	require.Equal(t, "tenant-a", a.Tenant)
	require.InDelta(t, 0.3, *a.P95, 0.01)
	require.Equal(t, evil, e.Tenant, "JSON carries the name as it is")
	require.Nil(t, e.P95, "no duration histogram of it: null")
	require.Zero(t, e.Share)

	resp2, err := api.Client().Get(api.URL + "/api/v1/tenants?from=soon")
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp2.StatusCode)
	require.NoError(t, resp2.Body.Close())
}

func TestTenantsEscape(t *testing.T) {
	_, srv := newQuestionServer(t, openServiceStore(t))
	_, body := get(t, srv, "/tenants")
	require.NotContains(t, body, evil)
	require.Contains(t, body, `<td class="entity">&lt;script&gt;alert(1)&lt;/script&gt;</td>`)
}

func TestTenantsEmptyStore(t *testing.T) {
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, srv := newQuestionServer(t, s)
	code, body := get(t, srv, "/tenants")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-verdict="no data">No tenants in the data: no span metrics&#39; request carries a tenant label (looked for tenant)`)
	require.NotContains(t, body, "<svg")
	require.NotContains(t, body, "data-tenant=")
}

func TestTenantsWithoutTenantLabel(t *testing.T) {
	s, err := store.OpenEmbedded(store.DefaultEmbeddedConfig(t.TempDir()), func() time.Time { return now }, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	app := s.AppenderV2(t.Context())
	k := 0.0
	for ts := now.Add(-time.Hour); !ts.After(now); ts = ts.Add(15 * time.Second) {
		k++
		for code, n := range map[string]float64{"STATUS_CODE_OK": 9, "STATUS_CODE_ERROR": 1} {
			_, err := app.Append(0, labels.FromStrings("__name__", "traces_span_metrics_calls_total", "service_name", "gateway",
				"span_name", "POST /chat", "span_kind", "SPAN_KIND_SERVER", "status_code", code), 0, ts.UnixMilli(), n*k, nil, nil, storage.AOptions{})
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	h, srv := newQuestionServer(t, s)
	code, body := get(t, srv, "/tenants")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `data-verdict="no data">No tenants in the data: no span metrics&#39; request carries a tenant label (looked for tenant)`)
	require.NotContains(t, body, "<svg")

	_, body = get(t, srv, "/failures")
	require.Contains(t, body, "10 % of the", "the same store has failures, without tenants")

	rec := httptest.NewRecorder()
	h.APIs()["/api/v1/tenants"].ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/tenants", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"verdict":"no data"`)
	require.Contains(t, rec.Body.String(), `"labels_looked_for":["tenant"]`)
	require.Contains(t, rec.Body.String(), `"tenants":[]`)
}
