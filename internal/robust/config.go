package robust

import (
	"errors"
	"fmt"
	"time"
)

// Config sets up one run. Zero fields are drawn from the seed.
type Config struct {
	// Seed makes the run reproducible: the same Config and scenario give
	// the same bytes. The cluster, its workloads and its healthy
	// variation come from the seed alone, so a fault's run and the
	// healthy run of the same seed are twins up to the fault.
	Seed uint64
	// Start is the first instant (default: drawn, a day of 2026 at any
	// hour, so that the inference load sits anywhere on its daily curve).
	Start time.Time
	// Duration is how long the run lasts (default: drawn, 30 to 60
	// minutes in 5-minute steps).
	Duration time.Duration
	// Nodes is the number of GPU nodes (default: drawn, 4 to 16, small
	// clusters more often).
	Nodes int
}

// Limits of Config.
const (
	MinDuration = 25 * time.Minute
	MaxDuration = 6 * time.Hour
	MinNodes    = 3
	MaxNodes    = 32
)

// resolve fills the zero fields from the seed.
func (c Config) resolve() Config {
	r := newRNG(c.Seed, "config")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).
		Add(time.Duration(r.intn(360)) * 24 * time.Hour).
		Add(time.Duration(r.intn(24*60)) * time.Minute)
	dur := time.Duration(30+5*r.between(0, 6)) * time.Minute
	// Small clusters more often: each run must stay cheap, and the spread
	// of sizes still reaches 16.
	nodes := 4 + int(12*r.float()*r.float())
	if c.Start.IsZero() {
		c.Start = start
	}
	if c.Duration == 0 {
		c.Duration = dur
	}
	if c.Nodes == 0 {
		c.Nodes = nodes
	}
	c.Start = c.Start.UTC().Truncate(time.Second)
	return c
}

// Validate says what is wrong with a resolved Config.
func (c Config) Validate() error {
	var errs []error
	if c.Duration < MinDuration || c.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration %s is not within [%s, %s]", c.Duration, MinDuration, MaxDuration))
	}
	if c.Nodes < MinNodes || c.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("nodes %d is not within [%d, %d]", c.Nodes, MinNodes, MaxNodes))
	}
	return errors.Join(errs...)
}
