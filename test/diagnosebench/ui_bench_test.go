package diagnosebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
	"github.com/vigil-obs/vigil/internal/store"
	"github.com/vigil-obs/vigil/internal/ui"
)

// uiPaths are the pages (and, after them, their JSON) BenchmarkUIPages
// serves: the question pages read the store, the GPU grid and the
// topology every GPU.
var uiPaths = []string{"/incidents/bench", "/gpus", "/platform", "/inference", "/failures", "/tenants", "/topology",
	"/api/v1/gpus", "/api/v1/platform", "/api/v1/inference", "/api/v1/failures", "/api/v1/tenants", "/api/v1/topology"}

// benchIncidents holds the one incident of the benchmark's diagnosis.
type benchIncidents []incident.Incident

func (l benchIncidents) List() []incident.Incident { return l }

func (l benchIncidents) Get(id string) (incident.Incident, bool) {
	for _, i := range l {
		if i.ID == id {
			return i, true
		}
	}
	return incident.Incident{}, false
}

// incidentOf diagnoses st at the dataset's end and returns its first
// symptom as the incident "bench", with the ranked causes whose evidence
// the incident page plots.
func incidentOf(b *testing.B, st *store.Embedded, ds meta) benchIncidents {
	b.Helper()
	eng, err := diagnose.New(diagnose.Options{Window: ds.Window})
	if err != nil {
		b.Fatal(err)
	}
	rep, err := eng.Diagnose(context.Background(), st, ds.End)
	if err != nil {
		b.Fatal(err)
	}
	if len(rep.Symptoms) == 0 || len(rep.Causes) == 0 {
		b.Fatalf("the NVLink cluster's diagnosis has no symptom or no cause: %+v", rep)
	}
	s := rep.Symptoms[0]
	return benchIncidents{{
		ID: "bench", Kind: s.Kind, Entity: s.Entity, Severity: incident.SeverityPage, State: incident.StateFiring,
		Summary: s.Summary, Since: s.Since, OpenedAt: ds.End, LastSeen: ds.End, Causes: rep.Causes[:min(3, len(rep.Causes))],
	}}
}

// BenchmarkUIPages serves each page of the web UI over the NVLink
// cluster of BenchmarkDiagnoseNodes (1 h at 30 s, eight H100s a node) at
// the end of its window, through a real HTTP listener on 127.0.0.1:
// server time per page (median of the loops; the store open, its pages
// cached after the first) and its weight, the bytes of the page's body
// warm (the stylesheet cached) and cold (with the stylesheet), next to
// the JSON API's time for the same data. The incident page is the
// diagnosis's at the window's end: its evidence plotted against the
// peers. The render budget is lifted, so each page is timed whole; a
// page whose queries answer from the UI's own keep of answers (a reload)
// is not timed again.
//
//	VIGIL_DIAGNOSEBENCH_DIR=/tmp/dbench go test ./test/diagnosebench -run '^$' -bench 'UIPages' -benchtime 5x -timeout 60m
//	VIGIL_DIAGNOSEBENCH_LARGE=1 go test ./test/diagnosebench -run '^$' -bench 'UIPages/nodes=1000$' -benchtime 3x -timeout 90m
func BenchmarkUIPages(b *testing.B) {
	for _, n := range []int{128, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			if n > 512 && os.Getenv(largeEnv) != "1" {
				b.Skipf("%d nodes take minutes to simulate: set %s=1", n, largeEnv)
			}
			benchUI(b, n)
		})
	}
}

func benchUI(b *testing.B, nodes int) {
	ds := dataset(b, nodes, time.Hour)
	st, err := openStore(ds)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			b.Error(err)
		}
	}()
	h, err := ui.New(ui.Options{Store: st, Incidents: incidentOf(b, st, ds), Now: func() time.Time { return ds.End },
		QueryTimeout: time.Minute, RenderBudget: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	for path, api := range h.APIs() {
		mux.Handle(path, api)
	}
	mux.Handle("/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	css, _, err := get(srv.URL + "/static/vigil.css")
	if err != nil {
		b.Fatal(err)
	}
	times := map[string][]time.Duration{}
	bytes := map[string]int{}
	for b.Loop() {
		for _, p := range uiPaths {
			start := time.Now()
			n, status, err := get(srv.URL + p)
			if err != nil {
				b.Fatal(err)
			}
			if status != http.StatusOK {
				b.Fatalf("%s: HTTP %d", p, status)
			}
			times[p] = append(times[p], time.Since(start))
			bytes[p] = n
		}
	}
	b.StopTimer()
	var lines []string
	for _, p := range uiPaths {
		med := median(times[p])
		name := strings.TrimPrefix(p, "/")
		b.ReportMetric(med.Seconds(), "s/"+strings.ReplaceAll(name, "/", "_"))
		line := fmt.Sprintf("%-18s %8s %9d B", p, med.Round(time.Millisecond), bytes[p])
		if !strings.HasPrefix(p, "/api/") {
			line += fmt.Sprintf(" warm, %9d B cold", bytes[p]+css)
			if api := "/api/v1" + p; slices.Contains(uiPaths, api) {
				line += fmt.Sprintf("; ×%.2f the JSON's time", float64(med)/float64(median(times[api])))
			}
		}
		lines = append(lines, line)
	}
	b.Logf("%d nodes (%d GPUs), %d series:\n%s", nodes, nodes*8, ds.Series, strings.Join(lines, "\n"))
}

// get fetches url and returns its body's size and status.
func get(url string) (int, int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return int(n), resp.StatusCode, errors.Join(err, resp.Body.Close())
}
