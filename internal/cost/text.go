package cost

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints the report as a table sorted by idle cost, its totals,
// the cluster comparison and the per-million-token costs.
func WriteText(w io.Writer, r *Report, by string) error {
	cur := r.Currency
	fmt.Fprintf(w, "GPU cost %s → %s (%s, step %s), in %s\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339),
		r.To.Sub(r.From), r.Step, cur)
	fmt.Fprintf(w, "  GPU-hours: %.2f available, %.2f allocated (%s), %.2f used (%s of allocated)\n",
		r.GPUHours.Available, r.GPUHours.Allocated, pct(r.GPUHours.Allocated, r.GPUHours.Available),
		r.GPUHours.Used, pct(r.GPUHours.Used, r.GPUHours.Allocated))
	fmt.Fprintf(w, "  cost: %s total, %s allocated, %s idle (allocated but inactive), %s unallocated\n\n",
		money(r.Cost.Total), money(r.Cost.Allocated), money(r.Cost.Idle), money(r.Cost.Unallocated))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tGPUS\tGPU-H ALLOC\tGPU-H USED\tEFFIC.\tCOST\tIDLE COST\tPER 1M PROMPT\tPER 1M GEN.\n", strings.ToUpper(by))
	var sum Row
	for _, row := range r.By {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\n", entityString(row.Entity), row.GPUs,
			row.GPUHoursAllocated, row.GPUHoursUsed, pct(row.GPUHoursUsed, row.GPUHoursAllocated),
			money(row.Cost), money(row.IdleCost), perM(row.CostPer1MTokens, false), perM(row.CostPer1MTokens, true))
		sum.GPUHoursAllocated += row.GPUHoursAllocated
		sum.GPUHoursUsed += row.GPUHoursUsed
		sum.Cost += row.Cost
		sum.IdleCost += row.IdleCost
	}
	fmt.Fprintf(tw, "TOTAL\t\t%.2f\t%.2f\t%s\t%s\t%s\n", sum.GPUHoursAllocated, sum.GPUHoursUsed,
		pct(sum.GPUHoursUsed, sum.GPUHoursAllocated), money(sum.Cost), money(sum.IdleCost))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  per 1M tokens: allocation basis (usage basis); each kind of token carries the whole cost")
	if len(r.Clusters) > 1 {
		fmt.Fprintln(w, "\nclusters:")
		for _, c := range r.Clusters {
			fmt.Fprintf(w, "  %-20s %s used, %s allocated of %.2f GPU-hours; %s total, %s idle, %s unallocated\n", c.Cluster,
				pct(c.GPUHours.Used, c.GPUHours.Available), pct(c.GPUHours.Allocated, c.GPUHours.Available),
				c.GPUHours.Available, money(c.Cost.Total), money(c.Cost.Idle), money(c.Cost.Unallocated))
		}
	}
	return nil
}

func pct(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*a/b)
}

func money(v float64) string { return fmt.Sprintf("%.2f", v) }

func perM(p *PerMillion, gen bool) string {
	if p == nil {
		return "-"
	}
	a, u := p.Allocation.Prompt, p.Usage.Prompt
	if gen {
		a, u = p.Allocation.Generation, p.Usage.Generation
	}
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f)", *a, *u)
}
