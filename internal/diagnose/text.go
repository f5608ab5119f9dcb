package diagnose

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/catalog"
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

// WriteText writes the report as the page an operator reads: the verdict
// (BLIND, with a hint, when no telemetry Vigil knows was read) and a line
// of what the diagnosis saw and is blind to, the symptoms, the ranked
// causes with a line of evidence and the action each, the findings and
// the warnings. color adds ANSI colours (for a
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
	blind := r.Blind()
	switch {
	case blind:
		verdict = paint(ansiYel+ansiBold, "BLIND") + ": " + blindReason(r.Coverage) + "; nothing can be said about the cluster's health"
	case !r.Healthy:
		verdict = paint(ansiRed+ansiBold, "NOT HEALTHY")
	}
	fmt.Fprintf(bw, "Vigil diagnosis at %s — %s\n", r.At.UTC().Format("2006-01-02 15:04:05 MST"), verdict)
	if blind {
		fmt.Fprintf(bw, "%s\n", paint(ansiDim, blindHint))
	} else {
		fmt.Fprintf(bw, "%s\n", paint(ansiDim, coverageLine(r.Coverage)))
	}
	if len(r.Causes) > 0 {
		fmt.Fprintf(bw, "\n%s\n", paint(ansiBold, r.Causes[0].Summary))
	}
	if len(r.Symptoms) > 0 {
		fmt.Fprintf(bw, "\n%s\n", paint(ansiBold, "Symptoms"))
		for _, s := range r.Symptoms {
			when := "since " + s.Since.UTC().Format(time.TimeOnly)
			if s.ResolvedAt != nil {
				when = fmt.Sprintf("%s–%s, resolved", s.Since.UTC().Format(time.TimeOnly), s.ResolvedAt.UTC().Format(time.TimeOnly))
			}
			fmt.Fprintf(bw, "  %-22s %-40s %s\n", s.Kind, formatEntity(s.Entity), when)
			fmt.Fprintf(bw, "  %s\n", paint(ansiDim, "  "+s.Summary))
		}
	}
	headline := ""
	if len(r.Causes) > 0 {
		headline = r.Causes[0].Summary
	}
	writeCauses(bw, "Probable causes", r.Causes, headline, paint)
	writeCauses(bw, "Findings", r.Findings, "", paint)
	if len(r.Symptoms) == 0 && len(r.Causes) == 0 && len(r.Findings) == 0 && !blind {
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

// writeCauses writes a list of causes or findings, each with its evidence
// and action; the page's headline (the first cause's summary) is not
// repeated under its cause.
func writeCauses(bw *bufio.Writer, title string, cs []Cause, headline string, paint func(code, s string) string) {
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
		fmt.Fprintln(bw)
		if i > 0 || c.Summary != headline {
			fmt.Fprintf(bw, "     %s\n", c.Summary)
		}
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

// blindHint is what the page of a blind diagnosis suggests.
const blindHint = "Hint: check what Vigil reads (the --input files, the --prometheus or --server URL) and the scrape's relabelling: " +
	"Vigil knows dcgm-exporter's DCGM_*, kube-state-metrics' kube_*, node-exporter's node_* and the inference servers' own names; " +
	"to rank the entities of any metrics, name their label with --entity-label (e.g. --entity-label service)."

// blindReason is the reason of the spot that blinds the whole cluster.
func blindReason(c Coverage) string {
	for _, b := range c.Blind {
		if len(b.Entity) == 0 {
			return b.Reason
		}
	}
	return ""
}

// maxTextBlind is how many blind spots the page's coverage line names.
const maxTextBlind = 3

// countNouns are the kinds of Layer.Counts in the order the page lists
// them, with their nouns.
var countNouns = [...]struct{ key, noun string }{
	{"gpu", "GPU"}, {"node", "node"}, {"pod", "pod"}, {"server", "server"}, {"model", "model"}, {"service", "service"},
}

// coverageLine is the page's line of what the diagnosis saw, layer by
// layer with its vocabularies, and what Vigil is blind to.
func coverageLine(c Coverage) string {
	var parts []string
	ls := c.Layers
	for _, l := range []Layer{ls.GPU, ls.Node, ls.Kubernetes, ls.Inference, ls.RequestPath, ls.Logs} {
		if l.Entities == 0 && len(l.Vocabularies) == 0 {
			continue
		}
		var counts []string
		for _, cn := range countNouns {
			if n := l.Counts[cn.key]; n > 0 {
				counts = append(counts, countText(n, cn.noun))
			}
		}
		what := strings.Join(counts, " and ")
		if what == "" {
			what = "no entity"
		}
		if len(l.Vocabularies) > 0 {
			what += " (" + strings.Join(l.Vocabularies, ", ") + ")"
		}
		parts = append(parts, what)
	}
	if g := ls.Generic; g != nil {
		for _, label := range sortedKeys(g.Counts) {
			parts = append(parts, fmt.Sprintf("%s (--entity-label %s)", countText(g.Counts[label], label), label))
		}
	}
	line := "Seen: " + strings.Join(parts, ", ")
	if len(parts) == 0 {
		line = "Seen: nothing in a vocabulary Vigil knows"
	}
	var spots []string
	for _, b := range c.Blind {
		if len(b.Entity) == 0 {
			continue
		}
		s := b.Entity[catalog.KeyNode] + "'s GPUs"
		if gpu, ok := b.Entity[catalog.KeyGPU]; ok {
			s = b.Entity[catalog.KeyNode] + " GPU " + gpu
		}
		if b.Since != nil {
			s += " since " + b.Since.UTC().Format(time.TimeOnly)
		}
		spots = append(spots, s)
	}
	if len(spots) > maxTextBlind {
		spots = append(spots[:maxTextBlind], fmt.Sprintf("and %d more", len(spots)-maxTextBlind))
	}
	if len(spots) > 0 {
		line += "; blind to " + strings.Join(spots, ", ")
	}
	return line
}

// countText is "1 GPU", "80 GPUs".
func countText(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
