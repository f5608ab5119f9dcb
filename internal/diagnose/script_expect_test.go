package diagnose_test

// The expectations of the script tests, and the brief report their
// failures print.

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/diagnose"
)

// scriptBriefMax is how many causes (and findings) scriptBrief lists.
const scriptBriefMax = 6

// scriptBrief is a report in a few lines, for failure messages.
func scriptBrief(rep *diagnose.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  healthy=%t\n", rep.Healthy)
	for _, s := range rep.Symptoms {
		state := ""
		if s.ResolvedAt != nil {
			state = " resolved at " + s.ResolvedAt.Format(time.TimeOnly)
		}
		fmt.Fprintf(&b, "  symptom %s %s since %s%s: %s\n", s.Kind, scriptEntity(s.Entity), s.Since.Format(time.TimeOnly), state, s.Summary)
	}
	for _, group := range []struct {
		what string
		cs   []diagnose.Cause
	}{{"cause", rep.Causes}, {"finding", rep.Findings}} {
		for i, c := range group.cs {
			if i == scriptBriefMax {
				fmt.Fprintf(&b, "  … %d more %ss\n", len(group.cs)-i, group.what)
				break
			}
			fmt.Fprintf(&b, "  %s %d %s %s %.3f: %s\n", group.what, c.Rank, c.Kind, scriptEntity(c.Entity), c.Confidence, c.Summary)
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(&b, "  warning %s\n", w)
	}
	return b.String()
}

func scriptEntity(e diagnose.Entity) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e)) {
		parts = append(parts, k+"="+e[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// scriptBound is "confidence OP X".
var scriptBound = regexp.MustCompile(`^confidence(<=|>=|<|>|==)([0-9.]+)$`)

// scriptMatch is what an expectation selects: a kind ("any": every kind),
// entity keys (an empty value: the key is absent) and a confidence bound.
type scriptMatch struct {
	kind   string
	ent    map[string]string
	op     string
	bound  float64
	others []string // the words left: resolved, current, <=, case, NAME
}

// parseMatch reads "KIND [k=v...] [confidence OP X] [words...]".
func parseMatch(toks []string) (scriptMatch, error) {
	m := scriptMatch{ent: map[string]string{}}
	for i, tok := range toks {
		switch sub := scriptBound.FindStringSubmatch(tok); {
		case i == 0 && !strings.Contains(tok, "="):
			m.kind = tok
		case sub != nil:
			b, err := strconv.ParseFloat(sub[2], 64)
			if err != nil {
				return m, fmt.Errorf("bound %q: %w", tok, err)
			}
			m.op, m.bound = sub[1], b
		case strings.Contains(tok, "=") && !strings.ContainsAny(tok, "<>") && len(m.others) == 0:
			k, v, _ := strings.Cut(tok, "=")
			m.ent[k] = v
		default:
			m.others = append(m.others, tok)
		}
	}
	return m, nil
}

func compareOp(op string, a, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return math.Abs(a-b) < 1e-9
	}
	return false
}

// entityMatches reports whether e has every key of want (absent where
// want's value is empty).
func entityMatches(e diagnose.Entity, want map[string]string) bool {
	for k, v := range want {
		got, ok := e[k]
		if v == "" && ok || v != "" && got != v {
			return false
		}
	}
	return true
}

// causes selects the report's causes and findings m names.
func (m scriptMatch) causes(rep *diagnose.Report) []diagnose.Cause {
	var out []diagnose.Cause
	for _, c := range append(slices.Clone(rep.Causes), rep.Findings...) {
		if (m.kind == "any" || c.Kind == m.kind) && entityMatches(c.Entity, m.ent) && (m.op == "" || compareOp(m.op, c.Confidence, m.bound)) {
			out = append(out, c)
		}
	}
	return out
}

// best is the highest confidence among the causes and findings of m's
// kind and entity (0: none).
func (m scriptMatch) best(rep *diagnose.Report) float64 {
	m.op = ""
	out := 0.0
	for _, c := range m.causes(rep) {
		out = max(out, c.Confidence)
	}
	return out
}

// check evaluates one expectation on a report.
func (s *scriptSuite) check(t *testing.T, c *scriptCase, rep *diagnose.Report, text string) error {
	text = regexp.MustCompile(`confidence\s*(<=|>=|<|>|==)\s*`).ReplaceAllString(text, "confidence$1")
	toks, err := scriptTokens(text)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return fmt.Errorf("empty expectation")
	}
	switch {
	case toks[0] == "healthy" && len(toks) == 2:
		want, err := strconv.ParseBool(toks[1])
		if err != nil {
			return err
		}
		if rep.Healthy != want {
			return fmt.Errorf("healthy is %t", rep.Healthy)
		}
		return nil
	case toks[0] == "first":
		return checkFirst(rep, toks[1:])
	case toks[0] == "symptom":
		return checkSymptom(rep, toks[1:], true)
	case toks[0] == "no" && len(toks) > 1 && toks[1] == "symptom":
		return checkSymptom(rep, toks[2:], false)
	case toks[0] == "no":
		m, err := parseMatch(toks[1:])
		if err != nil || m.kind == "" || len(m.others) > 0 {
			return fmt.Errorf("want no KIND|any [k=v...] [confidence OP X] (%v)", err)
		}
		if got := m.causes(rep); len(got) > 0 {
			return fmt.Errorf("got %s %s %.3f", got[0].Kind, scriptEntity(got[0].Entity), got[0].Confidence)
		}
		return nil
	case toks[0] == "confidence":
		return s.checkCompare(t, c, rep, toks[1:])
	}
	return fmt.Errorf("unknown expectation")
}

// checkFirst: rank 1 among the causes (the findings when there is none)
// is of the kind, on the entity, within the bound.
func checkFirst(rep *diagnose.Report, toks []string) error {
	m, err := parseMatch(toks)
	if err != nil || m.kind == "" || len(m.others) > 0 {
		return fmt.Errorf("want first KIND [k=v...] [confidence OP X] (%v)", err)
	}
	list, what := rep.Causes, "cause"
	if len(list) == 0 {
		list, what = rep.Findings, "finding"
	}
	if len(list) == 0 {
		return fmt.Errorf("no cause and no finding")
	}
	top := list[0]
	if top.Kind != m.kind || !entityMatches(top.Entity, m.ent) {
		return fmt.Errorf("rank-1 %s is %s %s %.3f", what, top.Kind, scriptEntity(top.Entity), top.Confidence)
	}
	if m.op != "" && !compareOp(m.op, top.Confidence, m.bound) {
		return fmt.Errorf("rank-1 %s %s has confidence %.3f", what, top.Kind, top.Confidence)
	}
	return nil
}

// checkSymptom: a symptom of the kind on the entity, current or resolved
// (present), or none of the kind, or none current (absent).
func checkSymptom(rep *diagnose.Report, toks []string, present bool) error {
	if len(toks) == 0 && present {
		return fmt.Errorf("want symptom KIND [k=v...] [resolved]")
	}
	m := scriptMatch{kind: "any", ent: map[string]string{}}
	if len(toks) > 0 && toks[0] != "current" {
		var err error
		if m, err = parseMatch(toks); err != nil {
			return err
		}
	} else {
		m.others = toks
	}
	resolved, current := slices.Contains(m.others, "resolved"), slices.Contains(m.others, "current")
	for _, w := range m.others {
		if w != "resolved" && w != "current" {
			return fmt.Errorf("unknown word %q", w)
		}
	}
	var hit []diagnose.Symptom
	for _, sy := range rep.Symptoms {
		if (m.kind == "any" || sy.Kind == m.kind) && entityMatches(sy.Entity, m.ent) {
			hit = append(hit, sy)
		}
	}
	if !present {
		for _, sy := range hit {
			if !current || sy.Current() {
				return fmt.Errorf("got symptom %s %s since %s (resolved: %t)", sy.Kind, scriptEntity(sy.Entity), sy.Since.Format(time.TimeOnly), !sy.Current())
			}
		}
		return nil
	}
	for _, sy := range hit {
		if sy.Current() != resolved {
			return nil
		}
	}
	state := "current"
	if resolved {
		state = "resolved"
	}
	return fmt.Errorf("no %s symptom %s %s", state, m.kind, scriptEntity(m.ent))
}

// checkCompare: the best confidence of the kind on the entity here, against
// that in another case of the same kind (its first diagnosis).
func (s *scriptSuite) checkCompare(t *testing.T, c *scriptCase, rep *diagnose.Report, toks []string) error {
	m, err := parseMatch(toks)
	if err != nil || m.kind == "" || len(m.others) != 3 || m.others[1] != "case" {
		return fmt.Errorf("want confidence KIND [k=v...] <=|< case NAME (%v)", err)
	}
	op, name := m.others[0], m.others[2]
	if op != "<" && op != "<=" {
		return fmt.Errorf("compare with < or <=, got %q", op)
	}
	var other *scriptCase
	for _, o := range s.cases[c.kind] {
		if o.name == name {
			other = o
		}
	}
	if other == nil || other == c {
		return fmt.Errorf("no other case %s in %s", name, c.kind)
	}
	reps := s.diagnoseCase(t, other)
	if len(reps) == 0 {
		return fmt.Errorf("case %s has no diagnose", name)
	}
	here, there := m.best(rep), m.best(reps[0])
	if !compareOp(op, here, there) {
		return fmt.Errorf("confidence %.3f here, %.3f in case %s", here, there, name)
	}
	return nil
}
