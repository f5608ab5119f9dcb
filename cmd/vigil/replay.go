package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/storage"
	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/server"
	"github.com/vigil-obs/vigil/internal/slo"
	"github.com/vigil-obs/vigil/internal/store"
)

type replayFlags struct {
	sourceFlags
	from, to string
	interval time.Duration
	sloFile  string
	asJSON   bool
}

func newReplayCmd(e *env) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay (--input FILE... | --prometheus URL | --server URL) --from TIME --to TIME [--interval 30s] [--slo FILE] [--json]",
		Short: "Run serve's pager over a past range: what would have paged, when, and with what",
		Long: `Replay runs the continuous pipeline of vigil serve (the SLO rules, the symptom
detectors, the diagnosis, the incidents, what would go to Alertmanager) over a past
range, one cycle every --interval of data time, each reading only data at or before its
instant, and prints every page and ticket with the instant it would have been sent, its
symptom and its ranked causes.`,
		Example: `  vigil replay --server http://localhost:9700 --from 2026-11-12T02:00:00Z --to 2026-11-12T03:00:00Z
  vigil replay --input dump.om --from 2026-11-12T02:00:00Z --to 2026-11-12T03:00:00Z --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReplay(cmd.Context(), e, f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.inputs, "input", nil, "a file to read (OpenMetrics, Prometheus text, OTLP JSON or remote-write dumps, as import reads); repeatable")
	fl.StringVar(&f.prometheus, "prometheus", "", "the URL of a Prometheus-compatible API to read instead")
	fl.StringVar(&f.server, "server", "", "the URL of a running vigil serve to read instead")
	registerHTTPConfig(fl, &f.httpConfig)
	fl.StringVar(&f.from, "from", "", "the first instant (RFC 3339 or Unix seconds)")
	fl.StringVar(&f.to, "to", "", "the last instant (RFC 3339 or Unix seconds)")
	fl.DurationVar(&f.interval, "interval", 30*time.Second, "the evaluation interval, in data time")
	fl.StringVar(&f.sloFile, "slo", "", "an SLO spec (docs/slo.md) instead of the built-in presets")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	return cmd
}

// replayPage is one page or ticket as it would have been sent.
type replayPage struct {
	At       time.Time `json:"at"`
	Severity string    `json:"severity"`
	// Revision is 1 for the first page of an incident, more for a new
	// diagnosis of it (re-sent at once with the new causes).
	Revision int              `json:"revision"`
	Symptom  replaySymptom    `json:"symptom"`
	Summary  string           `json:"summary"`
	Causes   []diagnose.Cause `json:"causes"`
}

type replaySymptom struct {
	Kind   string          `json:"kind"`
	Entity diagnose.Entity `json:"entity"`
	Since  time.Time       `json:"since"`
}

// replayReport is replay's JSON answer.
type replayReport struct {
	From     time.Time           `json:"from"`
	To       time.Time           `json:"to"`
	Interval string              `json:"interval"`
	Pages    []replayPage        `json:"pages"`
	Incident []incident.Incident `json:"incidents"`
}

func runReplay(ctx context.Context, e *env, f replayFlags) error {
	if f.count() != 1 {
		return usagef("replay: give exactly one of --input FILE, --prometheus URL or --server URL")
	}
	if f.from == "" || f.to == "" {
		return usagef("replay: give --from and --to")
	}
	from, err := parseTime(f.from)
	if err != nil {
		return usagef("replay: --from: %v", err)
	}
	to, err := parseTime(f.to)
	if err != nil {
		return usagef("replay: --to: %v", err)
	}
	switch {
	case !from.Before(to):
		return usagef("replay: --from (%s) must be before --to (%s)", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	case f.interval <= 0:
		return usagef("replay: --interval must be positive, got %s", f.interval)
	case to.Sub(from)/f.interval > 100_000:
		return usagef("replay: %s at %s is more than 100,000 cycles: take a longer --interval", to.Sub(from), f.interval)
	}
	from, to = from.UTC(), to.UTC()
	logger := e.loggerAtLeast(slog.LevelWarn).With("component", "replay")
	if f.sloFile != "" {
		if _, err := slo.ParseFile(f.sloFile); err != nil {
			return usagef("replay: --slo: %v", err)
		}
	}
	// The clock of the data: each cycle's instant.
	clock := from
	now := func() time.Time { return clock }
	read, closeRead, err := openReplaySource(ctx, e, f.sourceFlags, to, now, logger)
	if err != nil {
		return err
	}
	rep, err := replay(ctx, read, from, to, f, now, func(t time.Time) { clock = t }, logger)
	if cerr := closeRead(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	bw := bufio.NewWriter(e.stdout)
	writeReplay(bw, rep)
	return bw.Flush()
}

// openReplaySource opens what replay reads: the files' temporary store, or
// the API (only read), after asking it for vector(1) so that a wrong URL
// fails at once.
func openReplaySource(ctx context.Context, e *env, f sourceFlags, to time.Time, now func() time.Time, logger *slog.Logger) (storage.Queryable, func() error, error) {
	// Each instant reads only what the previous did not, within the
	// container's memory limit when there is one.
	cacheSamples := server.CacheSamplesFor(admission.ResolveMemory(0).Bytes)
	if len(f.inputs) > 0 {
		src, _, closeSrc, err := openSource(ctx, e, "replay", f, to, logger)
		if err != nil {
			return nil, nil, err
		}
		// The files are imported before the first instant: settled.
		return store.NewSettled(src, cacheSamples), closeSrc, nil
	}
	u, flag := f.prometheus, "--prometheus"
	if f.server != "" {
		u, flag = f.server, "--server"
	}
	rc := store.DefaultRemoteConfig(strings.TrimSuffix(u, "/"))
	hc, err := loadHTTPConfig(f.httpConfig)
	if err != nil {
		return nil, nil, usagef("replay: %v", err)
	}
	rc.HTTPClient = *hc
	// What lies remoteSettle behind the wall clock is settled: a past
	// range is read once (store.RemoteConfig.Wall).
	rc.CacheSamples = cacheSamples
	remote, err := store.NewRemote(rc, now, logger, nil)
	if err != nil {
		return nil, nil, usagef("replay: %s: %v", flag, err)
	}
	if err := remote.Probe(ctx); err != nil {
		return nil, nil, errors.Join(usagef("replay: %s: %v", flag, err), remote.Close())
	}
	return remote, remote.Close, nil
}

// replay runs serve's pipeline, headless, over read, one cycle every
// f.interval from from to to, with setClock moving the data clock to
// each instant. What the rules record goes to the pipeline's own
// temporary store, which takes the past instants of the replay; the
// alerts are kept, not sent.
func replay(ctx context.Context, read storage.Queryable, from, to time.Time, f replayFlags, now func() time.Time, setClock func(time.Time), logger *slog.Logger) (_ *replayReport, err error) {
	dir, err := os.MkdirTemp("", "vigil-replay-")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	cfg := server.SimulatedConfig(dir)
	cfg.Storage.Retention = model.Duration(100 * 365 * 24 * time.Hour)
	cfg.Storage.OutOfOrderWindow = cfg.Storage.Retention
	cfg.Evaluation.Interval = model.Duration(f.interval)
	cfg.Evaluation.SLOFile = f.sloFile
	rep := &replayReport{From: from, To: to, Interval: f.interval.String(), Pages: []replayPage{}}
	srv := server.New(server.Options{
		Config: cfg, Now: now, Wall: now, Logger: logger, Headless: true, Driven: true,
		Read: read, Sender: discard{}, KeepResolved: to.Sub(from) + time.Hour,
		OnChange: func(c incident.Change) {
			if c.What != "opened" && c.What != "rediagnosed" {
				return
			}
			i := c.Incident
			rep.Pages = append(rep.Pages, replayPage{At: now(), Severity: i.Severity, Revision: max(i.Revision, 1), Summary: i.Summary,
				Symptom: replaySymptom{Kind: i.Kind, Entity: i.Entity, Since: i.Since}, Causes: i.Causes})
		},
	})
	setClock(from)
	if err := srv.Start(ctx, server.Host); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer func() { err = errors.Join(err, srv.Shutdown(context.WithoutCancel(ctx))) }()
	w := srv.Watcher()
	sawData := false
	for at := from; !at.After(to); at = at.Add(f.interval) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		setClock(at)
		if err := w.Cycle(ctx, at); err != nil {
			return nil, fmt.Errorf("replay: the cycle at %s: %w", at.Format(time.RFC3339), err)
		}
		if r, _ := w.Last(); r != nil {
			sawData = true
		}
	}
	if !sawData {
		return nil, usagef("replay: no data between %s and %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	rep.Incident = srv.Tracker().List()
	return rep, nil
}

// discard is a sender that sends nothing: replay prints what would go.
type discard struct{}

func (discard) Send(...*notifier.Alert) {}

// writeReplay prints the pages and tickets in the order they would have
// gone out.
func writeReplay(w io.Writer, rep *replayReport) {
	fmt.Fprintf(w, "replay %s to %s every %s: %d page(s) and ticket(s)\n", rep.From.Format(time.RFC3339), rep.To.Format(time.RFC3339), rep.Interval, len(rep.Pages))
	for _, p := range rep.Pages {
		fmt.Fprintf(w, "%s  %-6s %s %s (since %s)\n", p.At.Format(time.RFC3339), strings.ToUpper(p.Severity), p.Symptom.Kind, entityText(p.Symptom.Entity), p.Symptom.Since.Format(time.RFC3339))
		fmt.Fprintf(w, "    %s\n", p.Summary)
		for i, c := range p.Causes {
			if i == 3 {
				break
			}
			fmt.Fprintf(w, "    %d. %s %s (confidence %.2f)\n", i+1, c.Kind, entityText(c.Entity), c.Confidence)
		}
	}
}
