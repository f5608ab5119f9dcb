package nezha

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Fault is one injected fault.
type Fault struct {
	// At is the injection time (inject_time, UTC).
	At time.Time
	// Pod is the injected pod, Service its service (the pod's name without
	// its ReplicaSet and pod suffixes), Type the injection's type.
	Pod, Service, Type string
}

// Pod is one pod's metric file: a row a minute.
type Pod struct {
	Name, Service string
	// Times are the rows' times; Columns the values by column name, one per
	// row (NaN for an empty cell).
	Times   []time.Time
	Columns map[string][]float64
	// Order is the columns in file order.
	Order []string
}

// Day is one day of the data set.
type Day struct {
	// Name is the day (the directory's name).
	Name   string
	Faults []Fault
	Pods   []*Pod
	// Edges are the calls between services with their latency each minute
	// as the server's side saw it (metric/destination_50.csv, Online
	// Boutique) and as the client's did (metric/source_50.csv); nil when
	// the day has none.
	Edges []*Edge
	// logs are the day's log lines (log/*.csv) in time order; nil when the
	// day has none.
	logs []LogLine
	// traces are the day's spans (trace/*.csv), a file (a minute) each;
	// nil when the day has none.
	traces []traceFile
	// Notes are the quirks found and how they were handled, one sentence
	// each.
	Notes []string
}

// ServiceOf returns the service of a pod name: a Deployment's pod
// (checkoutservice-578fcf4766-9csqn) without its two suffixes.
func ServiceOf(pod string) string {
	parts := strings.Split(pod, "-")
	if len(parts) < 3 {
		return pod
	}
	return strings.Join(parts[:len(parts)-2], "-")
}

// Load reads a day directory.
func Load(dir string) (*Day, error) {
	d := &Day{Name: filepath.Base(filepath.Clean(dir))}
	lists, err := filepath.Glob(filepath.Join(dir, "*-fault_list.json"))
	if err != nil {
		return nil, err
	}
	if len(lists) != 1 {
		return nil, fmt.Errorf("%s: want one *-fault_list.json, found %d", dir, len(lists))
	}
	if err := d.readFaults(lists[0]); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "metric", "*_metric.csv"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no metric/*_metric.csv", dir)
	}
	slices.Sort(files)
	shifted, zeroSuccess := 0, 0
	for _, f := range files {
		p, off, err := readPod(f)
		if err != nil {
			return nil, err
		}
		if off {
			shifted++
		}
		if allZero(p.Columns[successColumn]) {
			zeroSuccess++
		}
		d.Pods = append(d.Pods, p)
	}
	if shifted > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d of %d metric files have a TimeStamp column that disagrees with their Time column: rows are timed by Time", shifted, len(files)))
	}
	if zeroSuccess > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%s is 0 in every row of %d of %d metric files", successColumn, zeroSuccess, len(files)))
	}
	if err := d.readLogs(filepath.Join(dir, "log")); err != nil {
		return nil, err
	}
	if err := d.readEdges(filepath.Join(dir, "metric", "destination_50.csv"), filepath.Join(dir, "metric", "source_50.csv")); err != nil {
		return nil, err
	}
	if err := d.readTraces(filepath.Join(dir, "trace")); err != nil {
		return nil, err
	}
	for _, f := range d.Faults {
		if d.Pod(f.Pod) == nil {
			return nil, fmt.Errorf("%s: fault at %s injects pod %s, which has no metric file", lists[0], f.At.Format(time.DateTime), f.Pod)
		}
	}
	return d, nil
}

// Edge is one call from a service to another, and its latency (the
// median, seconds) at each row: as the server's side measured it, and as
// the client's did (NaN where the day has no client side, or no row of it
// within 30 s of the server side's).
type Edge struct {
	Client, Server string
	Times          []time.Time
	Latency        []float64
	ClientLatency  []float64
}

// readEdges reads the per-call latencies of destination_50.csv (the
// server's side: the callee's proxy reports them) and, where it is there,
// source_50.csv (the client's side: the caller's proxy), each a Time
// column and one column client_server per call; a client-side row is the
// one within 30 s of the server side's (the two files' rows are written
// apart by a fraction of a second).
func (d *Day) readEdges(path, clientPath string) error {
	edges, err := readEdgeFile(path)
	if err != nil || edges == nil {
		return err
	}
	clients, err := readEdgeFile(clientPath)
	if err != nil {
		return err
	}
	byName := map[[2]string]*Edge{}
	for _, e := range clients {
		byName[[2]string{e.Client, e.Server}] = e
	}
	for _, e := range edges {
		e.ClientLatency = make([]float64, len(e.Times))
		c := byName[[2]string{e.Client, e.Server}]
		k := 0
		for i, t := range e.Times {
			e.ClientLatency[i] = math.NaN()
			if c == nil {
				continue
			}
			for k < len(c.Times) && c.Times[k].Before(t.Add(-30*time.Second)) {
				k++
			}
			if k < len(c.Times) && c.Times[k].Sub(t).Abs() <= 30*time.Second {
				e.ClientLatency[i] = c.Latency[k]
			}
		}
	}
	d.Edges = edges
	return nil
}

// readEdgeFile reads one file of per-call latencies; nil when there is no
// such file.
func readEdgeFile(path string) ([]*Edge, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	head := recs[0]
	tCol := slices.IndexFunc(head, func(h string) bool { return strings.EqualFold(h, "time") })
	if tCol < 0 {
		return nil, fmt.Errorf("%s: the header has no time column", path)
	}
	var out []*Edge
	for c, h := range head {
		client, server, ok := strings.Cut(h, "_")
		if c == tCol || !ok || strings.EqualFold(h, "timestamp") {
			continue
		}
		e := &Edge{Client: client, Server: server}
		for i, rec := range recs[1:] {
			t, err := parseTime(rec[tCol])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: time: %w", path, i+2, err)
			}
			v := math.NaN()
			if s := strings.TrimSpace(rec[c]); s != "" {
				if v, err = strconv.ParseFloat(s, 64); err != nil {
					return nil, fmt.Errorf("%s:%d: %s: %q is not a number", path, i+2, h, s)
				}
			}
			e.Times = append(e.Times, t)
			e.Latency = append(e.Latency, v)
		}
		out = append(out, e)
	}
	return out, nil
}

// successColumn is the success rate, 0 throughout the data set.
const successColumn = "PodSuccessRate(%)"

// Pod returns the pod of that name, nil if none.
func (d *Day) Pod(name string) *Pod {
	for _, p := range d.Pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// faultJSON is one entry of a fault list.
type faultJSON struct {
	InjectTime      string `json:"inject_time"`
	InjectTimestamp string `json:"inject_timestamp"`
	InjectPod       string `json:"inject_pod"`
	InjectType      string `json:"inject_type"`
}

func (d *Day) readFaults(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var byHour map[string][]faultJSON
	if err := json.Unmarshal(data, &byHour); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	off := 0
	for _, fs := range byHour {
		for _, f := range fs {
			at, err := time.Parse(time.DateTime, f.InjectTime)
			if err != nil {
				return fmt.Errorf("%s: inject_time %q: %w", path, f.InjectTime, err)
			}
			if f.InjectPod == "" || f.InjectType == "" {
				return fmt.Errorf("%s: the fault at %s has no inject_pod or inject_type", path, f.InjectTime)
			}
			if ts, err := strconv.ParseInt(f.InjectTimestamp, 10, 64); err != nil || ts != at.Unix() {
				off++
			}
			d.Faults = append(d.Faults, Fault{At: at, Pod: f.InjectPod, Service: ServiceOf(f.InjectPod), Type: f.InjectType})
		}
	}
	if len(d.Faults) == 0 {
		return fmt.Errorf("%s: no faults", path)
	}
	slices.SortFunc(d.Faults, func(a, b Fault) int { return a.At.Compare(b.At) })
	if off > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d of %d faults have an inject_timestamp other than their inject_time: inject_time is used", off, len(d.Faults)))
	}
	return nil
}

// readPod reads one metric file; off tells whether its TimeStamp column
// disagrees with its Time column.
func readPod(path string) (_ *Pod, off bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return nil, false, fmt.Errorf("%s: header: %w", path, err)
	}
	head = slices.Clone(head) // the reader reuses its record
	timeCol, stampCol, podCol := slices.Index(head, "Time"), slices.Index(head, "TimeStamp"), slices.Index(head, "PodName")
	if timeCol < 0 || podCol < 0 {
		return nil, false, fmt.Errorf("%s: the header has no Time or PodName column", path)
	}
	p := &Pod{Columns: map[string][]float64{}}
	var cols []int
	for i, h := range head {
		if i != timeCol && i != stampCol && i != podCol {
			cols = append(cols, i)
			p.Order = append(p.Order, h)
		}
	}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		t, err := parseTime(rec[timeCol])
		if err != nil {
			return nil, false, fmt.Errorf("%s:%d: Time: %w", path, line, err)
		}
		if n := len(p.Times); n > 0 && !t.After(p.Times[n-1]) {
			return nil, false, fmt.Errorf("%s:%d: Time %s is not after the row before's", path, line, t.Format(time.RFC3339))
		}
		if stampCol >= 0 && !off {
			if ts, err := strconv.ParseFloat(rec[stampCol], 64); err != nil || math.Abs(ts-float64(t.Unix())) > 60 {
				off = true
			}
		}
		if p.Name == "" {
			p.Name = rec[podCol]
		}
		p.Times = append(p.Times, t)
		for k, c := range cols {
			v := math.NaN()
			if s := strings.TrimSpace(rec[c]); s != "" {
				if v, err = strconv.ParseFloat(s, 64); err != nil {
					return nil, false, fmt.Errorf("%s:%d: %s: %q is not a number", path, line, head[c], s)
				}
			}
			p.Columns[p.Order[k]] = append(p.Columns[p.Order[k]], v)
		}
	}
	if len(p.Times) == 0 {
		return nil, false, fmt.Errorf("%s: no rows", path)
	}
	p.Service = ServiceOf(p.Name)
	return p, off, nil
}

// readLogs reads the lines of dir's log files (Timestamp, TimeUnixNano,
// Node, PodName, Container, TraceID, SpanID, Log: the container's JSON
// line, whose "log" is "16:42:22.382 INFO  t.s.TravelServiceImpl#532 ...").
// A line that two files hold (their minutes overlap by a second or so) is
// kept once.
func (d *Day) readLogs(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil || len(files) == 0 {
		return err
	}
	slices.Sort(files)
	var st logStats
	seen := map[logKey]bool{}
	for _, path := range files {
		if err := d.readLogFile(path, &st, seen); err != nil {
			return err
		}
	}
	slices.SortStableFunc(d.logs, func(a, b LogLine) int { return a.Time.Compare(b.Time) })
	if st.damaged > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d rows of the log files are damaged CSV (two lines run together): skipped", st.damaged))
	}
	if st.unparsed > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d of %d log lines are not a container's JSON line: kept as they are", st.unparsed, st.lines))
	}
	if st.repeated > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d log lines are in two files (their minutes overlap): kept once", st.repeated))
	}
	return nil
}

// LogLine is one line a container wrote.
type LogLine struct {
	Time time.Time
	Pod  string
	// Trace and Span are the ids the line names (zero when none parses).
	Trace pcommon.TraceID
	Span  pcommon.SpanID
	// Body is the line as the container wrote it, without its newline.
	Body string
}

// logKey tells a line from another.
type logKey struct {
	ns        int64
	pod, body string
}

// logStats counts what readLogFile read.
type logStats struct{ lines, unparsed, damaged, repeated int }

func (d *Day) readLogFile(path string, st *logStats, seen map[logKey]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return fmt.Errorf("%s: header: %w", path, err)
	}
	head = slices.Clone(head)
	tCol, podCol, logCol := slices.Index(head, "TimeUnixNano"), slices.Index(head, "PodName"), slices.Index(head, "Log")
	if tCol < 0 || podCol < 0 || logCol < 0 {
		return fmt.Errorf("%s: the header has no TimeUnixNano, PodName or Log column", path)
	}
	traceCol, spanCol := slices.Index(head, "TraceID"), slices.Index(head, "SpanID")
	pods := map[string]string{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			st.damaged++
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		ns, err := strconv.ParseInt(rec[tCol], 10, 64)
		if err != nil {
			line, _ := r.FieldPos(tCol)
			return fmt.Errorf("%s:%d: TimeUnixNano %q is not a number", path, line, rec[tCol])
		}
		var entry struct {
			Log string `json:"log"`
		}
		body := rec[logCol]
		if json.Unmarshal([]byte(rec[logCol]), &entry) != nil {
			st.unparsed++
		} else {
			body = strings.TrimRight(entry.Log, "\r\n")
		}
		st.lines++
		pod, ok := pods[rec[podCol]]
		if !ok {
			pod = strings.Clone(rec[podCol])
			pods[pod] = pod
		}
		k := logKey{ns, pod, body}
		if seen[k] {
			st.repeated++
			continue
		}
		seen[k] = true
		ll := LogLine{Time: time.Unix(0, ns).UTC(), Pod: pod, Body: strings.Clone(body)}
		if traceCol >= 0 && !decodeID(ll.Trace[:], rec[traceCol]) {
			ll.Trace = pcommon.TraceID{} // the line names no trace
		}
		if spanCol >= 0 && !decodeID(ll.Span[:], rec[spanCol]) {
			ll.Span = pcommon.SpanID{}
		}
		d.logs = append(d.logs, ll)
	}
}

// parseTime reads a Time cell: Go's time.Time.String ("2022-08-22
// 03:51:19.607158889 +0000 UTC m=+0.113112869").
func parseTime(s string) (time.Time, error) {
	if i := strings.Index(s, " m="); i >= 0 {
		s = s[:i]
	}
	return time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", s)
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return len(v) > 0
}
