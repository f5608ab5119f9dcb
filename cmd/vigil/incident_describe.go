package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/incident"
)

// describeIncident prints one incident of a running Vigil in full
// (/api/v1/incidents/{id}), or with asJSON the incident as one object.
func describeIncident(ctx context.Context, e *env, server, id string, asJSON bool) error {
	var i incident.Incident
	raw, err := getAPI(ctx, server, "/api/v1/incidents/"+url.PathEscape(id), nil, &i)
	if errors.Is(err, errNotFound) {
		return usagef("incidents: %s has no incident %q (vigil incidents lists them)", server, id)
	}
	if err != nil {
		return err
	}
	if asJSON {
		_, err := e.stdout.Write(raw)
		return err
	}
	return printIncident(e.stdout, i)
}

// printIncident writes one incident as kubectl describe writes an object:
// aligned fields, then its causes with their evidence, its history and
// its notifications.
func printIncident(w io.Writer, i incident.Incident) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field("ID", i.ID)
	field("Kind", i.Kind)
	field("Entity", entityText(i.Entity))
	field("Severity", i.Severity)
	field("State", i.State)
	field("Summary", i.Summary)
	field("Source", i.Source)
	field("Since", describeTime(i.Since))
	field("Opened", describeTime(i.OpenedAt))
	field("Last seen", describeTime(i.LastSeen))
	if i.Resolved != nil {
		field("Resolved", describeTime(*i.Resolved))
	}
	field("Revision", fmt.Sprint(i.Revision))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Causes:")
	if len(i.Causes) == 0 {
		fmt.Fprintln(w, "  <none>")
	}
	for _, c := range i.Causes {
		writeDescribedCause(w, c)
	}
	fmt.Fprintln(w, "History:")
	if len(i.History) == 0 {
		fmt.Fprintln(w, "  <none>")
	}
	for _, h := range i.History {
		fmt.Fprintf(w, "  %s  %s\n", describeTime(h.At), h.Headline)
	}
	fmt.Fprintln(w, "Notifications:")
	tw = tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "  Starts at:\t%s\n", describeTime(i.StartsAt))
	last := "never"
	if !i.LastSent.IsZero() {
		last = fmt.Sprintf("%s (revision %d)", describeTime(i.LastSent), i.SentRevision)
	}
	fmt.Fprintf(tw, "  Last sent:\t%s\n", last)
	if !i.ResolvedSent.IsZero() {
		fmt.Fprintf(tw, "  Resolution sent:\t%s\n", describeTime(i.ResolvedSent))
	}
	return tw.Flush()
}

// writeDescribedCause writes one ranked cause: its line, its summary, each
// piece of evidence with the PromQL that shows it, and the action.
func writeDescribedCause(w io.Writer, c diagnose.Cause) {
	since := ""
	if c.Since != nil {
		since = "  since " + describeTime(*c.Since)
	}
	fmt.Fprintf(w, "  %d. %s  %s  confidence %.2f%s\n", c.Rank, c.Kind, entityText(c.Entity), c.Confidence, since)
	fmt.Fprintf(w, "     %s\n", c.Summary)
	for _, ev := range c.Evidence {
		fmt.Fprintf(w, "     evidence: %s: %s\n", ev.Signal, ev.Summary)
		if ev.Query != "" {
			fmt.Fprintf(w, "       query: %s\n", strings.Join(strings.Fields(ev.Query), " "))
		}
	}
	if c.Action != "" {
		fmt.Fprintf(w, "     action: %s\n", c.Action)
	}
}

func describeTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 MST")
}
