package ui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTenantsAnswer(t *testing.T) {
	f := func(name, wantVerdict, wantAnswer string, rows ...tenantRow) {
		t.Helper()
		var failed float64
		for _, r := range rows {
			failed += r.Failed
		}
		for n := range rows {
			r := &rows[n]
			r.Rate = jsonNum(r.Failed / r.Requests)
			if failed > 0 {
				r.Share = jsonNum(r.Failed / failed)
			}
			r.RateText, r.ShareText = fmtUnit(float64(r.Rate), "%"), fmtPercent(float64(r.Share))
			r.Bad = float64(r.Rate) > normalErrorRatio
		}
		v := &tenantsView{Labels: tenantLabels(), Tenants: rows}
		v.answer()
		require.Equal(t, wantVerdict, v.Verdict, name)
		require.Equal(t, wantAnswer, v.Answer, name)
	}
	f("one stands out", verdictUnhealthy, "tenant-c has 87 % of the failures (30 % of its requests failed).",
		tenantRow{Tenant: "tenant-c", Requests: 290, Failed: 87}, tenantRow{Tenant: "tenant-a", Requests: 1300, Failed: 13})
	f("all normal", verdictHealthy, "All 2 tenants are within normal error ratio: none had more than 1 % of its requests fail.",
		tenantRow{Tenant: "a", Requests: 1000, Failed: 10}, tenantRow{Tenant: "b", Requests: 1000, Failed: 2})
	f("spread", verdictUnhealthy, "No tenant stands out: 3 of the 3 tenants had more than 1 % of their requests fail: a (10 %), b (10 %), c (10 %).",
		tenantRow{Tenant: "a", Requests: 100, Failed: 10}, tenantRow{Tenant: "b", Requests: 100, Failed: 10}, tenantRow{Tenant: "c", Requests: 100, Failed: 10})
	f("lead within normal", verdictUnhealthy, "No tenant stands out: 1 of the 2 tenants had more than 1 % of their requests fail: b (5 %).",
		tenantRow{Tenant: "a", Requests: 10000, Failed: 100}, tenantRow{Tenant: "b", Requests: 100, Failed: 5})
}
