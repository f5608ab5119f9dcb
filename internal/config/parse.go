package config

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

	"github.com/vigil-obs/vigil/internal/ingest/scrape"
)

// Load reads and validates the file at path; fields it does not set keep
// their defaults.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes and validates b; fields it does not set keep their defaults.
// Errors read "name:line: field: message"; the *FieldError inside is
// reachable with errors.As.
//
// An empty value ("retention:" or "~") keeps the default too. The
// out-of-order window, when not set, is the default or the retention,
// whichever is shorter.
func Parse(name string, b []byte) (*Config, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
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
			return nil, fmt.Errorf("%s:%d: a second YAML document after \"---\": put the whole configuration in one", name, next.Line)
		}
	}

	cfg := Default()
	lines := map[string]int{} // the line of each field the file sets
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		if err := decodeMapping(doc.Content[0], reflect.ValueOf(&cfg).Elem(), "", lines); err != nil {
			return nil, located(name, err)
		}
	}
	if _, ok := lines["storage.out_of_order_window"]; !ok {
		cfg.Storage.OutOfOrderWindow = min(cfg.Storage.OutOfOrderWindow, cfg.Storage.Retention)
	}
	if err := cfg.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			if line := lineOf(lines, fe.Field); line > 0 {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if hasScrapeSections(&doc) {
		sc, err := scrape.LoadConfig(name, b, nil)
		if err != nil {
			return nil, err
		}
		cfg.Scrape = sc
	}
	return &cfg, nil
}

// hasScrapeSections reports whether the document has a Prometheus section.
func hasScrapeSections(doc *yaml.Node) bool {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if scrape.Sections(m.Content[i].Value) {
			return true
		}
	}
	return false
}

// lineError is an error at one line of the file.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

func atLine(n *yaml.Node, field, format string, args ...any) error {
	return &lineError{line: n.Line, err: fieldErr(field, format, args...)}
}

func located(name string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %w", name, le.line, le.err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parserProblems are the messages of the YAML library's parser (as opposed
// to its scanner), which counts lines from 0 where the scanner counts from 1.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// syntaxError turns the YAML library's "yaml: line 3: msg" into
// "name:3: invalid YAML: msg", with the line counted from 1.
func syntaxError(name string, err error) error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: invalid YAML: %w", name, err)
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

// decodeMapping sets the fields of the struct v from the mapping n, field by
// field, so that every error names its field and line. path is the YAML
// path of v ("" for the whole file); lines receives the line of each field
// set.
func decodeMapping(n *yaml.Node, v reflect.Value, path string, lines map[string]int) error {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	names, index := yamlFields(v.Type())
	if path == "" {
		names = append(names, scrape.SectionNames()...)
	}
	if n.Kind != yaml.MappingNode {
		if path == "" {
			return &lineError{line: n.Line, err: fmt.Errorf("the file must be a mapping with the sections %s, not %s", strings.Join(names, ", "), describe(n))}
		}
		return atLine(n, path, "must be a mapping with the fields %s, not %s", strings.Join(names, ", "), describe(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolve(n.Content[i]), n.Content[i+1]
		field := k.Value
		if path != "" {
			field = path + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode {
			return atLine(k, pathOrFile(path), "keys must be field names, not %s", describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return atLine(k, field, "set twice (first at line %d)", first)
		}
		seen[k.Value] = k.Line
		if path == "" && scrape.Sections(k.Value) {
			continue // Prometheus's sections: read by scrape.LoadConfig
		}
		idx, ok := index[k.Value]
		if !ok {
			return atLine(k, field, "unknown field (%s has %s)", pathOrFile(path), strings.Join(names, ", "))
		}
		fv := v.Field(idx)
		if u, ok := fv.Addr().Interface().(yaml.Unmarshaler); ok {
			// A section in outside types (source's HTTP client) decodes
			// itself.
			if err := val.Decode(u); err != nil {
				var le *lineError
				if errors.As(err, &le) {
					return le
				}
				return atLine(val, field, "%v", strings.TrimPrefix(err.Error(), "yaml: "))
			}
			lines[field] = val.Line
			continue
		}
		if fv.Kind() == reflect.Struct {
			if err := decodeMapping(val, fv, field, lines); err != nil {
				return err
			}
			continue
		}
		if fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct {
			if err := decodeList(val, fv, field, lines); err != nil {
				return err
			}
			continue
		}
		if fv.Kind() == reflect.Map && fv.Type().Key().Kind() == reflect.String && fv.Type().Elem().Kind() == reflect.Struct {
			if err := decodeStructMap(val, fv, field, lines); err != nil {
				return err
			}
			continue
		}
		if err := decodeValue(val, fv, field); err != nil {
			return err
		}
		if !isNull(resolve(val)) {
			lines[field] = resolve(val).Line
		}
	}
	return nil
}

// decodeStructMap sets a map of names to structs from a mapping of
// mappings, entry by entry, so that errors name the entry
// (tenancy.identities.alice.role).
func decodeStructMap(n *yaml.Node, v reflect.Value, path string, lines map[string]int) error {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return atLine(n, path, "must be a mapping of names to sections, not %s", describe(n))
	}
	out := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, item := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return atLine(k, path, "keys must be names, not %s", describe(k))
		}
		field := path + "." + k.Value
		if first, dup := seen[k.Value]; dup {
			return atLine(k, field, "set twice (first at line %d)", first)
		}
		seen[k.Value] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := decodeMapping(item, elem, field, lines); err != nil {
			return err
		}
		lines[field] = k.Line
		out.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(out)
	return nil
}

// decodeList sets a list of structs from a sequence of mappings, item by
// item, so that errors name the item (drift[2].metric).
func decodeList(n *yaml.Node, v reflect.Value, path string, lines map[string]int) error {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return atLine(n, path, "must be a list, not %s", describe(n))
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		field := fmt.Sprintf("%s[%d]", path, i)
		elem := out.Index(i)
		if d, ok := reflect.New(elem.Type()).Interface().(interface{ SetDefaults() }); ok {
			d.SetDefaults()
			elem.Set(reflect.ValueOf(d).Elem())
		}
		if err := decodeMapping(item, elem, field, lines); err != nil {
			return err
		}
		lines[field] = resolve(item).Line
	}
	v.Set(out)
	return nil
}

func pathOrFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// decodeValue sets the scalar field v from n; an empty value keeps v.
func decodeValue(n *yaml.Node, v reflect.Value, field string) error {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	want := kindName(v)
	if p, ok := v.Addr().Interface().(*[]string); ok {
		return decodeStrings(n, p, field)
	}
	if p, ok := v.Addr().Interface().(*[]float64); ok {
		return decodeNumbers(n, p, field)
	}
	if p, ok := v.Addr().Interface().(*map[string]string); ok {
		return decodeStringMap(n, p, field)
	}
	if n.Kind != yaml.ScalarNode {
		return atLine(n, field, "must be %s, not %s", want, describe(n))
	}
	switch p := v.Addr().Interface().(type) {
	case *model.Duration:
		if strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
			return atLine(n, field, "must not be negative, got %s", n.Value)
		}
		d, err := model.ParseDuration(n.Value)
		if err != nil {
			return atLine(n, field, "%q is not a duration such as 15d, 12h, 90m or 30s", n.Value)
		}
		*p = d
	case *Bytes:
		if err := p.UnmarshalText([]byte(n.Value)); err != nil {
			return atLine(n, field, "%v", err)
		}
	case *string:
		*p = n.Value
	case *float64:
		if t := n.ShortTag(); t != "!!float" && t != "!!int" {
			return atLine(n, field, "must be a number, got %q", n.Value)
		}
		if err := n.Decode(p); err != nil {
			return atLine(n, field, "must be a number, got %q", n.Value)
		}
	case *bool:
		if n.ShortTag() != "!!bool" {
			return atLine(n, field, "must be true or false, got %q", n.Value)
		}
		if err := n.Decode(p); err != nil {
			return atLine(n, field, "must be true or false, got %q", n.Value)
		}
	default:
		if n.ShortTag() != "!!int" {
			return atLine(n, field, "must be %s, got %q", want, n.Value)
		}
		if err := n.Decode(p); err != nil {
			return atLine(n, field, "%q is out of range for %s", n.Value, want)
		}
	}
	return nil
}

// lineOf returns the line of field, or of the nearest enclosing field
// that has one (a list item for its unset field, a list for its item).
func lineOf(lines map[string]int, field string) int {
	for f := field; f != ""; {
		if l := lines[f]; l > 0 {
			return l
		}
		if lf := listField(f); lf != f {
			f = lf
			continue
		}
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return 0
}

// listField is the field of a list item's path: a.b[2] → a.b.
func listField(f string) string {
	if i := strings.LastIndexByte(f, '['); i > 0 && strings.HasSuffix(f, "]") {
		return f[:i]
	}
	return f
}

// decodeStrings sets a list of strings from a sequence of scalars.
func decodeStrings(n *yaml.Node, p *[]string, field string) error {
	if n.Kind != yaml.SequenceNode {
		return atLine(n, field, "must be a list of strings, not %s", describe(n))
	}
	var out []string // an empty list is no list

	for i, c := range n.Content {
		c = resolve(c)
		if c.Kind != yaml.ScalarNode || isNull(c) {
			return atLine(c, fmt.Sprintf("%s[%d]", field, i), "must be a string, not %s", describe(c))
		}
		out = append(out, c.Value)
	}
	*p = out
	return nil
}

// decodeStringMap sets a map of strings from a mapping of scalars; an
// empty mapping is no map.
func decodeStringMap(n *yaml.Node, p *map[string]string, field string) error {
	if n.Kind != yaml.MappingNode {
		return atLine(n, field, "must be a mapping of names to strings, not %s", describe(n))
	}
	var out map[string]string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || isNull(k) {
			return atLine(k, field, "a key must be a string, not %s", describe(k))
		}
		if v.Kind != yaml.ScalarNode || isNull(v) {
			return atLine(v, field+"."+k.Value, "must be a string, not %s", describe(v))
		}
		if _, dup := out[k.Value]; dup {
			return atLine(k, field+"."+k.Value, "is given twice")
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k.Value] = v.Value
	}
	*p = out
	return nil
}

// decodeNumbers sets a list of numbers from a sequence of scalars.
func decodeNumbers(n *yaml.Node, p *[]float64, field string) error {
	if n.Kind != yaml.SequenceNode {
		return atLine(n, field, "must be a list of numbers, not %s", describe(n))
	}
	out := make([]float64, 0, len(n.Content))
	for i, c := range n.Content {
		c = resolve(c)
		var f float64
		if t := c.ShortTag(); c.Kind != yaml.ScalarNode || (t != "!!float" && t != "!!int") || c.Decode(&f) != nil {
			return atLine(c, fmt.Sprintf("%s[%d]", field, i), "must be a number, not %s", describe(c))
		}
		out = append(out, f)
	}
	*p = out
	return nil
}

func kindName(v reflect.Value) string {
	switch v.Interface().(type) {
	case model.Duration:
		return "a duration"
	}
	switch v.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list of strings"
	case reflect.Map:
		return "a mapping of names to strings"
	}
	return "a " + v.Kind().String()
}

// resolve follows aliases (*anchor) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "this"
}

// yamlFields returns the YAML names of the fields of struct type t, in
// order, and the field index of each.
func yamlFields(t reflect.Type) ([]string, map[string]int) {
	var names []string
	index := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		index[name] = i
	}
	return names, index
}
