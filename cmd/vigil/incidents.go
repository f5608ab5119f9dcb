package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/incident"
)

func newIncidentsCmd(e *env) *cobra.Command {
	var (
		server, state string
		asJSON        bool
	)
	var httpConfig clientFlags
	cmd := &cobra.Command{
		Use:   "incidents [ID] [--server URL] [--state firing|resolved] [--json]",
		Short: "List the incidents of a running Vigil, or show one",
		Long: `List the incidents of a running vigil serve: each symptom on each entity
it paged (or ticketed) about, with its ranked causes, firing first.
--json prints the server's answer as one object ({"incidents": [...]}).

With an ID (the last column of the list), show that incident in full, as
kubectl describe does: its symptom, entity and times, every ranked cause
with its evidence, the PromQL that shows it and what to do, the history
of its diagnoses and what was sent to Alertmanager. --json prints the
incident as one object.`,
		Example: `  vigil incidents
  vigil incidents --server http://vigil.monitoring:9700 --state firing
  vigil incidents training_stall-3f9c2a1b
  vigil incidents training_stall-3f9c2a1b --json | jq '.causes[0]'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, err := withHTTPClient(cmd.Context(), "incidents", httpConfig)
			if err != nil {
				return err
			}
			cmd.SetContext(ctx)
			if len(args) == 1 {
				if state != "" {
					return usagef("incidents: --state lists incidents; it does not go with an ID")
				}
				return describeIncident(cmd.Context(), e, server, args[0], asJSON)
			}
			if state != "" && state != incident.StateFiring && state != incident.StateResolved {
				return usagef("incidents: --state must be firing or resolved, not %q", state)
			}
			list, raw, err := fetchIncidents(cmd.Context(), server, state)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := e.stdout.Write(raw)
				return err
			}
			return printIncidents(e.stdout, list)
		},
		ValidArgsFunction: completeIncidentIDs,
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", "http://localhost:9700", "the URL of the running Vigil")
	registerHTTPConfig(fl, &httpConfig)
	fl.StringVar(&state, "state", "", "only incidents in this state (firing or resolved)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	_ = cmd.RegisterFlagCompletionFunc("state", fixedCompletion(incident.StateFiring, incident.StateResolved))
	return cmd
}

// fetchIncidents reads /api/v1/incidents; raw is the data object, one line.
func fetchIncidents(ctx context.Context, server, state string) ([]incident.Incident, []byte, error) {
	query := url.Values{}
	if state != "" {
		query.Set("state", state)
	}
	var data struct {
		Incidents []incident.Incident `json:"incidents"`
	}
	raw, err := getAPI(ctx, server, "/api/v1/incidents", query, &data)
	if err != nil {
		return nil, nil, err
	}
	return data.Incidents, raw, nil
}

// errNotFound is the API's answer 404.
var errNotFound = errors.New("not found")

// getAPI reads one of Vigil's API endpoints into data and returns the data
// object, one line.
func getAPI(ctx context.Context, server, path string, query url.Values, data any) ([]byte, error) {
	u, err := url.Parse(strings.TrimSuffix(server, "/") + path)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("incidents: --server %q is not an http:// or https:// URL", server)
	}
	u.RawQuery = query.Encode()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClientOf(ctx).Do(req)
	if err != nil {
		return nil, fmt.Errorf("incidents: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("incidents: read the answer of %s: %w", server, err)
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("incidents: %s answered %s, not Vigil's API (is it a vigil serve?)", server, resp.Status)
	}
	if env.Status != "success" {
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s", errNotFound, env.Error)
		}
		return nil, fmt.Errorf("incidents: %s: %s", server, env.Error)
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		return nil, fmt.Errorf("incidents: %s answered data that is not Vigil's: %w", server, err)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// printIncidents prints one block per incident: the headline line, then
// the ranked causes.
func printIncidents(w io.Writer, list []incident.Incident) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "No incidents.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, i := range list {
		state := strings.ToUpper(i.Severity)
		if !i.Firing() {
			state = "RESOLVED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\tsince %s\t(%s)\n", state, i.Kind, entityText(i.Entity), i.Since.UTC().Format("2006-01-02 15:04:05"), i.ID)
		for _, c := range i.Causes {
			fmt.Fprintf(tw, "  %d. %s\t%s\tconfidence %.2f\t%s\n", c.Rank, c.Kind, entityText(c.Entity), c.Confidence, c.Summary)
		}
		if len(i.Causes) == 0 {
			fmt.Fprintf(tw, "  %s\t\t\t\n", i.Summary)
		}
	}
	return tw.Flush()
}

func entityText(e map[string]string) string {
	b, _ := json.Marshal(e)
	s := strings.NewReplacer(`":"`, "=", `","`, " ", `{"`, "", `"}`, "", "{}", "-").Replace(string(b))
	return s
}
