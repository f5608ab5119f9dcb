package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/cost/costtest"
	"github.com/vigil-obs/vigil/internal/ui"
)

// newCostServer serves the UI over internal/cost's hand-computed hour
// (its cost_test.go gives the figures), its clock at the hour's end.
func newCostServer(t *testing.T, prices *cost.Prices) (*ui.Handler, *httptest.Server) {
	t.Helper()
	st := costtest.HandStore(t)
	end := time.Unix(1800003600, 0).UTC()
	h, err := ui.New(ui.Options{Store: st, Now: func() time.Time { return end }, Prices: prices})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func handPrices(t *testing.T) *cost.Prices {
	t.Helper()
	p, err := cost.ParsePrices("p.yaml", []byte(`currency: USD
gpu_hourly: {"NVIDIA A100-SXM4-80GB": 2.5, "NVIDIA H100 80GB HBM3": 4.0, default: 2.0}
node_overrides: [{match: {node.kubernetes.io/instance-type: spot-h100}, gpu_hourly: 1.1}]
`))
	require.NoError(t, err)
	return p
}

func TestCost(t *testing.T) {
	_, srv := newCostServer(t, handPrices(t))
	code, body := get(t, srv, "/cost?by=node")
	require.Equal(t, http.StatusOK, code)
	requireOffline(t, body)
	require.Contains(t, body, `<a href="/cost" aria-current="page">Cost</a>`, "the nav entry")
	require.Contains(t, body, "13.10 USD in all: 4.53 held by pods, of which 1.24 idle (held but inactive), and 8.57 for GPUs no pod held.")
	require.Contains(t, body, `<td class="entity">gpu-b</td><td class="num">1.00</td><td class="num">1.00</td><td class="num">0.60</td>`)
	require.Regexp(t, `(?s)gpu-b.*gpu-c.*gpu-a.*gpu-d`, body, "the largest idle cost first")
	require.Contains(t, body, `<a href="/cost?by=model">model</a>`)

	code, body = get(t, srv, "/cost?by=model")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<td class="entity">inference/llama-8b</td>`)
	require.Contains(t, body, "prompt 1.10 (0.66 used) generated 3.33 (2.00 used)")
}

func TestCostWithoutPrices(t *testing.T) {
	_, srv := newCostServer(t, nil)
	code, body := get(t, srv, "/cost")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No GPU prices: set vigil.yaml&#39;s cost section")
}

func TestCostAPI(t *testing.T) {
	h, _ := newCostServer(t, handPrices(t))
	hd, ok := h.APIs()["/api/v1/cost"]
	require.True(t, ok)
	api := httptest.NewServer(hd)
	defer api.Close()
	getJSON := func(q string, out any) int {
		resp, err := api.Client().Get(api.URL + "/api/v1/cost" + q)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		return resp.StatusCode
	}
	var out struct {
		Status string `json:"status"`
		Data   struct {
			Currency string `json:"currency"`
			Cost     struct {
				Total, Allocated, Idle, Unallocated float64
			} `json:"cost"`
			By []struct {
				Entity   map[string]string `json:"entity"`
				IdleCost float64           `json:"idle_cost"`
			} `json:"by"`
		} `json:"data"`
	}
	require.Equal(t, http.StatusOK, getJSON("?by=tenant", &out))
	require.Equal(t, "success", out.Status)
	require.Equal(t, "USD", out.Data.Currency)
	require.InDelta(t, 13.10, out.Data.Cost.Total, 0.005)
	require.InDelta(t, 1.243571, out.Data.Cost.Idle, 0.005)
	require.Equal(t, "inference", out.Data.By[0].Entity["tenant"])
	var bad struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	require.Equal(t, http.StatusBadRequest, getJSON("?by=gpu", &bad))
	require.Contains(t, bad.Error, `by must be one of node, namespace, tenant, workload, model, got "gpu"`)
	require.Equal(t, http.StatusNotFound, getJSON("?from=2027-01-15T10:00:00Z&to=2027-01-15T11:00:00Z", &bad))
}
