package nezha_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/realdata/nezha"
)

// FuzzLoad feeds a day's metric file, log file, call latencies (the
// server's side and the client's) and trace file arbitrary bytes: Load returns a day or an error, never panics, and
// a day it returns writes its cases, traces and logs.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(header+"2024-05-01 10:00:19.6 +0000 UTC m=+0.1,1,frontend-579b9bff58-t2dbm,1,0.1,0,3\n"),
		[]byte("Timestamp,TimeUnixNano,Node,PodName,Container,TraceID,SpanID,Log\nx,1,n,frontend-579b9bff58-t2dbm,c,t,s,\"{\"\"log\"\":\"\"1 INFO a#1 x\"\"}\"\n"),
		[]byte("time,timestamp,frontend_cartservice\n2024-05-01 10:00:19.6 +0000 UTC,1,0.004\n"),
		[]byte("time,timestamp,frontend_cartservice,frontend_adservice\n2024-05-01 10:00:20.1 +0000 UTC,1,0.006,\n"),
		[]byte(traceHead+"00000000000000000000000000000001,0000000000000001,root,frontend-579b9bff58-t2dbm,GET,1714557620000000000,1714557620100000000,100000\n"))
	f.Add([]byte("Time,PodName\n\"broken"), []byte("\"\n,,"), []byte("time\n"), []byte("time,a_b\nx,1\n"), []byte(traceHead+"zz,1,root,p,o,x,y,z\n\"\n"))
	f.Fuzz(func(t *testing.T, metric, logs, edges, clientEdges, spans []byte) {
		dir := filepath.Join(t.TempDir(), "2024-05-01")
		for _, d := range []string{"metric", "log", "trace"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		files := map[string][]byte{
			"metric/frontend-579b9bff58-t2dbm_metric.csv": metric,
			"log/10_00_log.csv":                           logs,
			"metric/destination_50.csv":                   edges,
			"metric/source_50.csv":                        clientEdges,
			"trace/10_00_trace.csv":                       spans,
			"2024-05-01-fault_list.json": []byte(`{"10": [{"inject_time": "2024-05-01 10:00:54", "inject_timestamp": "1",
				"inject_pod": "frontend-579b9bff58-t2dbm", "inject_type": "return"}]}`),
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d, err := nezha.Load(dir)
		if err != nil {
			return
		}
		_, _ = d.WriteCase(io.Discard, 0, nezha.CaseOptions{Graph: true})
		_, _, _ = d.WriteTraces(io.Discard, time.Unix(0, 0), time.Unix(1<<40, 0))
		_, _, _ = d.WriteLogs(io.Discard, time.Unix(0, 0), time.Unix(1<<40, 0))
	})
}
