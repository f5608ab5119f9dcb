package eval

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/vigil-obs/vigil/internal/sim"
)

// LogsConsumer takes a batch of log records.
type LogsConsumer interface {
	ConsumeLogs(ctx context.Context, ld plog.Logs) error
}

// runOptions are the options of a case's run: the clock and, for the
// cluster simulator (every case but the microservice ones, whose
// generator has no cluster to log, and the robust ones, whose generator
// writes metrics only), its logs into logs (the pipeline's, where they
// become log-derived signals).
func runOptions(gen generator, logs LogsConsumer, clock *sim.Clock) sim.RunOptions {
	opts := sim.RunOptions{Clock: clock}
	switch gen.(type) {
	case microGenerator, robustGenerator:
		return opts
	}
	opts.OnLogs = logs.ConsumeLogs
	return opts
}
