package eval

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints every suite's tables: the scores per kind and overall,
// the healthy runs' false alarms, and the calibration table with its ECE.
// The same Result prints the same bytes.
func (r *Result) WriteText(w io.Writer) error {
	for i, t := range r.Suites {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := t.writeText(w); err != nil {
			return err
		}
	}
	return nil
}

func (t *Table) writeText(w io.Writer) error {
	horizon := t.Horizon.Duration().String()
	faults := t.Overall.Faults
	fmt.Fprintf(w, "suite %s: %d runs, %d faults, %d healthy\n\n", t.Suite, t.Runs, faults, t.Healthy.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "kind\tfaults\tAC@1\tAC@3\tP\tR\tF1\tTTD median\tTTD worst\tnot first in %s\n", horizon)
	row := func(k KindScore) {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%d\n", k.Kind, k.Faults, k.AC1, k.AC3,
			k.Precision, k.Recall, k.F1, ttdText(k.TTDMedian, k.Faults, horizon), ttdText(k.TTDWorst, k.Faults, horizon), k.TTDMissed)
	}
	for _, k := range t.Kinds {
		row(k)
	}
	row(t.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfalse calls (FP, healthy runs included): %d\n", t.Overall.FP)
	fmt.Fprintf(w, "healthy runs: %d, false alarms (not healthy): %d, with a cause or finding ≥ %.1f: %d\n\n",
		t.Healthy.Runs, t.Healthy.FalseAlarms, CallThreshold, t.Healthy.Confident)
	c := t.Calibration
	fmt.Fprintf(w, "calibration (%d causes and findings, all ranks, end of run)\n", c.Predictions)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "confidence\tn\tmean\taccuracy")
	for i, b := range c.Bins {
		closing := ")"
		if i == len(c.Bins)-1 {
			closing = "]"
		}
		if b.Count == 0 {
			fmt.Fprintf(tw, "[%.1f, %.1f%s\t0\t-\t-\n", b.Low, b.High, closing)
			continue
		}
		fmt.Fprintf(tw, "[%.1f, %.1f%s\t%d\t%.2f\t%.2f\n", b.Low, b.High, closing, b.Count, b.MeanConfidence, b.Accuracy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "ECE %.3f\n", c.ECE)
	return err
}

// ttdText prints a time to detect: "-" without faults, ">HORIZON" when it
// falls on a fault never ranked first within the horizon.
func ttdText(s *Seconds, faults int, horizon string) string {
	switch {
	case faults == 0:
		return "-"
	case s == nil:
		return ">" + horizon
	}
	return s.Duration().String()
}
