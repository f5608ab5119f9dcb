package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/ingest/remotewrite"
	"github.com/vigil-obs/vigil/internal/store"
)

func newImportCmd(e *env) *cobra.Command {
	var (
		dataDir, server, at string
		format              string
		blockDuration       time.Duration
		asJSON              bool
	)
	var httpConfig clientFlags
	cmd := &cobra.Command{
		Use:   "import (--data-dir DIR | --server URL) FILE...",
		Short: "Backfill OpenMetrics or Prometheus text files into the embedded store",
		Long: `Backfill OpenMetrics (timestamps in seconds, ending in "# EOF") or Prometheus
text exposition (timestamps in milliseconds), gzip-compressed or not, into the
embedded store as TSDB blocks, whatever their age. "-" reads standard input.
Every file is validated before anything is written; a malformed line is
reported with its file and line number and nothing is written.

Into a directory a running "vigil serve" holds (the TSDB lock), send the files
through that server's remote-write endpoint with --server URL instead; the
server takes samples up to its storage.out_of_order_window behind its newest.`,
		Example: `  vigil import --data-dir data/ dump.om
  curl -s http://dcgm-exporter:9400/metrics | vigil import --server http://localhost:9700 -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case dataDir == "" && server == "":
				return usagef("import: --data-dir DIR or --server URL is required")
			case dataDir != "" && server != "":
				return usagef("import: --data-dir and --server exclude each other")
			}
			opts := fileimport.DefaultOptions(e.now())
			if at != "" {
				t, err := parseTime(at)
				if err != nil {
					return usagef("import: --at: %v", err)
				}
				opts.DefaultTime = t
			}
			switch format {
			case "auto":
			case "openmetrics":
				opts.Format = fileimport.FormatOpenMetrics
			case "prometheus":
				opts.Format = fileimport.FormatPrometheus
			default:
				return usagef("import: --format must be auto, openmetrics or prometheus, got %q", format)
			}
			if blockDuration < time.Hour || blockDuration%time.Hour != 0 {
				return usagef("import: --block-duration must be a whole number of hours, got %s", blockDuration)
			}
			files, err := readFiles(args, e.stdin, opts)
			if err != nil {
				return usageError{fmt.Errorf("import: %w", err)}
			}
			// The TSDB's block writer logs every block at info level: keep
			// stderr to warnings unless asked for more.
			logger := e.loggerAtLeast(slog.LevelWarn).With("component", "import")
			if server != "" {
				client, err := newHTTPClient(httpConfig, time.Minute)
				if err != nil {
					return usagef("import: %v", err)
				}
				return pushFiles(cmd.Context(), e, server, client, files, asJSON, logger)
			}
			// No logger: the lock's warning about a lock file "from a
			// previous execution" is wrong when a running server holds it.
			release, err := store.LockDir(dataDir, nil)
			if errors.Is(err, store.ErrLocked) {
				return fmt.Errorf("import: %w: send the files through it with --server URL instead", err)
			}
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			stats, werr := fileimport.WriteBlocks(cmd.Context(), dataDir, files, blockDuration.Milliseconds(), logger)
			if err := errors.Join(werr, release()); err != nil {
				return fmt.Errorf("import: %w", err)
			}
			return printImport(e.stdout, dataDir, "", stats, asJSON)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the data directory of the embedded store")
	cmd.Flags().StringVar(&server, "server", "", "send through the remote-write endpoint of the Vigil at this URL instead")
	registerHTTPConfig(cmd.Flags(), &httpConfig)
	cmd.Flags().StringVar(&at, "at", "", "time of samples without a timestamp (RFC 3339 or Unix seconds; default now)")
	cmd.Flags().StringVar(&format, "format", "auto", "input format: auto, openmetrics or prometheus")
	cmd.Flags().DurationVar(&blockDuration, "block-duration", 2*time.Hour, "time range of each block written")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// pushFiles sends files through a running server's remote-write endpoint.
func pushFiles(ctx context.Context, e *env, server string, client *http.Client, files []*fileimport.File, asJSON bool, logger *slog.Logger) error {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("import: --server %q is not an http(s) URL", server)
	}
	stats, err := remotewrite.Push(ctx, strings.TrimSuffix(server, "/"), files, remotewrite.PushOptions{Client: client, Logger: logger})
	if err != nil {
		if strings.Contains(err.Error(), "too_old") {
			return fmt.Errorf("import: %w (samples older than the server's out-of-order window: stop the server and import with --data-dir)", err)
		}
		return fmt.Errorf("import: %w", err)
	}
	return printImport(e.stdout, "", server, stats, asJSON)
}

// readFiles reads and validates every file before anything is written.
func readFiles(names []string, stdin io.Reader, opts fileimport.Options) ([]*fileimport.File, error) {
	files := make([]*fileimport.File, 0, len(names))
	stdinRead := false
	for _, name := range names {
		if name == "-" {
			if stdinRead {
				return nil, errors.New(`"-" (standard input) given twice`)
			}
			stdinRead = true
		}
		f, err := readFile(name, stdin, opts)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func readFile(name string, stdin io.Reader, opts fileimport.Options) (*fileimport.File, error) {
	if name == "-" {
		return fileimport.Read("<stdin>", stdin, opts)
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return fileimport.Read(name, fh, opts)
}

type importReport struct {
	DataDir    string    `json:"data_dir,omitempty"`
	Server     string    `json:"server,omitempty"`
	Files      int       `json:"files"`
	Series     int       `json:"series"`
	Samples    int       `json:"samples"`
	Duplicates int       `json:"duplicates"`
	Blocks     int       `json:"blocks"`
	MinTime    time.Time `json:"min_time"`
	MaxTime    time.Time `json:"max_time"`
}

// printImport reports an import into a data directory, or through a server
// when server is set.
func printImport(w io.Writer, dir, server string, s fileimport.Stats, asJSON bool) error {
	r := importReport{
		DataDir: dir, Server: server, Files: s.Files, Series: s.Series, Samples: s.Samples, Duplicates: s.Duplicates, Blocks: s.Blocks,
		MinTime: time.UnixMilli(s.MinT).UTC(), MaxTime: time.UnixMilli(s.MaxT).UTC(),
	}
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	var err error
	if server != "" {
		_, err = fmt.Fprintf(w, "sent %d series, %d samples from %d file(s) to %s, %s to %s",
			r.Series, r.Samples, r.Files, server, r.MinTime.Format(time.RFC3339), r.MaxTime.Format(time.RFC3339))
	} else {
		_, err = fmt.Fprintf(w, "imported %d series, %d samples from %d file(s) into %s: %d block(s), %s to %s",
			r.Series, r.Samples, r.Files, r.DataDir, r.Blocks, r.MinTime.Format(time.RFC3339), r.MaxTime.Format(time.RFC3339))
	}
	if err == nil && r.Duplicates > 0 {
		_, err = fmt.Fprintf(w, " (%d identical duplicate samples skipped)", r.Duplicates)
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}
