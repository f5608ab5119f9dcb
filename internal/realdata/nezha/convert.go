package nezha

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/vigil-obs/vigil/internal/openmetrics"
)

// CaseOptions shape a case (doc.go).
type CaseOptions struct {
	// After is how long past the injection the diagnosis is (default 5m).
	// The case starts After past the previous injection, or where the data
	// does.
	After time.Duration
	// Graph adds the calls between services (Day.Edges) as the
	// OpenTelemetry servicegraph connector's series: per call and row, the
	// server's requests in that minute (its PodWorkload(Ops) × 60, 1 where
	// it has none) as traces_service_graph_request_total, and the call's
	// latency times them as traces_service_graph_request_server_seconds.
	Graph bool
	// NoMetrics leaves the pods' metric columns out, for a modality alone
	// (the logs are WriteLogs', the traces WriteTraces').
	NoMetrics bool
}

func (o CaseOptions) withDefaults() CaseOptions {
	if o.After <= 0 {
		o.After = 5 * time.Minute
	}
	return o
}

// Case is a fault as WriteCase wrote it.
type Case struct {
	Fault Fault
	// At is when to diagnose, Window how far back to look: the whole case.
	At     time.Time
	Window time.Duration
	// History is how much of the case lies before the injection.
	History time.Duration
	// Step is the step to diagnose at, as --step; 0 leaves it to the data.
	Step time.Duration
	// Series and Samples count what was written.
	Series, Samples int
}

// EntityLabel is the label that names a case's entities, for
// `vigil diagnose --entity-label`.
const EntityLabel = "service"

// WriteCase writes fault i of the day as OpenMetrics text: the real rows
// from After past the previous injection (a minute before this one when
// they are closer; or from the first row) to After past this one, every column of every pod a gauge with the labels service and
// pod (doc.go).
func (d *Day) WriteCase(w io.Writer, i int, o CaseOptions) (Case, error) {
	if i < 0 || i >= len(d.Faults) {
		return Case{}, fmt.Errorf("day %s has %d faults, not %d", d.Name, len(d.Faults), i+1)
	}
	o = o.withDefaults()
	f := d.Faults[i]
	from, to := d.first(), f.At.Add(o.After)
	if i > 0 {
		// Faults closer than After leave this one a minute of history
		// (a row), or half the time between them.
		prev := d.Faults[i-1].At
		gap := f.At.Sub(prev)
		from = later(from, prev.Add(min(o.After, max(gap-time.Minute, gap/2))))
	}
	if !from.Before(f.At) {
		return Case{}, fmt.Errorf("day %s: no row between %s and the injection at %s", d.Name, from.Format(time.DateTime), f.At.Format(time.DateTime))
	}
	c := Case{Fault: f, At: to, Window: to.Sub(from), History: f.At.Sub(from)}
	bw := bufio.NewWriter(w)
	// A family's samples must come together: column by column, then pod by
	// pod, each series in time order.
	var cols []string
	seen := map[string]bool{}
	for _, p := range d.Pods {
		for _, col := range p.Order {
			if !seen[col] {
				seen[col] = true
				cols = append(cols, col)
			}
		}
	}
	if o.NoMetrics {
		cols = nil
	}
	var buf []byte
	put := func(head string, t time.Time, v float64) {
		buf = append(buf[:0], head...)
		buf = openmetrics.AppendValue(buf, v)
		buf = append(buf, ' ')
		buf = openmetrics.AppendSeconds(buf, t.UnixMilli())
		buf = append(buf, '\n')
		_, _ = bw.Write(buf) // a bufio.Writer keeps its first error for Flush
	}
	inCase := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	podHead := func(name string, p *Pod, extra string) string {
		return name + "{" + EntityLabel + `="` + openmetrics.EscapeLabelValue(p.Service) + `",pod="` + openmetrics.EscapeLabelValue(p.Name) + `"` + extra + "} "
	}
	for _, fam := range families(cols) {
		if fam.quantiles == nil {
			fmt.Fprintf(bw, "# TYPE %s gauge\n", fam.name)
		} else {
			fmt.Fprintf(bw, "# TYPE %s summary\n", fam.name)
		}
		for _, p := range d.Pods {
			wrote := false
			for k, col := range fam.cols {
				vals, ok := p.Columns[col]
				if !ok {
					continue
				}
				extra := ""
				if fam.quantiles != nil {
					extra = `,quantile="` + fam.quantiles[k] + `"`
				}
				head := podHead(fam.name, p, extra)
				n := 0
				for i, t := range p.Times {
					if inCase(t) && !math.IsNaN(vals[i]) {
						put(head, t, vals[i])
						n++
					}
				}
				if n > 0 {
					c.Series++
					c.Samples += n
					wrote = true
				}
			}
			// A summary's _count: the requests its quantiles are of.
			ops, ok := p.Columns[workloadColumn]
			if fam.quantiles == nil || !wrote || !ok {
				continue
			}
			head := podHead(fam.name+"_count", p, "")
			total, n := 0.0, 0
			for i, t := range p.Times {
				if i > 0 && !math.IsNaN(ops[i]) {
					total += ops[i] * t.Sub(p.Times[i-1]).Seconds()
				}
				if inCase(t) {
					put(head, t, total)
					n++
				}
			}
			c.Series++
			c.Samples += n
		}
	}
	if o.Graph && d.Edges != nil {
		series, samples := d.writeGraph(bw, from, to)
		c.Series, c.Samples = c.Series+series, c.Samples+samples
	}
	bw.WriteString("# EOF\n")
	return c, bw.Flush()
}

// family is one metric family of the pods' columns: a gauge of one
// column, or a summary of the latency quantiles of one side (quantiles
// the labels of cols).
type family struct {
	name      string
	cols      []string
	quantiles []string
}

// latencyQuantile reads a latency quantile column
// ("PodClientLatencyP90(s)"): its summary's name and its quantile.
func latencyQuantile(col string) (name, q string, ok bool) {
	base, ok := strings.CutSuffix(col, "(s)")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(base, "LatencyP")
	if i < 0 || len(base) != i+len("LatencyP")+2 {
		return "", "", false
	}
	digits := base[i+len("LatencyP"):]
	if digits[0] < '0' || digits[0] > '9' || digits[1] < '0' || digits[1] > '9' {
		return "", "", false
	}
	return MetricName(base[:i+len("Latency")] + "(s)"), "0." + strings.TrimSuffix(digits, "0"), true
}

// families groups the columns into metric families, in column order: the
// latency quantiles of each side one summary, the others a gauge each.
func families(cols []string) []family {
	var out []family
	at := map[string]int{}
	for _, col := range cols {
		if name, q, ok := latencyQuantile(col); ok {
			if i, ok := at[name]; ok {
				out[i].cols = append(out[i].cols, col)
				out[i].quantiles = append(out[i].quantiles, q)
				continue
			}
			at[name] = len(out)
			out = append(out, family{name: name, cols: []string{col}, quantiles: []string{q}})
			continue
		}
		out = append(out, family{name: MetricName(col), cols: []string{col}})
	}
	return out
}

// workloadColumn is a pod's requests per second.
const workloadColumn = "PodWorkload(Ops)"

// writeGraph writes the calls of the case's rows (CaseOptions.Graph) and
// returns how many series and samples it wrote.
func (d *Day) writeGraph(bw *bufio.Writer, from, to time.Time) (series, samples int) {
	type edgeRows struct {
		head                             string
		ts                               []time.Time
		reqs, sum, count, cliSum, cliCnt []float64
		client                           bool
	}
	var edges []edgeRows
	for _, e := range d.Edges {
		var ops []float64
		var opsAt []time.Time
		for _, p := range d.Pods {
			if p.Service == e.Server {
				ops, opsAt = p.Columns[workloadColumn], p.Times
				break
			}
		}
		er := edgeRows{head: `{client="` + openmetrics.EscapeLabelValue(e.Client) + `",server="` + openmetrics.EscapeLabelValue(e.Server) + `"`}
		var cr, cs, cc, ks, kc float64
		k := 0
		for i, t := range e.Times {
			if t.Before(from) || t.After(to) {
				continue
			}
			n := 1.0
			for k < len(opsAt) && opsAt[k].Before(t.Add(-30*time.Second)) {
				k++
			}
			if k < len(ops) && opsAt[k].Sub(t).Abs() <= 30*time.Second && ops[k] > 0 {
				n = ops[k] * 60
			}
			cr += n
			if l := e.Latency[i]; !math.IsNaN(l) && l >= 0 {
				cs += l * n
				cc += n
			}
			if i < len(e.ClientLatency) {
				if l := e.ClientLatency[i]; !math.IsNaN(l) && l >= 0 {
					ks += l * n
					kc += n
					er.client = true
				}
			}
			er.ts = append(er.ts, t)
			er.reqs, er.sum, er.count = append(er.reqs, cr), append(er.sum, cs), append(er.count, cc)
			er.cliSum, er.cliCnt = append(er.cliSum, ks), append(er.cliCnt, kc)
		}
		if len(er.ts) > 0 {
			edges = append(edges, er)
		}
	}
	var buf []byte
	put := func(name, lbls string, ts []time.Time, vals []float64) {
		for i, t := range ts {
			buf = append(buf[:0], name...)
			buf = append(buf, lbls...)
			buf = openmetrics.AppendValue(buf, vals[i])
			buf = append(buf, ' ')
			buf = openmetrics.AppendSeconds(buf, t.UnixMilli())
			buf = append(buf, '\n')
			_, _ = bw.Write(buf)
			samples++
		}
		series++
	}
	fmt.Fprintf(bw, "# TYPE traces_service_graph_request counter\n")
	for _, e := range edges {
		put("traces_service_graph_request_total", e.head+"} ", e.ts, e.reqs)
	}
	fmt.Fprintf(bw, "# TYPE traces_service_graph_request_server_seconds histogram\n")
	for _, e := range edges {
		put("traces_service_graph_request_server_seconds_bucket", e.head+`,le="+Inf"} `, e.ts, e.count)
		put("traces_service_graph_request_server_seconds_sum", e.head+"} ", e.ts, e.sum)
		put("traces_service_graph_request_server_seconds_count", e.head+"} ", e.ts, e.count)
	}
	fmt.Fprintf(bw, "# TYPE traces_service_graph_request_client_seconds histogram\n")
	for _, e := range edges {
		if !e.client {
			continue
		}
		put("traces_service_graph_request_client_seconds_bucket", e.head+`,le="+Inf"} `, e.ts, e.cliCnt)
		put("traces_service_graph_request_client_seconds_sum", e.head+"} ", e.ts, e.cliSum)
		put("traces_service_graph_request_client_seconds_count", e.head+"} ", e.ts, e.cliCnt)
	}
	return series, samples
}

// first returns the time of the day's first row.
func (d *Day) first() time.Time {
	var t time.Time
	for _, p := range d.Pods {
		if len(p.Times) > 0 && (t.IsZero() || p.Times[0].Before(t)) {
			t = p.Times[0]
		}
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// units are the column suffixes' units in metric names.
var units = map[string]string{"%": "percent", "s": "seconds", "ms": "milliseconds", "m": "millicores", "Mi": "mebibytes", "Ops": "ops"}

// MetricName returns the metric a column becomes: nezha_ and the column in
// snake case, its unit spelled out (PodClientLatencyP90(s) →
// nezha_pod_client_latency_p90_seconds).
func MetricName(col string) string {
	base, unit := col, ""
	if i := strings.IndexByte(col, '('); i >= 0 && strings.HasSuffix(col, ")") {
		base, unit = col[:i], col[i+1:len(col)-1]
	}
	var b strings.Builder
	b.WriteString("nezha_")
	prevLower := false
	for _, r := range base {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	if unit != "" {
		u, ok := units[unit]
		if !ok {
			u = strings.ToLower(unit)
		}
		b.WriteByte('_')
		b.WriteString(u)
	}
	return b.String()
}
