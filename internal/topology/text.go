package topology

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes t as an indented tree: each node with the names other
// sources give it, its GPUs (model, health hint and the pods using each),
// and its GPU or model-serving pods; then the workloads and models.
// Warnings are not part of it (commands print them on stderr).
func WriteText(w io.Writer, t *Topology) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "at %s: %s\n", t.At.UTC().Format(time.RFC3339), summary(t))
	for _, n := range t.Nodes {
		fmt.Fprintln(ew)
		writeNode(ew, n)
	}
	if len(t.Workloads) > 0 {
		fmt.Fprintln(ew, "\nworkloads")
		rows := make([][]string, 0, len(t.Workloads))
		for _, wl := range t.Workloads {
			rows = append(rows, []string{wl.Namespace, wl.Kind + "/" + wl.Name, cmpOr(wl.Role, "-"), workloadDetail(wl)})
		}
		table(ew, "  ", rows)
	}
	if len(t.Models) > 0 {
		fmt.Fprintln(ew, "\nmodels")
		rows := make([][]string, 0, len(t.Models))
		for _, m := range t.Models {
			rows = append(rows, []string{m.Namespace, m.Name, modelDetail(m)})
		}
		table(ew, "  ", rows)
	}
	return ew.err
}

// errWriter keeps the first write error and skips writes after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// table writes rows with aligned columns, each line after indent.
func table(w *errWriter, indent string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		for len(r) > 1 && r[len(r)-1] == "" {
			r = r[:len(r)-1]
		}
		fmt.Fprintln(tw, indent+strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
}

// summary counts what the tree holds.
func summary(t *Topology) string {
	gpus, pods := 0, 0
	for _, n := range t.Nodes {
		gpus += len(n.GPUs)
		pods += len(n.Pods)
	}
	return strings.Join([]string{
		plural(len(t.Nodes), "node"), plural(gpus, "GPU"), plural(pods, "pod"),
		plural(len(t.Workloads), "workload"), plural(len(t.Models), "model"),
	}, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func writeNode(w *errWriter, n *Node) {
	head := "node " + n.Name
	if n.Name == "" {
		head = "node ? (unresolved: " + n.Unresolved + ")"
	}
	var facts []string
	if n.Ready != nil {
		facts = append(facts, map[bool]string{true: "ready", false: "not ready"}[*n.Ready])
	}
	if n.GPUCapacity > 0 {
		facts = append(facts, "capacity "+plural(n.GPUCapacity, "GPU"))
	}
	if n.Health != "" {
		facts = append(facts, string(n.Health))
	}
	if len(facts) > 0 {
		head += "  " + strings.Join(facts, ", ")
	}
	if n.Reason != "" {
		head += "  — " + n.Reason
	}
	fmt.Fprintln(w, head)
	if names := identityText(n); names != "" {
		fmt.Fprintln(w, "  named by "+names)
	}
	var rows [][]string
	for _, g := range n.GPUs {
		rows = append(rows, []string{"gpu " + g.Index, cmpOr(g.Model, "?"), string(g.Health), gpuDetail(g.Pods, g.Reason)})
		for _, inst := range g.Instances {
			rows = append(rows, []string{"  mig " + inst.ID, cmpOr(inst.Profile, "?"), "", gpuDetail(inst.Pods, "")})
		}
	}
	table(w, "  ", rows)
	rows = rows[:0]
	other := 0
	for _, p := range n.Pods {
		if len(p.GPUs) == 0 && p.GPURequest == 0 && p.Model == "" {
			other++
			continue
		}
		rows = append(rows, []string{"pod " + p.Namespace + "/" + p.Pod, podWorkload(p), podDetail(p)})
	}
	table(w, "  ", rows)
	if other > 0 {
		fmt.Fprintf(w, "  and %s without GPUs\n", plural(other, "other pod"))
	}
}

// identityText lists the names sources give a node, but the plain
// kube-state-metrics node name.
func identityText(n *Node) string {
	var parts []string
	for _, id := range n.Identities {
		if id.Source == sourceKSM && id.Value == n.Name {
			continue
		}
		s := id.Source + " " + id.Label + "=" + id.Value
		if id.Via != "" {
			s += " (" + id.Via + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func gpuDetail(refs []PodRef, reason string) string {
	var parts []string
	for _, r := range refs {
		s := r.Namespace + "/" + r.Pod
		if r.By == AttributedByRequests {
			s += " (by requests)"
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, ", ")
	if reason != "" {
		if out != "" {
			out += "  "
		}
		out += "— " + reason
	}
	return out
}

func podWorkload(p *Pod) string {
	if p.Workload == "" {
		return "-"
	}
	return p.WorkloadKind + "/" + p.Workload
}

func podDetail(p *Pod) string {
	var parts []string
	if len(p.GPUs) > 0 {
		parts = append(parts, map[bool]string{true: "GPU ", false: "GPUs "}[len(p.GPUs) == 1]+strings.Join(p.GPUs, ","))
	} else if p.GPURequest > 0 {
		parts = append(parts, fmt.Sprintf("requests %s", plural(p.GPURequest, "GPU")))
	}
	if p.Model != "" {
		parts = append(parts, "model "+p.Model)
	}
	if len(p.Services) > 0 {
		parts = append(parts, "service "+strings.Join(p.Services, ","))
	}
	if p.Phase != "" && p.Phase != "Running" {
		parts = append(parts, p.Phase)
	}
	return strings.Join(parts, "  ")
}

func workloadDetail(w *Workload) string {
	s := plural(len(w.Pods), "pod")
	if len(w.Nodes) > 0 {
		s += " on " + strings.Join(w.Nodes, ", ")
	}
	if w.GPUs > 0 {
		s += ", " + plural(w.GPUs, "GPU")
	}
	if len(w.Models) > 0 {
		s += ", model " + strings.Join(w.Models, ", ")
	}
	if len(w.Services) > 0 {
		s += ", service " + strings.Join(w.Services, ", ")
	}
	return s
}

func modelDetail(m *Model) string {
	s := plural(len(m.Pods), "pod")
	if len(m.Workloads) > 0 {
		s += " of " + strings.Join(m.Workloads, ", ")
	}
	return s
}
