package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vigil-obs/vigil/internal/slo"
)

// objectMeta is what --namespace and --label put on the PrometheusRule
// objects: kube-prometheus-stack's Prometheus only loads the rules whose
// labels its ruleSelector matches (release: <its release> by default).
type objectMeta struct {
	namespace string
	labels    [][2]string // sorted by key
}

func (m objectMeta) empty() bool { return m.namespace == "" && len(m.labels) == 0 }

// parseObjectMeta checks --namespace (a DNS-1123 label) and each --label
// k=v (a Kubernetes label key and value; a key given twice is an error).
func parseObjectMeta(namespace string, labels []string) (objectMeta, error) {
	m := objectMeta{namespace: namespace}
	if namespace != "" {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			return m, usagef("rules generate: --namespace %q: %s", namespace, strings.Join(errs, "; "))
		}
	}
	for _, kv := range labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return m, usagef("rules generate: --label %q is not key=value", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return m, usagef("rules generate: --label %q: key: %s", kv, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return m, usagef("rules generate: --label %q: value: %s", kv, strings.Join(errs, "; "))
		}
		if slices.ContainsFunc(m.labels, func(l [2]string) bool { return l[0] == k }) {
			return m, usagef("rules generate: --label %s is given twice", k)
		}
		m.labels = append(m.labels, [2]string{k, v})
	}
	slices.SortFunc(m.labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return m, nil
}

// renderRules renders a rule file as internal/slo does; a PrometheusRule
// object also gets m's namespace and labels in its metadata (a label of m
// replaces Vigil's own of the same key).
func renderRules(f slo.File, format slo.Format, m objectMeta) ([]byte, error) {
	b, err := slo.Render(f, format)
	if err != nil || format != slo.FormatPrometheusRule || m.empty() {
		return b, err
	}
	header, body, _ := bytes.Cut(b, []byte("\n"))
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("render %s: %w", f.Name, err)
	}
	meta := mapValue(doc.Content[0], "metadata")
	if meta == nil {
		return nil, fmt.Errorf("render %s: the object has no metadata", f.Name)
	}
	if m.namespace != "" {
		setKey(meta, "namespace", m.namespace, "name")
	}
	labels := mapValue(meta, "labels")
	if labels == nil {
		labels = &yaml.Node{Kind: yaml.MappingNode}
		meta.Content = append(meta.Content, scalar("labels"), labels)
	}
	for _, l := range m.labels {
		setKey(labels, l[0], l[1], "")
	}
	var out bytes.Buffer
	out.Write(header)
	out.WriteByte('\n')
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("render %s: %w", f.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render %s: %w", f.Name, err)
	}
	return out.Bytes(), nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setKey sets key to value in a mapping node: in place when the key is
// there, else right after the key after (or in key order when after is
// empty, as Kubernetes writes labels).
func setKey(n *yaml.Node, key, value, after string) {
	if v := mapValue(n, key); v != nil {
		*v = *scalar(value)
		return
	}
	at := len(n.Content)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if (after != "" && n.Content[i].Value == after) || (after == "" && n.Content[i].Value > key) {
			at = i
			if after != "" {
				at = i + 2
			}
			break
		}
	}
	n.Content = slices.Insert(n.Content, at, scalar(key), scalar(value))
}
