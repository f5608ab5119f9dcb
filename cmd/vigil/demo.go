package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/config"
	"github.com/vigil-obs/vigil/internal/cost"
	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/eval"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/server"
	"github.com/vigil-obs/vigil/internal/sim"
	"github.com/vigil-obs/vigil/internal/sim/microsvc"
	"github.com/vigil-obs/vigil/internal/watch"
)

// The demo's story: an 8-node A100 training job that stalls at 02:47
// because NVLink on gpu-node-06 degrades.
const (
	demoDuration = 55 * time.Minute
	demoOnset    = 47 * time.Minute
	demoGPUModel = "A100"
	// demoEvery is how often, in simulated time, the demo diagnoses while
	// it streams; demoWarmup is how much data it waits for first.
	demoEvery  = 30 * time.Second
	demoWarmup = 10 * time.Minute
)

// demoFlags are the flags of `vigil demo`.
type demoFlags struct {
	seed   uint64
	serve  bool
	listen string
	// webConfig is --web.config.file: the API's TLS and users with
	// --serve.
	webConfig string
	asJSON    bool
	// alertmanager, if set, receives the pages (Alertmanager API v2).
	alertmanager string
}

func newDemoCmd(e *env) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo [SCENARIO]",
		Short: "See Vigil diagnose a simulated GPU cluster, with no set-up",
		Long: `Simulate a GPU cluster — an 8-node A100 training job, a vLLM deployment and
a research notebook on 10 nodes — inject a fault, stream its telemetry into
the embedded store through the real ingestion path in accelerated time, run
the diagnosis engine on it as it goes (progress on stderr), and print the
page: the symptom, the ranked causes with their evidence, and what to do.

The default story: the training job stalls at 02:47 because NVLink on
gpu-node-06 degraded. Name any scenario of 'vigil simulate --list' instead
(healthy, a cause kind, KIND/VARIANT, KIND+KIND). Nothing is downloaded and
no port is opened unless --serve, which keeps the Prometheus-compatible API
up on --listen afterwards (until interrupted) so you can query the data.`,
		Example: `  vigil demo
  vigil demo gpu_thermal_throttle --seed 7
  vigil demo --serve --listen 127.0.0.1:9700  # then open http://127.0.0.1:9700`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if f.webConfig != "" && !f.serve {
				return usagef("demo: --web.config.file configures the API of --serve")
			}
			if _, err := config.LoadWebConfig(f.webConfig); err != nil {
				return usagef("demo: --web.config.file: %s", strings.TrimPrefix(err.Error(), "web.config_file: "))
			}
			return runDemo(cmd.Context(), e, f, name)
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "the simulation's random seed")
	fl.BoolVar(&f.serve, "serve", false, "keep the API up on --listen after the run, until interrupted")
	fl.StringVar(&f.listen, "listen", ":9700", "the address of the API with --serve")
	fl.StringVar(&f.webConfig, "web.config.file", "", "with --serve: exporter-toolkit web configuration of the API (TLS, mutual TLS, bcrypt basic-auth users), as Prometheus takes it")
	fl.BoolVar(&f.asJSON, "json", false, "print the final diagnosis as one JSON object")
	fl.StringVar(&f.alertmanager, "alertmanager", "", "also send the pages to the Alertmanager at this URL (e.g. http://localhost:9093)")
	return cmd
}

// demoScenario returns the scenario a demo runs: the default story, or the
// named one.
func demoScenario(name string) (sim.Scenario, error) {
	if name == "" {
		sc := sim.DemoScenario()
		sc.Faults[0].After = demoOnset
		return sc, nil
	}
	sc, err := sim.ParseScenario(name)
	if err != nil {
		return sim.Scenario{}, usagef("demo: %v (vigil simulate --list names them)", err)
	}
	return sc, nil
}

func runDemo(ctx context.Context, e *env, f demoFlags, name string) error {
	if microsvc.IsScenario(name) {
		return runMicroDemo(ctx, e, f, name)
	}
	sc, err := demoScenario(name)
	if err != nil {
		return err
	}
	cfg := sim.Config{Seed: f.seed, Duration: demoDuration, GPUModel: demoGPUModel}
	s, err := sim.New(cfg, sc)
	if err != nil {
		return usagef("demo: %v", err)
	}
	rc := s.Config()
	d := &demoRun{e: e, start: rc.Start}
	ds, err := openDemo(ctx, e, f, rc.Start, d.onChange)
	if err != nil {
		return err
	}
	defer ds.close()
	clock, srv := ds.clock, ds.srv
	eng, err := diagnose.New(diagnose.Options{Logger: ds.logger.With("component", "diagnose")})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(e.stderr, "vigil demo: %s — %d nodes × %d %s GPUs: an %d-node training job, %d vLLM replicas, a notebook; simulating %s to %s\n",
		sc.Name, rc.Nodes, rc.GPUsPerNode, rc.GPUModel, rc.TrainingNodes, rc.Replicas,
		rc.Start.Format("15:04"), rc.Start.Add(rc.Duration).Format("15:04"))
	d.w, d.wall = srv.Watcher(), time.Now()
	onScrape := d.onScrape
	if eval.NeedsRequestPath(s.Truth()) {
		// The fault shows only in the request path: its traces go in as
		// the OTLP receiver hands them on — redaction, the trace store,
		// span metrics and the service graph.
		rp, err := eval.NewRequestPath(s, srv.Traces())
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer rp.Close()
		onScrape = func(ctx context.Context, sc sim.Scrape) error {
			if err := rp.Advance(ctx, sc.At); err != nil {
				return err
			}
			return d.onScrape(ctx, sc)
		}
	}
	// The cluster's logs (kernel XIDs, NCCL timeouts, OOM kills) go in as
	// the OTLP receiver hands them on, and become log-derived counters.
	if err := s.Run(ctx, srv.Store(), sim.RunOptions{Clock: clock, OnScrape: onScrape, OnLogs: srv.Logs().ConsumeLogs}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	rep, err := eng.Diagnose(ctx, srv.Store(), clock.Now())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.summary(s.Truth(), rep)
	return demoFinish(ctx, e, f, rep, ds)
}

// demoFinish prints the final page (or JSON) and, with --serve, keeps the
// API up until ctx ends.
func demoFinish(ctx context.Context, e *env, f demoFlags, rep *diagnose.Report, ds *demoSetup) error {
	if f.asJSON {
		if err := json.NewEncoder(e.stdout).Encode(rep); err != nil {
			return err
		}
	} else {
		bw := bufio.NewWriter(e.stdout)
		if err := diagnose.WriteText(bw, rep, e.colour(e.stdout)); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	if addr := ds.srv.Addr(); addr != nil {
		fmt.Fprintf(e.stderr, "vigil demo: the API is up on http://%s (Ctrl-C to stop)\n", addr)
		select {
		case <-ctx.Done():
		case err := <-ds.srv.Err():
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

// runMicroDemo runs a metric_anomaly scenario: a microservice application
// with one faulty service, diagnosed by the generic layer (--entity-label
// service) once its telemetry is in.
func runMicroDemo(ctx context.Context, e *env, f demoFlags, name string) error {
	spec, err := microsvc.ParseScenario(name)
	if err != nil {
		return usagef("demo: %v", err)
	}
	g, err := microsvc.New(microsvc.Config{Seed: f.seed, Duration: 30 * time.Minute}, spec)
	if err != nil {
		return usagef("demo: %v", err)
	}
	c := g.Config()
	ds, err := openDemo(ctx, e, f, c.Start, nil)
	if err != nil {
		return err
	}
	defer ds.close()
	clock, st, logger := ds.clock, ds.srv.Store(), ds.logger
	fmt.Fprintf(e.stderr, "vigil demo: %s — %s, %d services; simulating %s to %s\n", name, c.App, len(g.Services()),
		c.Start.Format("15:04"), c.Start.Add(c.Duration).Format("15:04"))
	wall := time.Now()
	if err := g.Run(ctx, st, microsvc.RunOptions{OnScrape: func(_ context.Context, at time.Time) error { clock.Set(at); return nil }}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	eng, err := diagnose.New(diagnose.Options{EntityLabel: microsvc.EntityLabel, Logger: logger})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	rep, err := eng.Diagnose(ctx, st, clock.Now())
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(e.stderr, "vigil demo: done in %s wall\n", time.Since(wall).Round(100*time.Millisecond))
	for _, t := range g.Truth() {
		fmt.Fprintf(e.stderr, "  injected at %s: %s\n", t.Onset.Format("15:04:05"), t.Summary)
	}
	return demoFinish(ctx, e, f, rep, ds)
}

// demoSetup is what every demo holds: serve's pipeline, headless unless
// --serve, on the simulated clock over a temporary directory.
type demoSetup struct {
	dir    string
	clock  *sim.Clock
	srv    *server.Server
	logger *slog.Logger
}

// openDemo starts the pipeline at start: the embedded store, the request
// path, the evaluation (driven by the demo's scrapes, its incidents to
// onChange), and with --serve the API on --listen; with --alertmanager the
// pages go there too.
func openDemo(ctx context.Context, e *env, f demoFlags, start time.Time, onChange func(incident.Change)) (_ *demoSetup, err error) {
	d := &demoSetup{clock: sim.NewClock(start), logger: e.loggerAtLeast(slog.LevelWarn)}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.dir, err = os.MkdirTemp("", "vigil-demo-"); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	cfg := server.SimulatedConfig(d.dir)
	cfg.Web.Listen = f.listen
	cfg.Web.ConfigFile = f.webConfig
	cfg.Evaluation.Interval = model.Duration(demoEvery)
	// Illustrative prices, so that the cost page and series have figures:
	// AWS's on-demand list price of a p4de.24xlarge (8 A100 80GB,
	// us-east-1, $40.97 an hour) per GPU. A real cluster states its own.
	cfg.Cost.Prices = cost.Prices{Currency: "USD", GPUHourly: map[string]float64{"NVIDIA A100-SXM4-80GB": 5.12, cost.DefaultKey: 5.12}}
	if f.alertmanager != "" {
		cfg.Alerting.Alertmanagers = []string{f.alertmanager}
		if err := cfg.Alerting.Validate(); err != nil {
			return nil, usagef("demo: --alertmanager: %v", err)
		}
	}
	d.srv = server.New(server.Options{Config: cfg, Now: d.clock.Now, Logger: d.logger, Headless: !f.serve, Driven: true, OnChange: onChange})
	if err := d.srv.Start(ctx, server.Host); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return d, nil
}

// close stops the pipeline (the notifier sends what it holds) and removes
// the directory.
func (d *demoSetup) close() {
	if d.srv != nil {
		_ = d.srv.Shutdown(context.Background())
	}
	if d.dir != "" {
		_ = os.RemoveAll(d.dir)
	}
}

// demoRun follows a demo as it streams: the continuous path of `vigil
// serve` (rules, symptoms, diagnosis, incidents, notifications) driven by
// the simulated clock.
type demoRun struct {
	e        *env
	w        *watch.Watcher
	start    time.Time
	wall     time.Time
	next     time.Time
	headline string
	firstAt  map[string]time.Time
	// paged is when each incident first fired (simulated time).
	paged map[string]time.Time
	// announced are the headlines ("summary (confidence)") the incident
	// lines of the current cycle carried: the headline line does not
	// repeat them.
	announced []string
}

// onScrape reports progress and evaluates every demoEvery of simulated
// time once demoWarmup has passed, printing each change of the headline
// and each incident as it fires.
func (d *demoRun) onScrape(ctx context.Context, sc sim.Scrape) error {
	if every := max(1, sc.Rounds/5); sc.Index%every == 0 && sc.Index > 0 {
		fmt.Fprintf(d.e.stderr, "  %s  %3.0f%%  %d rounds streamed (%s wall)\n", sc.At.Format("15:04"),
			100*float64(sc.Index)/float64(sc.Rounds), sc.Index, time.Since(d.wall).Round(100*time.Millisecond))
	}
	if sc.At.Sub(d.start) < demoWarmup || sc.At.Before(d.next) {
		return nil
	}
	d.next = sc.At.Add(demoEvery)
	d.announced = d.announced[:0]
	if err := d.w.Cycle(ctx, sc.At); err != nil {
		return err
	}
	rep, _ := d.w.Last()
	if rep == nil {
		return nil
	}
	head := "healthy"
	switch {
	case len(rep.Causes) > 0:
		head = fmt.Sprintf("%s (%.2f)", rep.Causes[0].Summary, rep.Causes[0].Confidence)
	case len(rep.Symptoms) > 0:
		head = "symptom: " + rep.Symptoms[0].Summary
	case !rep.Healthy && len(rep.Findings) > 0:
		head = fmt.Sprintf("finding: %s (%.2f)", rep.Findings[0].Summary, rep.Findings[0].Confidence)
	}
	if d.firstAt == nil {
		d.firstAt = map[string]time.Time{}
	}
	for _, c := range append(rep.Causes, rep.Findings...) {
		if c.Confidence >= 0.5 {
			k := c.Kind + " " + formatEntityKey(c.Entity)
			if _, ok := d.firstAt[k]; !ok {
				d.firstAt[k] = sc.At
			}
		}
	}
	if head != d.headline {
		if !slices.Contains(d.announced, strings.TrimPrefix(head, "finding: ")) {
			fmt.Fprintf(d.e.stderr, "  %s  %s\n", sc.At.Format("15:04:05"), head)
		}
		d.headline = head
	}
	return nil
}

// onChange prints each incident as it fires, is re-diagnosed or resolves:
// what the pager shows.
func (d *demoRun) onChange(c incident.Change) {
	i := c.Incident
	what := strings.ToUpper(i.Severity)
	switch c.What {
	case "rediagnosed":
		what = "UPDATE"
	case "resolved":
		what = "RESOLVED"
	}
	line := fmt.Sprintf("  %s  %-8s %s %s", i.LastSeen.Format("15:04:05"), what, i.Kind, entityText(i.Entity))
	if len(i.Causes) > 0 {
		head := fmt.Sprintf("%s (%.2f)", i.Causes[0].Summary, i.Causes[0].Confidence)
		line += " — " + head
		d.announced = append(d.announced, head)
	}
	fmt.Fprintln(d.e.stderr, line)
	if c.What != "resolved" && i.Severity == incident.SeverityPage {
		if d.paged == nil {
			d.paged = map[string]time.Time{}
		}
		for _, cause := range i.Causes[:min(1, len(i.Causes))] {
			k := cause.Kind + " " + formatEntityKey(cause.Entity)
			if _, ok := d.paged[k]; !ok {
				d.paged[k] = i.LastSeen
			}
		}
	}
}

// summary says on stderr what was injected and when Vigil first named it.
func (d *demoRun) summary(truth []sim.Fault, rep *diagnose.Report) {
	fmt.Fprintf(d.e.stderr, "vigil demo: done in %s wall\n", time.Since(d.wall).Round(100*time.Millisecond))
	if len(truth) == 0 {
		fmt.Fprintf(d.e.stderr, "  injected: nothing (a healthy run); Vigil says healthy=%t\n", rep.Healthy)
		return
	}
	for _, f := range truth {
		fmt.Fprintf(d.e.stderr, "  injected at %s: %s\n", f.Onset.Format("15:04:05"), f.Summary)
		k := f.Kind + " " + formatEntityKey(f.Entity)
		if at, ok := d.firstAt[k]; ok {
			fmt.Fprintf(d.e.stderr, "  Vigil named it %s after the onset\n", at.Sub(f.Onset))
		}
		if at, ok := d.paged[k]; ok {
			fmt.Fprintf(d.e.stderr, "  the page carrying it as the probable cause fired %s after the onset\n", at.Sub(f.Onset))
		}
	}
}

func formatEntityKey(e map[string]string) string {
	b, _ := json.Marshal(e) // map keys are sorted
	return string(b)
}
