package limits

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads a runtime file, Mimir's format:
//
//	overrides:
//	  tenant-a:
//	    ingestion_rate: 50000
//	    max_active_series: 200000
//
// Each tenant's limits start from defaults and take the fields the file sets
// (an empty value keeps the default). Unknown keys, values of the wrong type
// and negative limits are errors that read "name:line: message". An empty
// file sets no overrides. YAML anchors, aliases and merge keys ("<<") work.
func Parse(name string, b []byte, defaults Limits) (map[string]Limits, error) {
	doc, err := decodeOne(name, b)
	if err != nil {
		return nil, err
	}
	out := map[string]Limits{}
	if doc == nil {
		return out, nil
	}
	root := resolve(doc)
	if isNull(root) {
		return out, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the runtime file must be a mapping with the key overrides, not %s", name, root.Line, describe(root))
	}
	var overrides *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := resolve(root.Content[i])
		if k.Kind != yaml.ScalarNode || k.Value != "overrides" {
			return nil, fmt.Errorf("%s:%d: unknown key %s: the runtime file has one key, overrides", name, k.Line, quote(k))
		}
		if overrides != nil {
			return nil, fmt.Errorf("%s:%d: overrides set twice", name, k.Line)
		}
		overrides = resolve(root.Content[i+1])
	}
	if overrides == nil || isNull(overrides) {
		return out, nil
	}
	if overrides.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: overrides must map tenant IDs to limits, not %s", name, overrides.Line, describe(overrides))
	}
	first := map[string]int{}
	for i := 0; i+1 < len(overrides.Content); i += 2 {
		k := resolve(overrides.Content[i])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" || k.Value == "" {
			return nil, fmt.Errorf("%s:%d: overrides: a tenant ID must be a non-empty string, not %s", name, k.Line, describe(k))
		}
		if line, dup := first[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d: overrides: tenant %q set twice (first at line %d)", name, k.Line, k.Value, line)
		}
		first[k.Value] = k.Line
		l := defaults
		if err := decodeLimits(resolve(overrides.Content[i+1]), &l, 0); err != nil {
			return nil, located(name, fmt.Sprintf("tenant %q: ", k.Value), err)
		}
		out[k.Value] = l
	}
	return out, nil
}

// decodeOne returns the file's one document (nil when empty); a second
// document that is not empty is an error.
func decodeOne(name string, b []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(name, err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(name, err)
		}
		if len(next.Content) > 0 && !isNull(next.Content[0]) {
			return nil, fmt.Errorf("%s:%d: a second YAML document after \"---\": put all overrides in one", name, next.Line)
		}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// maxMergeDepth bounds merge keys inside merged mappings.
const maxMergeDepth = 8

// lineError is an error at a line of the file.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

func atLine(n *yaml.Node, format string, args ...any) error {
	return &lineError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

// located prefixes err with the file name and, for a lineError, its line.
func located(name, prefix string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %s%s", name, le.line, prefix, le.msg)
	}
	return fmt.Errorf("%s: %s%w", name, prefix, err)
}

// decodeLimits sets the fields of l that the mapping n sets. Merge keys
// ("<<") are applied first, so the mapping's own keys win, as in YAML.
func decodeLimits(n *yaml.Node, l *Limits, depth int) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return atLine(n, "must be a mapping of limits (%s), not %s", strings.Join(fieldNames(), ", "), describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.ShortTag() != "!!merge" {
			continue
		}
		if depth >= maxMergeDepth {
			return atLine(k, "merge keys nested more than %d deep", maxMergeDepth)
		}
		v := resolve(n.Content[i+1])
		switch v.Kind {
		case yaml.MappingNode:
			if err := decodeLimits(v, l, depth+1); err != nil {
				return err
			}
		case yaml.SequenceNode:
			// The earlier mappings of a merge list win over the later ones.
			for j := len(v.Content) - 1; j >= 0; j-- {
				m := resolve(v.Content[j])
				if m.Kind != yaml.MappingNode {
					return atLine(m, "<<: must merge mappings, not %s", describe(m))
				}
				if err := decodeLimits(m, l, depth+1); err != nil {
					return err
				}
			}
		default:
			return atLine(v, "<<: must merge a mapping or a list of mappings, not %s", describe(v))
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.ShortTag() == "!!merge" {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return atLine(k, "keys must be limit names, not %s", describe(k))
		}
		if line, dup := seen[k.Value]; dup {
			return atLine(k, "%s set twice (first at line %d)", k.Value, line)
		}
		seen[k.Value] = k.Line
		if err := setField(l, k, resolve(n.Content[i+1])); err != nil {
			return err
		}
	}
	return nil
}

// setField sets the limit named by the key k from the scalar v, and checks
// it. A null value keeps what l holds.
func setField(l *Limits, k, v *yaml.Node) error {
	name := k.Value
	var f *float64
	var i *int
	var i64 *int64
	switch name {
	case IngestionRate:
		f = &l.IngestionRate
	case SpansRate:
		f = &l.SpansRate
	case IngestionBurstSize:
		i = &l.IngestionBurstSize
	case SpansBurstSize:
		i = &l.SpansBurstSize
	case MaxActiveSeries:
		i = &l.MaxActiveSeries
	case MaxSeriesPerMetric:
		i = &l.MaxSeriesPerMetric
	case MaxRequestBytes:
		i64 = &l.MaxRequestBytes
	case MaxQuerySamples:
		i = &l.MaxQuerySamples
	case MaxQueryConcurrency:
		i = &l.MaxQueryConcurrency
	case MaxPushGroups:
		i = &l.MaxPushGroups
	default:
		return atLine(k, "unknown limit %s (the limits are %s)", quote(k), strings.Join(fieldNames(), ", "))
	}
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.ScalarNode {
		return atLine(v, "%s: want a number, not %s", name, describe(v))
	}
	if f != nil {
		var x float64
		if tag := v.ShortTag(); (tag != "!!int" && tag != "!!float") || v.Decode(&x) != nil {
			return atLine(v, "%s: want a number, not %s", name, describe(v))
		}
		*f = x
	} else {
		x, ok := wholeNumber(v)
		if !ok {
			return atLine(v, "%s: want a whole number, not %s", name, describe(v))
		}
		if i64 != nil {
			*i64 = x
		} else {
			*i = int(x)
		}
	}
	if err := l.validateField(name); err != nil {
		return atLine(v, "%s", err)
	}
	return nil
}

// wholeNumber reads an integer, or a float with no fraction (1e6), that
// fits in an int64 and, for int fields, an int.
func wholeNumber(v *yaml.Node) (int64, bool) {
	switch v.ShortTag() {
	case "!!int":
		var x int64
		if err := v.Decode(&x); err != nil || int64(int(x)) != x {
			return 0, false
		}
		return x, true
	case "!!float":
		var x float64
		if err := v.Decode(&x); err != nil || x != math.Trunc(x) || math.Abs(x) >= 1<<62 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// maxAliasHops bounds alias chains.
const maxAliasHops = 16

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for range maxAliasHops {
		if n.Kind != yaml.AliasNode || n.Alias == nil {
			return n
		}
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names a node's kind and, for a short scalar, its value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "an empty value"
		}
		return quote(n)
	}
	return "an alias"
}

// quote returns a scalar's value quoted, shortened to a readable length.
func quote(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return describe(n)
	}
	s := n.Value
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return strconv.Quote(s)
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parserProblems are the messages of the YAML library's parser (as opposed
// to its scanner), which counts lines from 0 where the scanner counts
// from 1.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// syntaxError turns the YAML library's "yaml: line 3: msg" into
// "name:3: invalid YAML: msg", on one line.
func syntaxError(name string, err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%s: invalid YAML: %s", name, msg)
	}
	line, _ := strconv.Atoi(m[1])
	if parserProblems[m[2]] {
		line++
	}
	if line == 0 {
		return fmt.Errorf("%s: invalid YAML: %s", name, m[2])
	}
	return fmt.Errorf("%s:%d: invalid YAML: %s", name, line, m[2])
}
