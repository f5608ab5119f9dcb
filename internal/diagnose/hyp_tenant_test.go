package diagnose_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/diagnose"
	"github.com/vigil-obs/vigil/internal/sim/reqpath"
)

// TestTenantFailure: three in four of one tenant's requests failing in
// the vector DB is tenant_failure of that tenant where its failures begin
// (not at the gateway or the app, which fail because the vector DB does),
// the probable cause of the entry's error_rate_high.
func TestTenantFailure(t *testing.T) {
	for _, tenant := range []string{"tenant-b", "tenant-d"} {
		t.Run(tenant, func(t *testing.T) {
			rep := requestPathOnly(t, 3, reqpath.Fault{Kind: reqpath.KindTenantFailure, Entity: map[string]string{"tenant": tenant}})
			require.NotEmpty(t, rep.Symptoms, brief(rep))
			require.Equal(t, diagnose.SymptomErrorRateHigh, rep.Symptoms[0].Kind)
			require.NotEmpty(t, rep.Causes, brief(rep))
			c := rep.Causes[0]
			require.Equal(t, diagnose.KindTenantFailure, c.Kind, brief(rep))
			require.Equal(t, diagnose.Entity{"tenant": tenant, "service": "vector-db"}, c.Entity)
			require.GreaterOrEqual(t, c.Confidence, 0.7)
			require.Contains(t, c.Evidence[0].Query, `status_code="STATUS_CODE_ERROR"`)
			require.Contains(t, c.Summary, "probable cause of high error rate")
			for _, o := range rep.Causes[1:] {
				require.Less(t, o.Confidence, 0.5, brief(rep))
			}
		})
	}
}

// TestTenantFailureNotPlatform: when every tenant fails together — their
// shards all down, or a bad rollout of the app — no tenant is to blame:
// no tenant_failure, whatever the error rate.
func TestTenantFailureNotPlatform(t *testing.T) {
	var all []reqpath.Fault
	for _, tenant := range reqpath.DefaultTenants() {
		all = append(all, reqpath.Fault{Kind: reqpath.KindTenantFailure, Entity: map[string]string{"tenant": tenant}})
	}
	for name, faults := range map[string][]reqpath.Fault{
		"all tenants":      all,
		"app rollout":      {{Kind: reqpath.KindBadRollout, Entity: map[string]string{"service": "ai-app"}, Severity: 0.5}},
		"two of five down": all[1:3],
	} {
		t.Run(name, func(t *testing.T) {
			rep := requestPathOnly(t, 4, faults...)
			require.NotEmpty(t, rep.Symptoms, brief(rep))
			c, ok := causeOf(rep, diagnose.KindTenantFailure)
			if name == "two of five down" {
				// Two tenants failing while three do not is each of
				// theirs, less surely.
				require.True(t, ok, brief(rep))
				require.Less(t, c.Confidence, 0.9)
				return
			}
			require.False(t, ok, "%v\n%s", c, brief(rep))
		})
	}
}
