// Package yamlstrict decodes a section of a YAML file into a type of
// another package's (Prometheus's HTTP client or TLS settings), refusing
// keys the type does not have, with a one-line error that names the key
// and not the section's own line numbers.
package yamlstrict

import (
	"bytes"
	"errors"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Decode decodes n into v, refusing unknown keys.
func Decode(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(strings.ReplaceAll(err.Error(), "yaml: unmarshal errors:\n  ", ""), "yaml: ")
		// The lines are the section's, not the file's.
		msg = unknownFieldRE.ReplaceAllString(lineRE.ReplaceAllString(msg, ""), "unknown field $1")
		return errors.New(strings.Join(strings.Fields(msg), " "))
	}
	return nil
}

var (
	unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type \S+`)
	lineRE         = regexp.MustCompile(`line \d+: `)
)
