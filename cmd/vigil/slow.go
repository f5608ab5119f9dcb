package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/hops"
)

func newSlowCmd(e *env) *cobra.Command {
	var (
		server, route, window, end string
		asJSON                     bool
	)
	var httpConfig clientFlags
	cmd := &cobra.Command{
		Use:   "slow [--route R] [--window 15m] [--end TIME] [--server URL] [--json]",
		Short: "Show where a running Vigil's requests spend their time, per route",
		Long: `Break down the traces of a running vigil serve over a window: per route
(a root span's name, such as "POST /v1/chat", or its http.route), its
traffic, latency and errors, each service's median and 95th-percentile
time on the critical path and its share of the time, and the slowest
traces (see them with vigil trace ID). Without --route, every route,
slowest first. --end ends the window (RFC 3339 or Unix seconds; default:
now). --json prints the server's answer as one object.`,
		Example: `  vigil slow
  vigil slow --route "POST /v1/chat" --window 1h --server http://vigil:9700`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, err := withHTTPClient(cmd.Context(), "slow", httpConfig)
			if err != nil {
				return err
			}
			cmd.SetContext(ctx)
			if _, err := hops.ParseWindow(window); err != nil {
				return usagef("slow: --%v", err)
			}
			q := url.Values{"window": {window}}
			if route != "" {
				q.Set("route", route)
			}
			if end != "" {
				t, err := parseTime(end)
				if err != nil {
					return usagef("slow: --end: %v", err)
				}
				q.Set("end", t.Format(time.RFC3339Nano))
			}
			data, err := apiGet(cmd.Context(), "slow", server, "/api/v1/slow", q)
			if err != nil {
				return err
			}
			var res hops.SlowResult
			if err := json.Unmarshal(data, &res); err != nil {
				return fmt.Errorf("slow: read what %s answered: %w", server, err)
			}
			if asJSON {
				return writeJSONLine(e.stdout, res)
			}
			return hops.WriteRouteText(e.stdout, res.Routes)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", defaultServer, "the URL of the running Vigil")
	registerHTTPConfig(fl, &httpConfig)
	fl.StringVar(&route, "route", "", "only this route: a root span's name or http.route")
	fl.StringVar(&window, "window", "15m", "how far back to look")
	fl.StringVar(&end, "end", "", "the end of the window (RFC 3339 or Unix seconds; default: now)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
