package cost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
	"github.com/vigil-obs/vigil/internal/topology"
)

// Groupings of Options.By.
const (
	ByNode      = "node"
	ByNamespace = "namespace"
	ByTenant    = "tenant"
	ByWorkload  = "workload"
	ByModel     = "model"
	// ByPod groups by pod, each row naming its node, namespace, pod,
	// workload, tenant and model: what `vigil serve` records. `vigil cost`
	// does not offer it.
	ByPod = "pod"
)

// Groupings lists the values of Options.By.
func Groupings() []string { return []string{ByNode, ByNamespace, ByTenant, ByWorkload, ByModel} }

// The activity metrics, preferred first (catalog signals gpu.gr_engine_active
// and gpu.utilization).
const (
	metricGR   = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	metricUtil = "DCGM_FI_DEV_GPU_UTIL"
	// metricRequests is kube-state-metrics' requests, read with
	// resource="nvidia_com_gpu".
	metricRequests = "kube_pod_container_resource_requests"
	// metricNodeLabels are the node labels node_overrides match.
	metricNodeLabels = "kube_node_labels"
	// MetricOpenCostGPUPrice is OpenCost's hourly price of one GPU on a
	// node.
	MetricOpenCostGPUPrice = "node_gpu_hourly_cost"
)

// topologyWindow is how far before the range's end the topology (pods'
// workloads, tenants, models) is read.
const topologyWindow = time.Hour

// A read covers about chunkSamples samples of the activity series, in
// minChunkSteps to maxChunkSteps steps: it bounds the memory of a long
// range (and the size of a remote store's answers).
const (
	chunkSamples  = 1 << 19
	minChunkSteps = 60
	maxChunkSteps = 2880
)

// chunkSteps is how many steps the next read covers: minChunkSteps until
// the series are known, then chunkSamples' worth of them.
func (c *computation) chunkSteps() int {
	if len(c.series) == 0 {
		return minChunkSteps
	}
	return min(max(chunkSamples/len(c.series), minChunkSteps), maxChunkSteps)
}

// ErrNoGPUs means no GPU reported in the range.
var ErrNoGPUs = errors.New("no GPU reported in the range")

// Options say what Compute computes.
type Options struct {
	// From and To bound the range (From, To]; From moves back to a whole
	// number of steps before To.
	From, To time.Time
	// Step is the resolution; 0 is the data's own interval.
	Step time.Duration
	// Prices price the GPUs; nil reads OpenCost's node_gpu_hourly_cost in
	// Currency.
	Prices *Prices
	// Currency is the currency of OpenCost's prices (with Prices nil).
	Currency string
	// By is the grouping of Report.By (ByNamespace when empty).
	By string
	// TenantLabel is a pod or namespace label naming the tenant (default:
	// the namespace).
	TenantLabel string
	// Catalog supplies the label aliases; nil is catalog.Default().
	Catalog *catalog.Catalog
	// Logger gets debug lines; nil discards.
	Logger *slog.Logger
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	switch {
	case !o.To.After(o.From):
		return fmt.Errorf("the range's end (%s) must be after its start (%s)", o.To.UTC().Format(time.RFC3339), o.From.UTC().Format(time.RFC3339))
	case o.Step < 0:
		return fmt.Errorf("step must not be negative, got %s", o.Step)
	case o.By != "" && o.By != ByPod && !slices.Contains(Groupings(), o.By):
		return fmt.Errorf("by must be one of %s, got %q", strings.Join(Groupings(), ", "), o.By)
	case o.Prices == nil && o.Currency == "":
		return fmt.Errorf("%w: give a prices file, or the currency of OpenCost's %s", ErrNoPrices, MetricOpenCostGPUPrice)
	}
	if o.Prices != nil {
		return o.Prices.Validate()
	}
	return nil
}

// Compute computes what the GPUs cost over (From, To].
func Compute(ctx context.Context, src Source, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.By == "" {
		opts.By = ByNamespace
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &computation{opts: opts, src: src, warn: &warnings{},
		series: map[uint64]*seriesInfo{}, gpus: map[gpuKey]*gpuAcc{}, nodes: map[nodeKey]*nodeAcc{},
		holders: map[holderKey]*holderAcc{}, hostNode: map[string]string{}, pods: map[podKey]*topology.Pod{},
		podNode: map[podKey]string{}, nodeLabels: map[string]map[string]string{}, openCost: map[string]float64{},
		defaulted: map[string]int{}}
	if err := c.run(ctx); err != nil {
		return nil, err
	}
	return c.report(), nil
}

// The keys of what is accounted.
type (
	nodeKey  struct{ cluster, node string }
	gpuKey   struct{ cluster, node, gpu string }
	podKey   struct{ ns, pod string }
	sliceKey struct {
		gpu      gpuKey
		instance string
	}
	holderKey struct {
		cluster, node string
		pod           podKey
	}
)

// seriesInfo is what one activity series says, resolved once.
type seriesInfo struct {
	gpu      *gpuAcc
	pod      podKey
	instance string
	share    float64 // a MIG instance's share of its GPU
	util     bool    // DCGM_FI_DEV_GPU_UTIL, not GR_ENGINE_ACTIVE
}

// unit is one activity series' values in the current chunk, one per step
// (NaN where it did not report).
type unit struct {
	s    *seriesInfo
	vals []float64
}

type gpuAcc struct {
	key       gpuKey
	node      *nodeAcc
	model     string
	price     float64
	units     []unit // this chunk's
	hasGR     bool   // this chunk
	everGR    bool
	everUtil  bool
	available float64
}

// nodeAcc is one node's account.
type nodeAcc struct {
	key        nodeKey
	gpus       int
	attributed bool // this chunk: a series of its GPUs names a pod
	everAttr   bool
	ksmUsed    bool // allocation came from kube-state-metrics' requests
	// The figures, in hours and money.
	available, allocated, used float64
	total, allocCost, usedCost float64
	// This chunk's GPUs that no pod label names, per step: how many,
	// their summed activity and their summed price.
	winN, winAct, winPrice []float64
}

// holderAcc is one pod's account on one node.
type holderAcc struct {
	key                 holderKey
	allocated, used     float64
	allocCost, usedCost float64
	// gpus are the shares of their GPUs the slices it held are.
	gpus map[sliceKey]float64
	// requested are the GPUs it requested, where allocation comes from
	// requests (fromRequests).
	requested    float64
	fromRequests bool
}

// computation is the state of one Compute.
type computation struct {
	opts Options
	src  Source
	warn *warnings

	step          time.Duration
	from, to      int64 // ms
	steps         int
	hasGR, hasReq bool

	series  map[uint64]*seriesInfo
	gpus    map[gpuKey]*gpuAcc
	gpuList []*gpuAcc
	nodes   map[nodeKey]*nodeAcc
	holders map[holderKey]*holderAcc

	topo       *topology.Topology
	hostNode   map[string]string // a dcgm-exporter host label's value → node
	pods       map[podKey]*topology.Pod
	podNode    map[podKey]string
	nodeLabels map[string]map[string]string
	openCost   map[string]float64
	defaulted  map[string]int // GPU model → GPUs priced at the default
	noPrice    map[string][]string
	tokens     []tokenCount
	podModel   map[podKey]string
	clusters   bool
}

func (c *computation) run(ctx context.Context) error {
	to := c.opts.To.UnixMilli()
	names, err := metricNames(ctx, c.src, c.opts.From.UnixMilli(), to)
	if err != nil {
		return err
	}
	c.hasGR, c.hasReq = names.Has(metricGR), names.Has(metricRequests)
	if !c.hasGR && !names.Has(metricUtil) {
		return fmt.Errorf("%w: no %s or %s between %s and %s", ErrNoGPUs, metricGR, metricUtil,
			c.opts.From.UTC().Format(time.RFC3339), c.opts.To.UTC().Format(time.RFC3339))
	}
	if err := c.setStep(ctx, names); err != nil {
		return err
	}
	if err := c.readContext(ctx, names); err != nil {
		return err
	}
	if c.opts.Prices == nil && len(c.openCost) == 0 {
		return fmt.Errorf("%w: no prices file and no OpenCost %s series in the range: give --prices FILE (or vigil.yaml's cost section)", ErrNoPrices, MetricOpenCostGPUPrice)
	}
	for first := 0; first < c.steps; {
		last := min(first+c.chunkSteps(), c.steps)
		if err := c.chunk(ctx, first, last); err != nil {
			return err
		}
		first = last
	}
	if len(c.gpus) == 0 {
		return fmt.Errorf("%w (%s to %s)", ErrNoGPUs, c.opts.From.UTC().Format(time.RFC3339), c.opts.To.UTC().Format(time.RFC3339))
	}
	if len(c.noPrice) > 0 {
		return c.noPriceError()
	}
	return c.readTokens(ctx, names)
}

// setStep picks the step (the activity series' interval unless given) and
// aligns the range to it.
func (c *computation) setStep(ctx context.Context, names map[string]struct{}) error {
	// The step is the GPU series' own interval, not the store's: other
	// exporters are often scraped more often than dcgm-exporter samples.
	step := c.opts.Step
	if step <= 0 {
		metric := metricGR
		if !c.hasGR {
			metric = metricUtil
		}
		est, err := estimateInterval(ctx, c.src, metric, c.opts.To.UnixMilli())
		if err != nil {
			return err
		}
		step = est
	}
	if step <= 0 {
		step = 30 * time.Second
	}
	step = step.Round(time.Second)
	c.step = max(step, time.Second)
	c.to = c.opts.To.UnixMilli()
	c.steps = int(c.opts.To.Sub(c.opts.From) / c.step)
	if c.steps == 0 {
		return fmt.Errorf("%w: the range (%s) is shorter than one step of the data (%s)", ErrNoGPUs, c.opts.To.Sub(c.opts.From), c.step)
	}
	c.from = c.to - int64(c.steps)*c.step.Milliseconds()
	return nil
}

// readContext reads what does not change step by step: the topology (pods'
// workloads, tenants, models; nodes' names), the node labels and
// OpenCost's prices, the latest of each in the range.
func (c *computation) readContext(ctx context.Context, names map[string]struct{}) error {
	span := time.Duration(c.to-c.from) * time.Millisecond
	at := time.UnixMilli(c.to)
	topts := topology.DefaultOptions()
	// The topology reads every dcgm-exporter health series over its
	// window: over a month of a remote store that would be most of the
	// store. Pods that ended more than topologyWindow before the end keep
	// their namespace as tenant and their name as workload.
	tw := min(span, topologyWindow)
	topts.Window, topts.History, topts.TenantLabel = tw, tw, c.opts.TenantLabel
	var topo *topology.Topology
	if c.needTopology() {
		var err error
		topo, err = topology.Build(ctx, c.src, c.opts.Catalog, at, topts)
		if err != nil && !errors.Is(err, topology.ErrNoData) {
			return fmt.Errorf("topology: %w", err)
		}
	}
	if topo != nil {
		c.topo = topo
		for _, n := range topo.Nodes {
			for _, id := range n.Identities {
				if n.Name != "" && id.Source == "dcgm-exporter" {
					c.hostNode[id.Label+"="+id.Value] = n.Name
				}
			}
			for _, p := range n.Pods {
				c.pods[podKey{p.Namespace, p.Pod}] = p
				c.podNode[podKey{p.Namespace, p.Pod}] = n.Name
			}
		}
	}
	if _, ok := names[metricNodeLabels]; ok && c.opts.Prices != nil {
		if err := c.readNodeLabels(ctx); err != nil {
			return err
		}
	}
	if _, ok := names[MetricOpenCostGPUPrice]; ok && c.opts.Prices == nil {
		return c.readOpenCost(ctx, at, span)
	}
	return nil
}

// needTopology reports whether the grouping needs the topology: a pod's
// workload, served model or tenant label. By node, by namespace and by a
// tenant that is the namespace do without it (it reads every
// dcgm-exporter series over its window: at 8,000 GPUs, more memory than
// the whole computation), and then a node is named by dcgm-exporter's
// Hostname as the catalog resolves it.
func (c *computation) needTopology() bool {
	switch c.opts.By {
	case ByNode, ByNamespace:
		return false
	case ByTenant:
		return c.opts.TenantLabel != ""
	}
	return true
}

// readNodeLabels finds, for each label pair node_overrides match, the
// nodes that had it in the range: from the label index (the series API's
// label values), not from the samples, which over a month of a remote
// store would be every kube_node_labels sample.
func (c *computation) readNodeLabels(ctx context.Context) error {
	q, err := c.src.Querier(c.from+1, c.to)
	if err != nil {
		return fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	done := map[[2]string]bool{}
	for _, o := range c.opts.Prices.NodeOverrides {
		for k, v := range o.Match {
			name := NodeLabelName(k)
			if name == "node" || name == "cluster" || done[[2]string{name, v}] {
				continue
			}
			done[[2]string{name, v}] = true
			ms := []*labels.Matcher{
				labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, metricNodeLabels),
				labels.MustNewMatcher(labels.MatchEqual, name, v),
			}
			for _, nodeLabel := range []string{"node", "exported_node"} {
				nodes, _, err := q.LabelValues(ctx, nodeLabel, nil, ms...)
				if err != nil {
					return fmt.Errorf("list the nodes with %s=%q: %w", k, v, err)
				}
				for _, n := range nodes {
					if c.nodeLabels[n] == nil {
						c.nodeLabels[n] = map[string]string{"node": n}
					}
					c.nodeLabels[n][name] = v
				}
			}
		}
	}
	return nil
}

// readOpenCost reads OpenCost's node_gpu_hourly_cost: its latest value in
// the range's last hour, and, for the nodes that had one only earlier, in
// the whole range.
func (c *computation) readOpenCost(ctx context.Context, at time.Time, span time.Duration) error {
	add := func(lset labels.Labels, v float64) {
		if node := lset.Get("node"); node != "" && v >= 0 && !math.IsInf(v, 0) {
			c.openCost[node] = v
		}
	}
	if err := instant(ctx, c.src, MetricOpenCostGPUPrice, at, min(span, topologyWindow), add); err != nil {
		return err
	}
	if span <= topologyWindow {
		return nil
	}
	q, err := c.src.Querier(c.from+1, c.to)
	if err != nil {
		return fmt.Errorf("open querier: %w", err)
	}
	nodes, _, err := q.LabelValues(ctx, "node", nil, labels.MustNewMatcher(labels.MatchEqual, model.MetricNameLabel, MetricOpenCostGPUPrice))
	q.Close()
	if err != nil {
		return fmt.Errorf("list the nodes of %s: %w", MetricOpenCostGPUPrice, err)
	}
	var older []string
	for _, n := range nodes {
		if _, ok := c.openCost[n]; !ok {
			older = append(older, regexp.QuoteMeta(n))
		}
	}
	if len(older) == 0 {
		return nil
	}
	qs := fmt.Sprintf(`%s{node=~%s}`, MetricOpenCostGPUPrice, strconv.Quote(strings.Join(older, "|")))
	return instant(ctx, c.src, qs, at, span, add)
}

// resolve maps an activity series to its GPU (creating it), pod and MIG
// instance.
func (c *computation) resolve(lset labels.Labels, util bool) *seriesInfo {
	res := c.opts.Catalog.Resolve(catalog.DCGMExporter, lset)
	index := res.Entity[catalog.KeyGPU]
	if index == "" {
		index = res.Entity[catalog.KeyUUID]
	}
	if index == "" {
		c.warn.add("dcgm-exporter series without a gpu or UUID label are left out", "")
		return nil
	}
	node := ""
	for _, l := range []string{"Hostname", "hostname", "instance"} {
		if v := lset.Get(l); v != "" {
			node = c.hostNode[l+"="+v]
			if node != "" {
				break
			}
		}
	}
	node = firstOf(node, res.Entity[catalog.KeyNode], res.Attributes[catalog.AttrHostname], lset.Get("instance"))
	cluster := lset.Get("cluster")
	if cluster != "" {
		c.clusters = true
	}
	gk := gpuKey{cluster, node, index}
	g := c.gpus[gk]
	if g == nil {
		nk := nodeKey{cluster, node}
		n := c.nodes[nk]
		if n == nil {
			n = &nodeAcc{key: nk}
			c.nodes[nk] = n
		}
		n.gpus++
		g = &gpuAcc{key: gk, node: n, model: res.Attributes[catalog.AttrGPUModel]}
		g.price = c.price(g)
		c.gpus[gk] = g
		c.gpuList = append(c.gpuList, g)
	}
	s := &seriesInfo{gpu: g, util: util, instance: res.Entity[catalog.KeyGPUInstance]}
	if ns, pod := res.Entity[catalog.KeyNamespace], res.Entity[catalog.KeyPod]; ns != "" && pod != "" {
		s.pod = podKey{ns, pod}
	}
	if s.instance != "" {
		profile := res.Attributes[catalog.AttrMIGProfile]
		share, ok := MIGShare(profile, g.model)
		if !ok {
			share = 1.0 / float64(migSlices(g.model))
			c.warn.add(fmt.Sprintf("MIG profile %q is not one Vigil reads (Ng.MMgb): its instances are priced as one compute slice of %d", profile, migSlices(g.model)), node)
		}
		s.share = share
	}
	return s
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// price returns a GPU's hourly price, recording what lacks one.
func (c *computation) price(g *gpuAcc) float64 {
	node := g.key.node
	if c.opts.Prices == nil {
		if v, ok := c.openCost[node]; ok {
			return v
		}
		c.missing("OpenCost's "+MetricOpenCostGPUPrice+" has no series for the node", node)
		return 0
	}
	nl := c.nodeLabels[node]
	if nl == nil {
		nl = map[string]string{"node": node}
	}
	if g.key.cluster != "" {
		nl = cloneWith(nl, "cluster", g.key.cluster)
	}
	v, from, ok := c.opts.Prices.Hourly(g.model, nl)
	switch {
	case !ok:
		c.missing(fmt.Sprintf("no price for GPU model %q and the prices have no default", g.model), node)
	case from == DefaultKey:
		c.defaulted[g.model]++
	}
	return v
}

func cloneWith(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

func (c *computation) missing(why, node string) {
	if c.noPrice == nil {
		c.noPrice = map[string][]string{}
	}
	if !slices.Contains(c.noPrice[why], node) {
		c.noPrice[why] = append(c.noPrice[why], node)
	}
}

func (c *computation) noPriceError() error {
	var parts []string
	for _, why := range sortedKeys(c.noPrice) {
		parts = append(parts, fmt.Sprintf("%s (%s)", why, listSome(c.noPrice[why], 5)))
	}
	return fmt.Errorf("%w: %s", ErrNoPrices, strings.Join(parts, "; "))
}

// listSome joins the first n names and says how many more.
func listSome(names []string, n int) string {
	slices.Sort(names)
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
