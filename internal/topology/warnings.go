package topology

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// maxExamples is how many examples one warning names before it counts the
// rest, so that a problem on a thousand nodes is one line, not a thousand.
const maxExamples = 5

// warnings collects messages, each with the entities it applies to. It is
// safe for concurrent use.
type warnings struct {
	mu       sync.Mutex
	order    []string
	examples map[string][]string
}

// add records msg about example (a node, a pod, a host name; empty when the
// message is about the whole cluster).
func (w *warnings) add(msg, example string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.examples == nil {
		w.examples = map[string][]string{}
	}
	ex, seen := w.examples[msg]
	if !seen {
		w.order = append(w.order, msg)
	}
	if example != "" && !slices.Contains(ex, example) {
		ex = append(ex, example)
	}
	w.examples[msg] = ex
}

// list renders every message with its examples, sorted: the sources are
// read concurrently, so the order they were seen in is not stable.
func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.Sort(w.order)
	out := make([]string, 0, len(w.order))
	for _, msg := range w.order {
		ex := w.examples[msg]
		if len(ex) == 0 {
			out = append(out, msg)
			continue
		}
		slices.SortFunc(ex, naturalCompare)
		shown := ex[:min(len(ex), maxExamples)]
		line := msg + ": " + strings.Join(shown, ", ")
		if rest := len(ex) - len(shown); rest > 0 {
			line += fmt.Sprintf(" and %d more", rest)
		}
		out = append(out, line)
	}
	return out
}
