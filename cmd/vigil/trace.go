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
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/hops"
	"github.com/vigil-obs/vigil/internal/traces"
)

// defaultServer is the running Vigil the read commands ask by default.
const defaultServer = "http://localhost:9700"

func newTraceCmd(e *env) *cobra.Command {
	var (
		server string
		asJSON bool
	)
	var httpConfig clientFlags
	cmd := &cobra.Command{
		Use:   "trace ID [--server URL] [--json]",
		Short: "Break one trace of a running Vigil down hop by hop",
		Long: `Read one trace (32 hex digits) from a running vigil serve and print where
its time went: the critical path, each service's exclusive time on it and
its share ("API gateway 40 ms, application 70 ms, vector search 420 ms,
model inference 6.4 s, external tool 950 ms"), and the waterfall of its
spans (# marks the spans on the critical path).
--json prints the breakdown as one object.`,
		Example: `  vigil trace 4bf92f3577b34da6a3ce929d0e0e4736
  vigil trace 4bf92f3577b34da6a3ce929d0e0e4736 --server http://vigil:9700 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, err := withHTTPClient(cmd.Context(), "trace", httpConfig)
			if err != nil {
				return err
			}
			cmd.SetContext(ctx)
			id, err := traces.ParseTraceID(args[0])
			if err != nil {
				return usagef("trace: %v", err)
			}
			data, err := apiGet(cmd.Context(), "trace", server, "/api/v1/traces/"+id.String(), nil)
			var ae *apiError
			if errors.As(err, &ae) && ae.code == http.StatusNotFound {
				return usagef("trace: %s holds no trace %s", server, id)
			}
			if err != nil {
				return err
			}
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
			if err != nil {
				return fmt.Errorf("trace: read the trace %s answered: %w", server, err)
			}
			bd := hops.Breakdown(td)
			if asJSON {
				return writeJSONLine(e.stdout, bd)
			}
			return hops.WriteText(e.stdout, bd)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", defaultServer, "the URL of the running Vigil")
	registerHTTPConfig(fl, &httpConfig)
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// apiError is an error answer of Vigil's API.
type apiError struct {
	cmd, server string
	code        int
	typ, msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %s answered %d: %s", e.cmd, e.server, e.code, e.msg)
}

// apiGet reads GET path?query from the running Vigil at server and returns
// the data of its answer. A bad --server and a request the server calls
// bad data are usage errors; an error answer is an *apiError.
func apiGet(ctx context.Context, cmd, server, path string, query url.Values) (json.RawMessage, error) {
	base, err := url.Parse(strings.TrimSuffix(server, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, usagef("%s: --server %q is not an http:// or https:// URL", cmd, server)
	}
	u := base.JoinPath(path)
	u.RawQuery = query.Encode()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	resp, err := httpClientOf(ctx).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: read the answer of %s: %w", cmd, server, err)
	}
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status == "" {
		return nil, fmt.Errorf("%s: %s answered %s to %s, not Vigil's API (is it a vigil serve of this version?)", cmd, server, resp.Status, u.Path)
	}
	if env.Status != "success" {
		if env.ErrorType == "bad_data" {
			return nil, usagef("%s: %s", cmd, env.Error)
		}
		return nil, &apiError{cmd: cmd, server: server, code: resp.StatusCode, typ: env.ErrorType, msg: env.Error}
	}
	return env.Data, nil
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
