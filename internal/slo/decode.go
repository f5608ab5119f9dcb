package slo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// FieldError is one problem of a spec: the field (a path such as
// slos[1].objective), the line it is on when the spec came from YAML, and
// what is wrong.
type FieldError struct {
	// File is the spec's file name, or empty.
	File string
	// Line is the 1-based line of the field, or 0 when unknown.
	Line int
	// Field is the path of the field, or empty for the whole spec.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error formats the problem as file:line: field: message, e.g.
// slo.yaml:12: slos[1].objective: 101 is not a percentage in (0, 100).
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File + ":")
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line) + ":")
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrInvalid is wrapped by every error of Parse, ParseFile and Validate:
// the spec, not the machine, is at fault.
var ErrInvalid = errors.New("invalid SLO spec")

// Is makes a FieldError match ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// ParseFile reads and validates a spec file; see Parse.
func ParseFile(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read SLO spec: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes and validates a YAML spec. name is the file name that errors
// start with. Unknown fields are errors. Every error is a *FieldError with
// the line of the field; several are joined with errors.Join.
func Parse(name string, data []byte) (*Spec, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, &FieldError{File: name, Msg: "empty spec: it needs slos"}
	case err != nil:
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, yamlError(name, err)
		}
		return nil, &FieldError{File: name, Line: line, Msg: "a second YAML document: a spec is one document"}
	}
	d := decoder{lines: map[string]int{}}
	var spec Spec
	d.decode(&doc, reflect.ValueOf(&spec).Elem(), "")
	spec.file, spec.lines = name, d.lines
	if len(d.errs) > 0 {
		return nil, spec.locate(d.errs)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &spec, nil
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns a YAML syntax error into a FieldError with its line.
func yamlError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FieldError{File: name, Line: line, Msg: m[2]}
	}
	return &FieldError{File: name, Msg: msg}
}

// locate sets the file and line of each FieldError, from the YAML the spec
// was parsed from: the line of its field, or of the nearest enclosing field
// the YAML has. It joins several errors with errors.Join.
func (s *Spec) locate(errs []error) error {
	for _, err := range errs {
		var fe *FieldError
		if !errors.As(err, &fe) || s.lines == nil {
			continue
		}
		fe.File = s.file
		if fe.Line == 0 {
			fe.Line = lineOf(s.lines, fe.Field)
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

func lineOf(lines map[string]int, path string) int {
	for path != "" {
		if l, ok := lines[path]; ok {
			return l
		}
		i := max(strings.LastIndexByte(path, '.'), strings.LastIndexByte(path, '['))
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// decoder fills Go values from YAML nodes, rejecting unknown fields and
// recording the line of each field, so that every error names both.
type decoder struct {
	lines map[string]int
	errs  []error
	// nodes counts the nodes decoded, aliases expanded: a few aliases can
	// stand for billions of nodes.
	nodes int
}

// maxNodes bounds the nodes of a spec, aliases expanded.
const maxNodes = 10_000

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

var durationType = reflect.TypeFor[model.Duration]()

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.nodes++; d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.fail(n, path, "the spec expands to more than %d YAML nodes (too many aliases?)", maxNodes)
		}
		return
	}
	for n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				return
			}
			n = n.Content[0]
		} else {
			n = n.Alias
		}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if v.Type() == durationType {
		d.duration(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Slice:
		d.slice(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "expected a string, got %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || err != nil {
			d.fail(n, path, "expected a number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		d.fail(n, path, "unsupported field type %s", v.Type())
	}
}

func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "expected a duration such as 30d or 5m, got %s", kindName(n))
		return
	}
	dur, err := model.ParseDuration(n.Value)
	if err != nil {
		d.fail(n, path, "%q is not a duration (e.g. 30d, 1h, 5m)", n.Value)
		return
	}
	v.Set(reflect.ValueOf(dur))
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		fields[tag] = i
		names = append(names, tag)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		d.lines[p] = k.Line
		idx, ok := fields[k.Value]
		if !ok {
			d.fail(k, p, "unknown field (known: %s)", strings.Join(names, ", "))
			continue
		}
		d.decode(val, v.Field(idx), p)
	}
}

func (d *decoder) slice(n *yaml.Node, v reflect.Value, path string) {
	items := n.Content
	switch {
	case n.Kind == yaml.ScalarNode && v.Type().Elem().Kind() == reflect.String:
		// One string where a list of strings goes.
		items = []*yaml.Node{n}
	case n.Kind != yaml.SequenceNode:
		d.fail(n, path, "expected a list, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		d.lines[p] = item.Line
		d.decode(item, s.Index(i), p)
	}
	v.Set(s)
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		d.lines[p] = k.Line
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "expected a string key, got %s", kindName(k))
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, e, p)
		m.SetMapIndex(reflect.ValueOf(k.Value), e)
	}
	v.Set(m)
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return describe(n)
}

func describe(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return kindName(n)
	}
	return strconv.Quote(n.Value)
}
