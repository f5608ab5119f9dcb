package eval

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/logsignals"
	"github.com/vigil-obs/vigil/internal/sim"
)

// NewLogSignals returns the log-derived signals of `vigil serve`
// (internal/logsignals, its default config) writing into app at now's
// time: give its ConsumeLogs to sim.RunOptions.OnLogs, so that a
// simulated run's logs — kernel XIDs, NCCL watchdog timeouts, OOM kills —
// become vigil_log_events_total and vigil_log_xid_total in simulated
// time, as `vigil serve` does with the logs it receives. logger may be
// nil.
func NewLogSignals(app storage.AppendableV2, now func() time.Time, logger *slog.Logger) (*logsignals.Consumer, error) {
	c, err := logsignals.New(logsignals.DefaultConfig(), app, now, logger, nil)
	if err != nil {
		return nil, fmt.Errorf("log signals: %w", err)
	}
	return c, nil
}

// runOptions are the options of a case's run: the clock and, for the
// cluster simulator (every case but the microservice ones, whose
// generator has no cluster to log, and the robust ones, whose generator
// writes metrics only), its logs through log-derived signals into app.
func runOptions(gen generator, app storage.AppendableV2, clock *sim.Clock) (sim.RunOptions, error) {
	opts := sim.RunOptions{Clock: clock}
	switch gen.(type) {
	case microGenerator, robustGenerator:
		return opts, nil
	}
	ls, err := NewLogSignals(app, clock.Now, nil)
	if err != nil {
		return opts, err
	}
	opts.OnLogs = ls.ConsumeLogs
	return opts, nil
}
