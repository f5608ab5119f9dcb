package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/traces"
)

func newLogsCmd(e *env) *cobra.Command {
	var (
		server, request, trace string
		limit                  int
		asJSON                 bool
	)
	var httpConfig clientFlags
	cmd := &cobra.Command{
		Use:   "logs --request ID | --trace ID [--server URL] [--json]",
		Short: "Follow one request's logs across services in a running Vigil",
		Long: `Print, oldest first, the logs a running vigil serve holds for one request:
those carrying its request id (x-request-id, request_id, correlation_id),
and those of the traces whose spans or logs carry it, so the request is
followed across services that log no id of their own. --trace prints the
logs of one trace instead. --json prints one object: {"request_id" or
"trace_id", "logs": [...]}.`,
		Example: `  vigil logs --request 7f3c9e2a-51b4-4c1e-9d8a-2f6b0c1d4e5a
  vigil logs --trace 4bf92f3577b34da6a3ce929d0e0e4736 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, err := withHTTPClient(cmd.Context(), "logs", httpConfig)
			if err != nil {
				return err
			}
			cmd.SetContext(ctx)
			q := url.Values{}
			switch {
			case (request == "") == (trace == ""):
				return usagef("logs: give --request ID or --trace ID")
			case request != "":
				if strings.TrimSpace(request) == "" {
					return usagef("logs: --request is blank")
				}
				q.Set("request_id", request)
			default:
				id, err := traces.ParseTraceID(trace)
				if err != nil {
					return usagef("logs: --trace: %v", err)
				}
				q.Set("trace_id", id.String())
			}
			if limit < 0 || limit > traces.MaxLimit {
				return usagef("logs: --limit must be between 0 and %d, got %d", traces.MaxLimit, limit)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			data, err := apiGet(cmd.Context(), "logs", server, "/api/v1/logs", q)
			if err != nil {
				return err
			}
			var recs []json.RawMessage
			if err := json.Unmarshal(data, &recs); err != nil {
				return fmt.Errorf("logs: read what %s answered: %w", server, err)
			}
			if recs == nil {
				recs = []json.RawMessage{}
			}
			if asJSON {
				out := map[string]any{"logs": recs}
				if request != "" {
					out["request_id"] = request
				} else {
					out["trace_id"] = q.Get("trace_id")
				}
				return writeJSONLine(e.stdout, out)
			}
			what := "request " + request
			if request == "" {
				what = "trace " + q.Get("trace_id")
			}
			return printLogs(e.stdout, what, recs)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", defaultServer, "the URL of the running Vigil")
	registerHTTPConfig(fl, &httpConfig)
	fl.StringVar(&request, "request", "", "the request (correlation) id to follow")
	fl.StringVar(&trace, "trace", "", "the trace id (32 hex digits) whose logs to print")
	fl.IntVar(&limit, "limit", 0, "keep the newest N records (default: the server's, 1000)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// logLine is what printLogs shows of a record.
type logLine struct {
	Time           time.Time `json:"time"`
	Service        string    `json:"service"`
	SeverityText   string    `json:"severity_text"`
	SeverityNumber int32     `json:"severity_number"`
	Body           any       `json:"body"`
	TraceID        string    `json:"trace_id"`
	SpanID         string    `json:"span_id"`
}

// printLogs prints one record a line: time, service, severity, body and the
// span it belongs to; further lines of a body are indented.
func printLogs(w io.Writer, what string, recs []json.RawMessage) error {
	if len(recs) == 0 {
		_, err := fmt.Fprintf(w, "No logs for %s.\n", what)
		return err
	}
	width := 0
	lines := make([]logLine, len(recs))
	for i, raw := range recs {
		if err := json.Unmarshal(raw, &lines[i]); err != nil {
			return fmt.Errorf("logs: read record %d: %w", i, err)
		}
		width = max(width, len(lines[i].Service))
	}
	traceIDs := map[string]bool{}
	for _, l := range lines {
		body, ok := l.Body.(string)
		if !ok {
			b, _ := json.Marshal(l.Body)
			body = string(b)
		}
		body = strings.ReplaceAll(strings.TrimRight(body, "\n"), "\n", "\n    ")
		where := ""
		if l.TraceID != "" {
			traceIDs[l.TraceID] = true
			where = "  [trace " + l.TraceID
			if l.SpanID != "" {
				where += " span " + l.SpanID
			}
			where += "]"
		}
		if _, err := fmt.Fprintf(w, "%s  %-*s  %-5s  %s%s\n", l.Time.UTC().Format("2006-01-02 15:04:05.000"), width, l.Service,
			severity(l.SeverityText, l.SeverityNumber), body, where); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d records, %d traces\n", len(lines), len(traceIDs))
	return err
}

// severity is the record's severity text, else the name of its number's
// range.
func severity(text string, n int32) string {
	if text != "" {
		return strings.ToUpper(text)
	}
	names := []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}
	if n >= 1 && n <= 24 {
		return names[(n-1)/4]
	}
	return "-"
}
