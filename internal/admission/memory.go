package admission

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// GoMemLimitRatio is the share of the memory budget given to the Go heap
// as GOMEMLIMIT; the rest is for what the Go runtime does not count (the
// store's memory-mapped chunks, stacks, the runtime's own).
const GoMemLimitRatio = 0.9

// MemoryBudget is the memory the process may use, and where that figure
// comes from.
type MemoryBudget struct {
	// Bytes is the budget; 0 means none is known.
	Bytes int64
	// Source is "config" (memory.budget), "cgroup" (the container's
	// memory limit) or "" (none).
	Source string
	// GoMemLimit is the GOMEMLIMIT in force after Apply; 0 when none.
	GoMemLimit int64
	// GoMemLimitSource is "budget" or "env" (GOMEMLIMIT was set).
	GoMemLimitSource string
}

// ResolveMemory returns the configured budget when positive, else the
// cgroup's memory limit when one is set (cgroup v1 or v2, through
// automemlimit, as Prometheus's --auto-gomemlimit reads it).
func ResolveMemory(configured int64) MemoryBudget {
	if configured > 0 {
		return MemoryBudget{Bytes: configured, Source: "config"}
	}
	if n, err := memlimit.FromCgroup(); err == nil && n > 0 && n < 1<<62 {
		return MemoryBudget{Bytes: int64(n), Source: "cgroup"}
	}
	return MemoryBudget{}
}

// Apply sets GOMEMLIMIT to GoMemLimitRatio of the budget, unless the
// GOMEMLIMIT environment variable is set, which wins. It changes nothing
// when there is no budget.
func (m *MemoryBudget) Apply() error {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		m.GoMemLimit, m.GoMemLimitSource = debug.SetMemoryLimit(-1), "env"
		return nil
	}
	if m.Bytes <= 0 {
		return nil
	}
	n, err := memlimit.Set(memlimit.WithProvider(memlimit.Limit(uint64(m.Bytes))), memlimit.WithRatio(GoMemLimitRatio))
	if err != nil && !errors.Is(err, memlimit.ErrNoLimit) {
		return fmt.Errorf("set GOMEMLIMIT from the memory budget: %w", err)
	}
	m.GoMemLimit, m.GoMemLimitSource = n, "budget"
	return nil
}

// BytesPerSeries is the memory one series of the store's head holds, for
// the series cap of a memory budget: 1,163 bytes of live heap measured for
// a dcgm-exporter series of 12 labels (TestSeriesMemory in internal/store
// re-measures it), rounded up to leave the garbage collector room.
const BytesPerSeries = 1536

// SeriesFor is the most series a memory budget of budget bytes holds in
// the store's head: a quarter of it (half is the in-flight bytes' of
// ingest, the last quarter the queries', the chunks' and the trace
// store's) over BytesPerSeries.
func SeriesFor(budget int64) uint64 {
	if budget <= 0 {
		return 0
	}
	return uint64(budget / 4 / BytesPerSeries)
}
