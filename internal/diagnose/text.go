package diagnose

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// ANSI colours of the page on a terminal.
const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiYel   = "\x1b[33m"
	ansiDim   = "\x1b[2m"
)

// maxTextItems is how many causes and findings the page shows; --json has
// them all.
const maxTextItems = 5

// WriteText writes the report as the page an operator reads: the verdict,
// the symptoms, the ranked causes with a line of evidence and the action
// each, the findings and the warnings. color adds ANSI colours (for a
// terminal only).
func WriteText(w io.Writer, r *Report, color bool) error {
	bw := bufio.NewWriter(w)
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	verdict := paint(ansiGreen+ansiBold, "healthy")
	if !r.Healthy {
		verdict = paint(ansiRed+ansiBold, "NOT HEALTHY")
	}
	fmt.Fprintf(bw, "Vigil diagnosis at %s — %s\n", r.At.UTC().Format("2006-01-02 15:04:05 MST"), verdict)
	if len(r.Causes) > 0 {
		fmt.Fprintf(bw, "\n%s\n", paint(ansiBold, r.Causes[0].Summary))
	}
	if len(r.Symptoms) > 0 {
		fmt.Fprintf(bw, "\n%s\n", paint(ansiBold, "Symptoms"))
		for _, s := range r.Symptoms {
			fmt.Fprintf(bw, "  %-22s %-40s since %s\n", s.Kind, formatEntity(s.Entity), s.Since.UTC().Format(time.TimeOnly))
			fmt.Fprintf(bw, "  %s\n", paint(ansiDim, "  "+s.Summary))
		}
	}
	writeCauses(bw, "Probable causes", r.Causes, paint)
	writeCauses(bw, "Findings", r.Findings, paint)
	if len(r.Symptoms) == 0 && len(r.Causes) == 0 && len(r.Findings) == 0 {
		fmt.Fprintf(bw, "\nNo symptom, no cause, no finding.\n")
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(bw, "\n%s\n", paint(ansiYel, "Warnings"))
		for _, w := range r.Warnings {
			fmt.Fprintf(bw, "  - %s\n", w)
		}
	}
	return bw.Flush()
}

func writeCauses(bw *bufio.Writer, title string, cs []Cause, paint func(code, s string) string) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(bw, "\n%s\n", paint(ansiBold, title))
	for i, c := range cs {
		if i == maxTextItems {
			fmt.Fprintf(bw, "  … and %d more (--json lists them all)\n", len(cs)-i)
			break
		}
		conf := fmt.Sprintf("%.2f", c.Confidence)
		if c.Confidence >= 0.5 {
			conf = paint(ansiRed, conf)
		}
		fmt.Fprintf(bw, "  %d. %s  %-28s %s", c.Rank, conf, c.Kind, formatEntity(c.Entity))
		if c.Since != nil {
			fmt.Fprintf(bw, "  since %s", c.Since.UTC().Format(time.TimeOnly))
		}
		fmt.Fprintf(bw, "\n     %s\n", c.Summary)
		for j, e := range c.Evidence {
			if j == maxTextEvidence {
				fmt.Fprintf(bw, "               … and %d more\n", len(c.Evidence)-j)
				break
			}
			fmt.Fprintf(bw, "     evidence: %s: %s\n", e.Signal, e.Summary)
		}
		if c.Action != "" {
			fmt.Fprintf(bw, "     action:   %s\n", c.Action)
		}
	}
}

// maxTextEvidence is how many lines of evidence the page gives a cause
// (the metric and the log that show the same fault, say).
const maxTextEvidence = 3

// formatEntity writes an entity as key=value pairs, widest key first.
func formatEntity(e Entity) string {
	order := []string{"namespace", "workload", "node", "gpu", "gpu_instance", "uuid", "pod", "container", "service", "model", "tenant"}
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		if v, ok := e[k]; ok {
			parts = append(parts, k+"="+v)
			seen[k] = true
		}
	}
	for _, k := range sortedKeys(e) {
		if !seen[k] {
			parts = append(parts, k+"="+e[k])
		}
	}
	return strings.Join(parts, " ")
}
