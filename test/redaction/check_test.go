package redaction

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// spansByCase indexes the spans carrying case.id.
func spansByCase(tds ...ptrace.Traces) map[string]spanAt {
	out := map[string]spanAt{}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if v, ok := sp.Attributes().Get("case.id"); ok {
						out[v.Str()] = spanAt{rs, ss, sp}
					}
				}
			}
		}
	}
	return out
}

// logsByCase indexes the log records carrying case.id.
func logsByCase(lds ...plog.Logs) map[string]logAt {
	out := map[string]logAt{}
	for _, ld := range lds {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if v, ok := lr.Attributes().Get("case.id"); ok {
						out[v.Str()] = logAt{rl, lr}
					}
				}
			}
		}
	}
	return out
}

// readBack is what an output gave back for each case: found says whether
// the case's span or log record is there, got the value in its position.
func readBack(c *tcase, spans map[string]spanAt, logs map[string]logAt) (got string, found bool) {
	if c.pos.isTraces() {
		at, ok := spans[c.id]
		if !ok {
			return "", false
		}
		return c.pos.getSpan(at, c.key), true
	}
	at, ok := logs[c.id]
	if !ok {
		return "", false
	}
	return c.pos.getLog(at, c.key), true
}

// checkArrived requires every case in an output and returns how many
// look-alikes changed, logging each.
func checkArrived(t *testing.T, output string, cases []*tcase, spans map[string]spanAt, logs map[string]logAt) (changed, benign int) {
	t.Helper()
	for _, c := range cases {
		got, found := readBack(c, spans, logs)
		if !found {
			t.Errorf("%s: case %s (%s in %s) is missing", output, c.id, c.kind, c.pos.name)
			continue
		}
		if c.secret {
			continue
		}
		benign++
		if got != c.placed {
			changed++
			t.Logf("%s: look-alike %s in %s changed: %q → %q", output, c.kind, c.pos.name, c.placed, got)
		}
	}
	return changed, benign
}

// needle is a string that must not appear anywhere: a secret's core or
// one of its distinctive substrings.
type needle struct {
	s string
	c *tcase
}

// leak is a needle found in an output.
type leak struct {
	class  string
	output string
	c      *tcase
	sub    string
}

// scanner finds every needle in the outputs it is shown: it slides a
// window of the shortest needle's length over the output and looks the
// window up among the needles' prefixes, so an output is read once
// however many needles there are.
type scanner struct {
	width    int
	byPrefix map[string][]needle
	needles  int
	// bytes counts what was scanned per class of output.
	bytes   map[string]int
	outputs map[string]int
	seen    map[string]bool
	leaks   []leak
}

func newScanner(cases []*tcase) *scanner {
	s := &scanner{width: 1 << 30, byPrefix: map[string][]needle{}, bytes: map[string]int{},
		outputs: map[string]int{}, seen: map[string]bool{}}
	var all []needle
	for _, c := range cases {
		for _, core := range c.cores {
			for _, sub := range redacttest.Distinctive(core) {
				all = append(all, needle{sub, c})
				s.width = min(s.width, len(sub))
			}
		}
	}
	for _, n := range all {
		p := n.s[:s.width]
		s.byPrefix[p] = append(s.byPrefix[p], n)
	}
	s.needles = len(all)
	return s
}

// scan looks for the needles in b, an output of class (e.g. "API") named
// output.
func (s *scanner) scan(class, output string, b []byte) {
	s.bytes[class] += len(b)
	s.outputs[class]++
	for i := 0; i+s.width <= len(b); i++ {
		ns, ok := s.byPrefix[string(b[i:i+s.width])]
		if !ok {
			continue
		}
		for _, n := range ns {
			if i+len(n.s) <= len(b) && string(b[i:i+len(n.s)]) == n.s {
				key := output + "\x00" + n.c.id
				if !s.seen[key] {
					s.seen[key] = true
					s.leaks = append(s.leaks, leak{class, output, n.c, n.s})
				}
			}
		}
	}
}

// summary describes what was scanned, per class of output.
func (s *scanner) summary() string {
	var classes []string
	for c := range s.bytes {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	var b strings.Builder
	for _, c := range classes {
		leaks := 0
		for _, l := range s.leaks {
			leaks += boolInt(l.class == c)
		}
		fmt.Fprintf(&b, "\n  %-22s %4d outputs, %9d bytes, %d secrets found", c, s.outputs[c], s.bytes[c], leaks)
	}
	return b.String()
}
