package dashboards_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/dashboards"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/ingest/self"
	"github.com/vigil-obs/vigil/internal/server"
	"github.com/vigil-obs/vigil/internal/sim"
)

// The simulated runs: 40 minutes of the demo's cluster (10 nodes of 8
// GPUs, an 8-node training job, 4 vLLM replicas, a notebook, the request
// path's traces), its label variants pinned (labelsNew, labelsOld); the
// fault at 20 minutes.
const (
	runFor  = 40 * time.Minute
	onsetAt = 20 * time.Minute
	// As the demo: an evaluation cycle every 30 s of simulated time once
	// 10 minutes of data are in.
	cycleEvery = 30 * time.Second
	warmup     = 10 * time.Minute
)

// labelsNew are dcgm-exporter's Hostname label and vLLM 0.11's names, with
// every optional field on; labelsOld are dcgm-exporter's newer hostname
// label and vLLM 0.9's names (gpu_cache_usage_perc,
// time_per_output_token_seconds), which the dashboards read too.
var (
	labelsNew = sim.Labels{DCGMHost: sim.HostnameUpper, DCGMPod: sim.PodLabelsNew, NVLinkType: sim.NVLinkGauge,
		NodeInstance: sim.InstanceName, XIDCount: sim.On, NVLinkErrors: sim.On, KSM: sim.KSMHonored,
		DCGMBlank: sim.BlankAbsent, VLLM: sim.VLLMNew, XIDField: sim.On}
	labelsOld = sim.Labels{DCGMHost: sim.HostnameLower, DCGMPod: sim.PodLabelsNew, NVLinkType: sim.NVLinkCounter,
		NodeInstance: sim.InstanceIP, XIDCount: sim.On, NVLinkErrors: sim.On, KSM: sim.KSMHonored,
		DCGMBlank: sim.BlankAbsent, VLLM: sim.VLLMOld, XIDField: sim.On}
)

// vigil is a `vigil serve` holding one simulated run: its HTTP API, the
// run's first and last instants.
type vigil struct {
	url        string
	start, end time.Time
}

// serveScenario streams a scenario through serve's pipeline (the embedded
// store, the OTLP path of traces and logs, the rules, the diagnosis and
// the incidents, on the simulated clock, as `vigil demo --serve` does),
// storing Vigil's own metrics at each evaluation as its self-monitoring
// does, and serves the API on a free port of 127.0.0.1 until the test ends.
func serveScenario(t *testing.T, sc sim.Scenario, labels sim.Labels) vigil {
	t.Helper()
	for i := range sc.Faults {
		sc.Faults[i].After = onsetAt
	}
	s, err := sim.New(sim.Config{Seed: 1, Duration: runFor, GPUModel: "A100", Labels: labels}, sc)
	require.NoError(t, err)
	rc := s.Config()
	clock := sim.NewClock(rc.Start)
	cfg := server.SimulatedConfig(t.TempDir())
	cfg.Web.Listen = "127.0.0.1:0"
	cfg.Evaluation.Interval = model.Duration(cycleEvery)
	srv := server.New(server.Options{Config: cfg, Now: clock.Now, Driven: true})
	require.NoError(t, srv.Start(t.Context(), server.Host))
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	rp, err := eval.NewRequestPath(s, srv.Traces())
	require.NoError(t, err)
	defer rp.Close()
	own := self.New(srv.Registry(), srv.Store(), "vigil", clock.Now, nil, nil)
	next := rc.Start.Add(warmup)
	err = s.Run(t.Context(), srv.Store(), sim.RunOptions{Clock: clock, OnLogs: srv.Logs().ConsumeLogs,
		OnScrape: func(ctx context.Context, r sim.Scrape) error {
			if err := rp.Advance(ctx, r.At); err != nil {
				return err
			}
			if r.At.Before(next) {
				return nil
			}
			next = r.At.Add(cycleEvery)
			if err := srv.Watcher().Cycle(ctx, r.At); err != nil {
				return err
			}
			return own.Once(ctx)
		}})
	require.NoError(t, err)
	return vigil{url: "http://" + srv.Addr().String(), start: rc.Start, end: clock.Now()}
}

// hasData runs a panel's query as Grafana would over the run's last 30
// minutes (range queries at a 30 s step, instant ones at the end) and
// reports whether any series came back with a sample.
func (v vigil) hasData(t *testing.T, q query, vars map[string]string) bool {
	t.Helper()
	expr := substitute(t, q.expr, vars)
	form := url.Values{"query": {expr}}
	path := "/api/v1/query_range"
	if q.instant {
		path = "/api/v1/query"
		form.Set("time", unix(v.end))
	} else {
		form.Set("start", unix(v.end.Add(-30*time.Minute)))
		form.Set("end", unix(v.end))
		form.Set("step", "30")
	}
	resp, err := http.PostForm(v.url+path, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Value  []any   `json:"value"`
				Values [][]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "success", out.Status, "%s: %s\n%s", q, out.Error, expr)
	for _, r := range out.Data.Result {
		if len(r.Value) > 0 || len(r.Values) > 0 {
			return true
		}
	}
	return false
}

// instant runs a query at the run's end and returns its result, one
// series per line: labels and value.
func (v vigil) instant(t *testing.T, q query, vars map[string]string) string {
	t.Helper()
	resp, err := http.PostForm(v.url+"/api/v1/query", url.Values{"query": {substitute(t, q.expr, vars)}, "time": {unix(v.end)}})
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result model.Vector `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	var b strings.Builder
	for _, s := range out.Data.Result {
		fmt.Fprintf(&b, "%s %s\n", s.Metric, s.Value)
	}
	return b.String()
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+), (\w+)\)$`)

// labelValues answers a variable's label_values(SELECTOR, LABEL) query as
// Grafana's Prometheus datasource does.
func (v vigil) labelValues(t *testing.T, def string) []string {
	t.Helper()
	m := labelValuesRE.FindStringSubmatch(def)
	require.NotNil(t, m, def)
	u := v.url + "/api/v1/label/" + m[2] + "/values?" + url.Values{"match[]": {substitute(t, m[1], allVars)},
		"start": {unix(v.start)}, "end": {unix(v.end)}}.Encode()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "success", out.Status, def)
	return out.Data
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// faultOnly are the queries that have data only when something fails:
// they must be empty on a healthy run and have data on the demo's (NVLink
// degradation on gpu-node-06 GPU 3, with XID 74). (The sticky XID gauge
// is not among them: a healthy cluster has its benign XIDs too.)
var faultOnly = []string{
	"Vigil / GPUs / XIDs in dcgm-exporter's window / A",
	// Vigil's incident counter has a series once an incident changed.
	"Vigil / Incidents / Incident changes / A",
}

// concrete are the variables set to one value each, as a user picks them:
// the demo's faulty node and vLLM's model.
var concrete = map[string]string{
	"__rate_interval": "2m", "__interval": "30s", "__range": "30m",
	"cluster": ".*", "namespace": ".*", "node": "gpu-node-06", "model": "meta-llama/Llama-3.1-70B-Instruct",
}

// TestPanelsReturnData: every panel's every query, Grafana's variables
// substituted, returns data from a `vigil serve` holding a simulated
// cluster: the demo's run with every variable All and with a node and a
// model picked, and a healthy run in the other label variants (dcgm-exporter's
// hostname, vLLM 0.9's names), where only the fault-only queries are
// empty.
func TestPanelsReturnData(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates and serves two 40-minute runs of a 10-node cluster (about 20 s)")
	}
	_, qs := decode(t)
	demo := serveScenario(t, sim.DemoScenario(), labelsNew)
	healthy := serveScenario(t, sim.Scenario{Name: sim.Healthy}, labelsOld)
	require.False(t, demo.hasData(t, query{expr: `nothing_is_called_this{cluster=~"$cluster"}`}, allVars), "the check can fail")
	var empty []string
	for _, q := range qs {
		for _, c := range []struct {
			name string
			v    vigil
			vars map[string]string
			want bool
		}{
			{"demo, every variable All", demo, allVars, true},
			{"demo, node gpu-node-06 and vLLM's model", demo, concrete, true},
			{"healthy, hostname and vLLM 0.9", healthy, allVars, !slices.Contains(faultOnly, q.String())},
		} {
			if got := c.v.hasData(t, q, c.vars); got != c.want {
				empty = append(empty, fmt.Sprintf("%s: data %t on %s", q, got, c.name))
			}
		}
	}
	// The variables' label_values queries list values, as Grafana asks for
	// them (/api/v1/label/NAME/values?match[]=SELECTOR); the cluster's
	// does not: the simulated cluster is alone, its series carry no
	// cluster label, and the variable stays All.
	for name, def := range dashboards.VariableQueries {
		values := demo.labelValues(t, def)
		if name == "cluster" {
			require.Empty(t, values, def)
			continue
		}
		require.NotEmpty(t, values, def)
	}
	require.Contains(t, demo.labelValues(t, dashboards.VariableQueries["model"]), "meta-llama/Llama-3.1-70B-Instruct")
	require.Contains(t, demo.labelValues(t, dashboards.VariableQueries["node"]), "gpu-node-06")
	xid := qs[slices.IndexFunc(qs, func(q query) bool { return q.String() == "Vigil / GPUs / XID errors / A" })]
	require.Contains(t, demo.instant(t, xid, allVars), `{Hostname="gpu-node-06", gpu="3"} 74`, "the demo's XID 74 on its faulty GPU")
	require.Empty(t, empty, "panels whose data is not as it should be:\n%s", strings.Join(empty, "\n"))
	t.Logf("%d queries of %d panels returned data (%d of them only on the faulty run)", len(qs), countPanels(qs), len(faultOnly))
}

func countPanels(qs []query) int {
	seen := map[string]bool{}
	for _, q := range qs {
		seen[q.dashboard+"/"+q.panel] = true
	}
	return len(seen)
}
