package tenant

import (
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/common/model"

	"github.com/vigil-obs/vigil/internal/tenant/limits"
)

// Config is the tenancy section of vigil.yaml.
type Config struct {
	// Enabled turns tenancy on: every request names its tenant, every
	// series, span and log record is stamped with it, and every read is
	// restricted to it.
	Enabled bool `yaml:"enabled"`
	// Identities maps an authenticated identity (a basic-auth user of the
	// web config file, the common name of a verified client certificate,
	// a user or token name of the OTLP receivers' auth) to its tenants
	// and role. Empty: the tenant is the header's alone, as behind a
	// gateway that authenticates (Mimir's model).
	Identities map[string]Identity `yaml:"identities"`
	// Federation lets a request with no mapped identity read several
	// tenants at once ("a|b"). Identities with the platform or admin role
	// may always.
	Federation bool `yaml:"federation"`
	// ScrapeTenants assigns scrape jobs (by their job label) to tenants;
	// DefaultScrapeTenant takes the other jobs' series.
	ScrapeTenants       map[string]string `yaml:"scrape_tenants"`
	DefaultScrapeTenant string            `yaml:"default_scrape_tenant"`
	// Evaluate lists the tenants that get their own continuous
	// evaluation: SLO rules, symptoms and diagnosis over their data alone,
	// their own incidents (which only they, and the platform role, read)
	// and alerts labelled tenant=<id>. The server's own evaluation, over
	// every tenant's data, is the platform's.
	Evaluate []string `yaml:"evaluate"`
	// InternalTenant is the tenant of what Vigil writes itself: its own
	// metrics, recorded SLO series, incidents' series.
	InternalTenant string `yaml:"internal_tenant"`
	// Limits are every tenant's limits (0: unlimited), and LimitsFile a
	// runtime file of per-tenant overrides in Mimir's format
	// ({overrides: {tenant: {limit: value}}}), read again every
	// LimitsReloadPeriod without a restart (internal/tenant/limits).
	Limits             limits.Limits  `yaml:"limits"`
	LimitsFile         string         `yaml:"limits_file"`
	LimitsReloadPeriod model.Duration `yaml:"limits_reload_period"`
}

// Identity is one identity's tenants and role.
type Identity struct {
	// Tenants are the tenants the identity acts on. The first is where its
	// writes go when it names none.
	Tenants []string `yaml:"tenants"`
	// Role is tenant (the default), platform or admin.
	Role string `yaml:"role"`
}

// DefaultConfig is the section's defaults: tenancy off.
func DefaultConfig() Config {
	return Config{DefaultScrapeTenant: "platform", InternalTenant: "vigil", LimitsReloadPeriod: model.Duration(limits.DefaultReloadPeriod)}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	names := make([]string, 0, len(c.Identities))
	for n := range c.Identities {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		id := c.Identities[n]
		if n == "" {
			return errors.New("identities: an empty identity name")
		}
		if len(id.Tenants) == 0 && id.Role != "platform" && id.Role != "admin" {
			return fmt.Errorf("identities.%s: no tenants", n)
		}
		for _, t := range id.Tenants {
			if err := ValidateID(t); err != nil {
				return fmt.Errorf("identities.%s.tenants: %w", n, err)
			}
		}
		if _, err := parseRole(id.Role); err != nil {
			return fmt.Errorf("identities.%s.role: %w", n, err)
		}
	}
	for job, t := range c.ScrapeTenants {
		if err := ValidateID(t); err != nil {
			return fmt.Errorf("scrape_tenants.%s: %w", job, err)
		}
	}
	if err := ValidateID(c.DefaultScrapeTenant); err != nil {
		return fmt.Errorf("default_scrape_tenant: %w", err)
	}
	seen := map[string]bool{}
	for _, id := range c.Evaluate {
		if err := ValidateID(id); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		if seen[id] {
			return fmt.Errorf("evaluate: tenant %q listed twice", id)
		}
		seen[id] = true
	}
	if err := ValidateID(c.InternalTenant); err != nil {
		return fmt.Errorf("internal_tenant: %w", err)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	if c.LimitsReloadPeriod <= 0 {
		return fmt.Errorf("limits_reload_period: must be positive, got %s", c.LimitsReloadPeriod)
	}
	return nil
}

func parseRole(s string) (Role, error) {
	switch s {
	case "", "tenant":
		return RoleTenant, nil
	case "platform":
		return RolePlatform, nil
	case "admin":
		return RoleAdmin, nil
	}
	return 0, fmt.Errorf("unknown role %q: tenant, platform or admin", s)
}
