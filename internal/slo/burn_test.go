package slo

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// TestBurnWindows checks Sloth's factors: the budget share spent in the
// long window times the period over the long window.
func TestBurnWindows(t *testing.T) {
	m := model.Duration(time.Minute)
	f := func(period model.Duration, want []BurnWindow) {
		t.Helper()
		require.Equal(t, want, BurnWindows(period))
	}
	f(30*day, []BurnWindow{
		{Severity: SeverityPage, Long: hour, Short: 5 * m, Budget: 0.02, Factor: 14.4},
		{Severity: SeverityPage, Long: 6 * hour, Short: 30 * m, Budget: 0.05, Factor: 6},
		{Severity: SeverityTicket, Long: day, Short: 2 * hour, Budget: 0.1, Factor: 3},
		{Severity: SeverityTicket, Long: 3 * day, Short: 6 * hour, Budget: 0.1, Factor: 1},
	})
	f(28*day, []BurnWindow{
		{Severity: SeverityPage, Long: hour, Short: 5 * m, Budget: 0.02, Factor: 13.44},
		{Severity: SeverityPage, Long: 6 * hour, Short: 30 * m, Budget: 0.05, Factor: 5.6},
		{Severity: SeverityTicket, Long: day, Short: 2 * hour, Budget: 0.1, Factor: 2.8},
		{Severity: SeverityTicket, Long: 3 * day, Short: 6 * hour, Budget: 0.1, Factor: 0.933333333333},
	})
	for _, w := range BurnWindows(30 * day) {
		require.Equal(t, w.Long, 12*w.Short, "the short window is a twelfth of the long one")
	}
}

// TestBurnAlertThresholds reads the factors and the budget in the generated
// alert expressions of a 28d 99.9% SLO.
func TestBurnAlertThresholds(t *testing.T) {
	s := &SLO{Name: "api", Objective: ptr(99.9), Window: 28 * day, By: []string{"namespace"},
		SLI: SLI{Ratio: &RatioSLI{Errors: "sum by (namespace) (rate(e[{{.window}}]))", Total: "sum by (namespace) (rate(t[{{.window}}]))"}}}
	rules := burnAlerts(s)
	require.Len(t, rules, 2)
	require.Equal(t, "page", rules[0].Labels[LabelSeverity])
	require.Contains(t, rules[0].Expr, `slo:sli_error:ratio_rate5m{slo="api"} > (13.44 * 0.001)`)
	require.Contains(t, rules[0].Expr, `slo:sli_error:ratio_rate1h{slo="api"} > (13.44 * 0.001)`)
	require.Contains(t, rules[0].Expr, `slo:sli_error:ratio_rate30m{slo="api"} > (5.6 * 0.001)`)
	require.Contains(t, rules[0].Expr, `slo:sli_error:ratio_rate6h{slo="api"} > (5.6 * 0.001)`)
	require.Equal(t, "ticket", rules[1].Labels[LabelSeverity])
	require.Contains(t, rules[1].Expr, `slo:sli_error:ratio_rate2h{slo="api"} > (2.8 * 0.001)`)
	require.Contains(t, rules[1].Expr, `slo:sli_error:ratio_rate3d{slo="api"} > (0.933333333333 * 0.001)`)
	meta := metaRules(s)
	require.Equal(t, "vector(0.001)", meta[1].Expr, "99.9% leaves a budget of exactly 0.001")
	require.Equal(t, "vector(28)", meta[2].Expr)
	require.Equal(t, "28d", meta[2].Labels[LabelWindow])

	s.Severity = SeverityTicket
	rules = burnAlerts(s)
	require.Len(t, rules, 1, "a ticket-only SLO never pages")
	require.Equal(t, "ticket", rules[0].Labels[LabelSeverity])
}
