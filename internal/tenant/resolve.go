package tenant

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Need is what a request must be allowed to do.
type Need int

const (
	// NeedNone is a request any client may make (the health probes).
	NeedNone Need = iota
	// NeedRead reads the data of the tenants it names.
	NeedRead
	// NeedWrite writes the data of the one tenant it names.
	NeedWrite
	// NeedPlatform reads what is not one tenant's (the server's own
	// state, its targets, rules and incidents over every tenant's data).
	NeedPlatform
	// NeedAdmin changes what is not one tenant's.
	NeedAdmin
	// NeedReadOrPlatform reads the tenants a request names, or, when it
	// names none and its identity has the platform role, what is no
	// tenant's (the incidents: a tenant's own, or the platform's).
	NeedReadOrPlatform
)

// Error is a request refused by tenancy: the HTTP status and a one-line
// reason.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Resolver decides who a request is from and which tenants it acts on.
type Resolver struct {
	cfg   Config
	roles map[string]Role
}

// NewResolver returns the resolver of cfg (already validated).
func NewResolver(cfg Config) *Resolver {
	r := &Resolver{cfg: cfg, roles: make(map[string]Role, len(cfg.Identities))}
	for n, id := range cfg.Identities {
		r.roles[n], _ = parseRole(id.Role)
	}
	return r
}

// Enabled reports whether tenancy is on.
func (r *Resolver) Enabled() bool { return r != nil && r.cfg.Enabled }

// Resolve returns the principal of a request by identity (the
// authenticated user, or "" when the request carries none) that sent
// header (the X-Scope-OrgID value) and needs need.
//
//   - An identity listed in identities acts on its tenants: with no
//     header, on all of them (a write: its first); with a header, only on
//     tenants it lists, unless its role is platform (reads any) or admin
//     (reads and writes any). A header naming another tenant is 403.
//   - An identity not listed, when identities are configured, is 403.
//   - Otherwise the header decides: none is 401, an invalid one 400, and
//     several tenants are a read only with federation on.
//
// Platform and admin needs require an identity with that role.
func (r *Resolver) Resolve(identity, header string, need Need) (Principal, *Error) {
	if need == NeedNone {
		return Principal{}, nil
	}
	if need == NeedReadOrPlatform {
		p, err := r.Resolve(identity, header, NeedRead)
		if err != nil && err.Status == http.StatusUnauthorized && header == "" {
			if pp, perr := r.Resolve(identity, header, NeedPlatform); perr == nil {
				return pp, nil
			}
		}
		return p, err
	}
	var ids []string
	if header != "" {
		var err error
		if ids, err = ParseIDs(header); err != nil {
			return Principal{}, &Error{http.StatusBadRequest, Header + ": " + err.Error()}
		}
	}
	role := RoleTenant
	if identity != "" && len(r.cfg.Identities) > 0 {
		idc, ok := r.cfg.Identities[identity]
		if !ok {
			return Principal{}, &Error{http.StatusForbidden, fmt.Sprintf("%q has no tenant (tenancy.identities)", clip(identity))}
		}
		role = r.roles[identity]
		switch {
		case ids == nil && need == NeedWrite && len(idc.Tenants) > 0:
			ids = idc.Tenants[:1]
		case ids == nil:
			ids = slices.Sorted(slices.Values(idc.Tenants))
		default:
			mayAny := role == RoleAdmin || (role == RolePlatform && need != NeedWrite)
			for _, id := range ids {
				if !mayAny && !slices.Contains(idc.Tenants, id) {
					return Principal{}, &Error{http.StatusForbidden, fmt.Sprintf("%q may not act on tenant %q", clip(identity), id)}
				}
			}
		}
	} else if identity != "" {
		// Authenticated, but the header alone names the tenant.
		role = RoleTenant
	}
	switch need {
	case NeedPlatform, NeedAdmin:
		want := RolePlatform
		if need == NeedAdmin {
			want = RoleAdmin
		}
		if role < want {
			return Principal{}, &Error{http.StatusForbidden, fmt.Sprintf("this endpoint is not one tenant's: it needs an identity with the %s role", want)}
		}
		return Principal{IDs: ids, Role: role, Identity: identity}, nil
	}
	if len(ids) == 0 {
		return Principal{}, &Error{http.StatusUnauthorized, ErrNoTenant.Error()}
	}
	if len(ids) > 1 {
		if need == NeedWrite {
			return Principal{}, &Error{http.StatusBadRequest, fmt.Sprintf("a write goes to one tenant, not %q", JoinIDs(ids))}
		}
		if role == RoleTenant && !r.cfg.Federation && !(identity != "" && len(r.cfg.Identities) > 0) {
			return Principal{}, &Error{http.StatusBadRequest, fmt.Sprintf("a read across tenants (%q) needs tenancy.federation", JoinIDs(ids))}
		}
	}
	return Principal{IDs: ids, Role: role, Identity: identity}, nil
}

// Middleware resolves every request before next: need says what it
// needs, identify who sent it (the authenticated user; nil: nobody is
// authenticated). A refused request gets its status and reason, and next
// never sees it. With tenancy off it is next.
func (r *Resolver) Middleware(next http.Handler, need func(*http.Request) Need, identify func(*http.Request) string) http.Handler {
	if !r.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := need(req)
		if n == NeedNone {
			next.ServeHTTP(w, req)
			return
		}
		var who string
		if identify != nil {
			who = identify(req)
		}
		p, err := r.Resolve(who, strings.TrimSpace(req.Header.Get(Header)), n)
		if err != nil {
			http.Error(w, err.Msg, err.Status)
			return
		}
		next.ServeHTTP(w, req.WithContext(NewContext(req.Context(), p)))
	})
}

// ScrapeTenant is the tenant of a scrape job's series.
func (r *Resolver) ScrapeTenant(job string) string {
	if t, ok := r.cfg.ScrapeTenants[job]; ok {
		return t
	}
	return r.cfg.DefaultScrapeTenant
}

// Internal returns ctx acting on the tenant of what Vigil writes itself.
func (r *Resolver) Internal(ctx context.Context) context.Context {
	return WithID(ctx, r.cfg.InternalTenant)
}
