package push

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/tenant"
)

// PathPrefix and Base64PathPrefix are where the endpoint is mounted, as
// on the Pushgateway; the second is for a job name in base64 (one that
// holds a "/").
const (
	PathPrefix       = "/metrics/job/"
	Base64PathPrefix = "/metrics/job@base64/"
)

// groupingKey is a group's labels: job first, then the other pairs of the
// path by name. Values may be empty.
type groupingKey []labelPair

type labelPair struct{ name, value string }

// id is the key's identity in the groups map.
func (k groupingKey) id() string {
	var b strings.Builder
	for _, p := range k {
		b.WriteString(p.name)
		b.WriteByte(0xff)
		b.WriteString(p.value)
		b.WriteByte(0xff)
	}
	return b.String()
}

// withTenant is k owned by tenant id: any tenant label the path named is
// replaced.
func (k groupingKey) withTenant(id string) groupingKey {
	out := make(groupingKey, 0, len(k)+1)
	for _, p := range k {
		if p.name != tenant.Label {
			out = append(out, p)
		}
	}
	return append(out, labelPair{tenant.Label, id})
}

// tenant is the tenant of the key ("" without tenancy).
func (k groupingKey) tenant() string {
	for _, p := range k {
		if p.name == tenant.Label {
			return p.value
		}
	}
	return ""
}

// parsePath reads the grouping key from an escaped request path such as
// /metrics/job/train/model@base64/bTE. A later pair of the same name wins,
// as on the Pushgateway.
func parsePath(escaped string) (groupingKey, error) {
	rest, ok := strings.CutPrefix(escaped, "/metrics/")
	if !ok || !strings.HasPrefix(rest, "job/") && !strings.HasPrefix(rest, "job@base64/") {
		return nil, fmt.Errorf("path %q does not start with %s", escaped, PathPrefix)
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(parts) < 2 || parts[1] == "" {
		return nil, errors.New("empty job name: push to /metrics/job/<job>{/<label>/<value>}")
	}
	if len(parts)%2 != 0 {
		return nil, fmt.Errorf("odd number of components in label path %q: labels come as /<label>/<value>", "/"+strings.Join(parts[2:], "/"))
	}
	values := map[string]string{}
	for i := 0; i < len(parts); i += 2 {
		name, err := url.PathUnescape(parts[i])
		if err != nil {
			return nil, fmt.Errorf("label name %q: %w", parts[i], err)
		}
		value, err := url.PathUnescape(parts[i+1])
		if err != nil {
			return nil, fmt.Errorf("value of label %s: %w", name, err)
		}
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			name = n
			if value, err = decodeBase64(value); err != nil {
				return nil, fmt.Errorf("value of label %s: invalid base64: %w", name, err)
			}
		}
		if !model.LegacyValidation.IsValidLabelName(name) || strings.HasPrefix(name, model.ReservedLabelPrefix) {
			return nil, fmt.Errorf("improper label name %q", name)
		}
		if !utf8.ValidString(value) {
			return nil, fmt.Errorf("value of label %s is not valid UTF-8", name)
		}
		if i == 0 && value == "" {
			return nil, errors.New("empty job name: push to /metrics/job/<job>{/<label>/<value>}")
		}
		values[name] = value
	}
	key := groupingKey{{name: "job", value: values["job"]}}
	delete(values, "job")
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		key = append(key, labelPair{name: n, value: values[n]})
	}
	return key, nil
}

// decodeBase64 decodes RFC 4648 URL-safe base64 with optional padding; a
// lone "=" is the empty string.
func decodeBase64(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
