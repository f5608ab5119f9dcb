package tenant

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

const (
	// Header is the HTTP header (and gRPC metadata key) that names the
	// tenant, as Mimir, Cortex, Loki and Tempo read it.
	Header = "X-Scope-OrgID"
	// Label is the label every series is stamped with on ingest and that
	// every read is restricted by. It is Mimir's tenant-federation label:
	// a read across tenants shows it, a read of one tenant does not.
	Label = "__tenant_id__"
	// MaxIDLength is dskit's limit on a tenant ID, in bytes.
	MaxIDLength = 150
	// separator joins the tenants of a federated read ("a|b").
	separator = "|"
)

// ErrNoTenant is a request that names no tenant under tenancy.
var ErrNoTenant = errors.New("no tenant: send the " + Header + " header")

// ValidateID checks id against dskit's rules (the rules of Mimir, Cortex,
// Loki and Tempo): 1 to 150 bytes of letters, digits and the special
// characters ! - _ . * ' ( ), and not "." or "..". A valid ID can never name
// a parent directory or hold a path separator.
func ValidateID(id string) error {
	switch {
	case id == "":
		return errors.New("empty tenant ID")
	case len(id) > MaxIDLength:
		return fmt.Errorf("tenant ID of %d bytes is longer than %d", len(id), MaxIDLength)
	case id == "." || id == "..":
		return fmt.Errorf("tenant ID %q is not allowed", id)
	}
	for i := 0; i < len(id); i++ {
		if !idChar(id[i]) {
			return fmt.Errorf("tenant ID %q has the character %q at byte %d: only letters, digits and !-_.*'() are allowed", clip(id), rune(id[i]), i)
		}
	}
	return nil
}

func idChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '-', '_', '.', '*', '\'', '(', ')':
		return true
	}
	return false
}

// clip keeps an error message to one short line whatever the input.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// ParseIDs reads the tenants of a header value: one ID, or several joined
// by "|" for a read across tenants (Mimir's tenant federation). It returns
// them sorted; an empty, invalid or repeated ID is an error.
func ParseIDs(v string) ([]string, error) {
	if v == "" {
		return nil, ErrNoTenant
	}
	ids := strings.Split(v, separator)
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return nil, err
		}
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, fmt.Errorf("tenant %q named twice in %q", ids[i], clip(v))
		}
	}
	return ids, nil
}

// JoinIDs is the header value of ids.
func JoinIDs(ids []string) string { return strings.Join(ids, separator) }
