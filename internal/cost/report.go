package cost

import (
	"slices"
	"time"
)

// Report is what the GPUs cost over a range (DESIGN.md, `vigil cost`).
type Report struct {
	// Currency is the prices' currency.
	Currency string `json:"currency"`
	// From and To bound the range, (From, To].
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Step is the resolution: every step a GPU reports counts once.
	Step time.Duration `json:"-"`
	// GPUHours are the GPU-hours available, allocated and used.
	GPUHours Hours `json:"gpu_hours"`
	// Cost is their cost.
	Cost Costs `json:"cost"`
	// By are the rows of the grouping asked for, the largest idle cost
	// first.
	By []Row `json:"by"`
	// Clusters compare the clusters, when the data carries a cluster
	// label, by name.
	Clusters []Cluster `json:"clusters,omitempty"`
	// Warnings say what is missing and what a figure then means.
	Warnings []string `json:"warnings"`
	// Nodes are every node's figures, whatever the grouping, by name.
	Nodes []NodeCost `json:"-"`
}

// NodeCost is one node's figures.
type NodeCost struct {
	Cluster, Node string
	// GPUs are the GPUs that reported.
	GPUs int
	// Hourly is the mean price of one of its GPUs for one hour.
	Hourly   float64
	GPUHours Hours
	Cost     Costs
}

// Hours are GPU-hours.
type Hours struct {
	// Available are the hours of the GPUs that reported.
	Available float64 `json:"available"`
	// Allocated are the hours held by a pod (a MIG instance's share of
	// its GPU; a time-sliced GPU split among its pods).
	Allocated float64 `json:"allocated"`
	// Used are the allocated hours times the activity
	// (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL).
	Used float64 `json:"used"`
}

// Costs are what the hours cost.
type Costs struct {
	// Total is the available GPU-hours at their prices.
	Total float64 `json:"total"`
	// Allocated is the allocated GPU-hours at their prices.
	Allocated float64 `json:"allocated"`
	// Idle is the allocated cost not used: allocated × (1 − activity).
	Idle float64 `json:"idle"`
	// Unallocated is Total − Allocated: GPUs no pod held.
	Unallocated float64 `json:"unallocated"`
}

// Row is one entity of the grouping.
type Row struct {
	// Entity names it with canonical keys (node; namespace; tenant;
	// namespace and workload; namespace and model), and cluster when the
	// data has several.
	Entity map[string]string `json:"entity"`
	// GPUs are the GPUs it held (a MIG instance counts its share; for a
	// node, the GPUs it has).
	GPUs float64 `json:"gpus"`
	// GPUHoursAllocated and GPUHoursUsed are its allocated and used hours.
	GPUHoursAllocated float64 `json:"gpu_hours_allocated"`
	GPUHoursUsed      float64 `json:"gpu_hours_used"`
	// Efficiency is used over allocated (0 with nothing allocated).
	Efficiency float64 `json:"efficiency"`
	// Cost is its allocated cost; a node's is its total, unallocated GPUs
	// included.
	Cost float64 `json:"cost"`
	// IdleCost is the part of its allocated cost not used.
	IdleCost float64 `json:"idle_cost"`
	// Tokens are the tokens its pods' inference servers counted.
	Tokens Tokens `json:"tokens"`
	// CostPer1MTokens is what a million tokens cost, nil without tokens.
	CostPer1MTokens *PerMillion `json:"cost_per_1m_tokens"`

	usedCost  float64
	allocCost float64
}

// Tokens are prompt (prefill, input) and generation (decode, output)
// tokens.
type Tokens struct {
	Prompt     float64 `json:"prompt"`
	Generation float64 `json:"generation"`
}

// PerMillion is the cost of a million tokens on each basis: allocation
// (the GPUs held) and usage (the GPUs' active share). Each kind of token
// carries the whole cost — what a million prompt tokens cost if generation
// were free, and the other way round — so the two do not add up.
type PerMillion struct {
	Allocation TokenPrice `json:"allocation"`
	Usage      TokenPrice `json:"usage"`
}

// TokenPrice is the cost of a million tokens of each kind; nil where no
// token of the kind was counted.
type TokenPrice struct {
	Prompt     *float64 `json:"prompt"`
	Generation *float64 `json:"generation"`
}

// Cluster is one cluster's figures, for the comparison.
type Cluster struct {
	Cluster  string `json:"cluster"`
	GPUHours Hours  `json:"gpu_hours"`
	Cost     Costs  `json:"cost"`
	// Allocation and Utilization are allocated and used hours over the
	// available ones.
	Allocation  float64 `json:"allocation"`
	Utilization float64 `json:"utilization"`
}

// perMillion is cost per million tokens, nil without tokens.
func perMillion(cost, tokens float64) *float64 {
	if tokens <= 0 {
		return nil
	}
	v := cost / tokens * 1e6
	return &v
}

// finish computes a row's derived figures.
func (r *Row) finish() {
	if r.GPUHoursAllocated > 0 {
		r.Efficiency = r.GPUHoursUsed / r.GPUHoursAllocated
	}
	if r.Tokens.Prompt > 0 || r.Tokens.Generation > 0 {
		r.CostPer1MTokens = &PerMillion{
			Allocation: TokenPrice{Prompt: perMillion(r.allocCost, r.Tokens.Prompt), Generation: perMillion(r.allocCost, r.Tokens.Generation)},
			Usage:      TokenPrice{Prompt: perMillion(r.usedCost, r.Tokens.Prompt), Generation: perMillion(r.usedCost, r.Tokens.Generation)},
		}
	}
}

// sortRows orders rows by idle cost, largest first, then by cost, then by
// entity.
func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch {
		case a.IdleCost != b.IdleCost:
			return cmpDesc(a.IdleCost, b.IdleCost)
		case a.Cost != b.Cost:
			return cmpDesc(a.Cost, b.Cost)
		}
		return cmpString(entityString(a.Entity), entityString(b.Entity))
	})
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// entityKeyOrder is the order keys are printed in.
var entityKeyOrder = []string{"cluster", "node", "tenant", "namespace", "workload", "pod", "model"}

// entityString prints an entity as ns/name or key=value pairs.
func entityString(e map[string]string) string {
	switch {
	case e["workload"] != "":
		return e["namespace"] + "/" + e["workload"]
	case e["model"] != "":
		return e["namespace"] + "/" + e["model"]
	case e["pod"] != "":
		return e["namespace"] + "/" + e["pod"]
	}
	s := ""
	for _, k := range entityKeyOrder {
		if v := e[k]; v != "" {
			if s != "" {
				s += " "
			}
			s += v
		}
	}
	return s
}
