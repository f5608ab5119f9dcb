package tenant

import (
	"context"
	"slices"
)

// Role is what an identity may do beyond its own tenants' data.
type Role int

const (
	// RoleTenant reads and writes its own tenants only.
	RoleTenant Role = iota
	// RolePlatform may also read any tenant, and several at once.
	RolePlatform
	// RoleAdmin may also change shared state: another tenant's push
	// groups, and the endpoints that are not one tenant's.
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RolePlatform:
		return "platform"
	case RoleAdmin:
		return "admin"
	}
	return "tenant"
}

// Principal is who a request is from and which tenants it acts on.
type Principal struct {
	// IDs are the tenants the request acts on, sorted: one for a write,
	// one or more for a read.
	IDs []string
	// Role is the identity's role.
	Role Role
	// Identity is the authenticated user or token name; empty when the
	// tenant came from the header alone.
	Identity string
}

// Single is the one tenant of p, or false when p names several.
func (p Principal) Single() (string, bool) {
	if len(p.IDs) != 1 {
		return "", false
	}
	return p.IDs[0], true
}

// Has reports whether p acts on tenant id.
func (p Principal) Has(id string) bool {
	_, ok := slices.BinarySearch(p.IDs, id)
	return ok
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of ctx.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok && len(p.IDs) > 0
}

// PrincipalOf returns the principal of ctx even when it names no tenant
// (the platform role reading what is no tenant's).
func PrincipalOf(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// WithID returns ctx acting on the one tenant id, as an internal writer
// (a scrape pool assigned to a tenant) or a test does.
func WithID(ctx context.Context, id string) context.Context {
	return NewContext(ctx, Principal{IDs: []string{id}})
}

// WriteID is the one tenant a write in ctx goes to.
func WriteID(ctx context.Context) (string, bool) {
	p, ok := FromContext(ctx)
	if !ok {
		return "", false
	}
	return p.Single()
}
