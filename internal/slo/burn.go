package slo

import (
	"time"

	"github.com/prometheus/common/model"
)

// BurnWindow is one condition of a multi-window, multi-burn-rate alert
// (Google's SRE workbook, as Sloth generates it): the error ratio over both
// Long and Short is above Factor times the error budget. Factor is the rate
// that spends Budget of the period's error budget in Long.
type BurnWindow struct {
	Severity    Severity
	Long, Short model.Duration
	// Budget is the fraction of the period's error budget spent in Long.
	Budget float64
	// Factor is the burn rate: Budget × period / Long.
	Factor float64
}

const (
	hour = model.Duration(time.Hour)
	day  = 24 * hour
)

// BurnWindows returns the four conditions for an SLO period, Sloth's: page
// when 2% of the budget goes in 1h (short window 5m) or 5% in 6h (30m);
// ticket when 10% goes in 1d (2h) or in 3d (6h). For 30d the factors are
// 14.4, 6, 3 and 1; for 28d 13.44, 5.6, 2.8 and 0.933.
func BurnWindows(period model.Duration) []BurnWindow {
	ws := []BurnWindow{
		{Severity: SeverityPage, Long: hour, Short: 5 * model.Duration(time.Minute), Budget: 0.02},
		{Severity: SeverityPage, Long: 6 * hour, Short: 30 * model.Duration(time.Minute), Budget: 0.05},
		{Severity: SeverityTicket, Long: day, Short: 2 * hour, Budget: 0.1},
		{Severity: SeverityTicket, Long: 3 * day, Short: 6 * hour, Budget: 0.1},
	}
	for i := range ws {
		ws[i].Factor = round(ws[i].Budget * float64(period) / float64(ws[i].Long))
	}
	return ws
}

// rateWindows are the ranges the SLI error ratio is recorded over: every
// short and long window of BurnWindows.
func rateWindows() []model.Duration {
	m := model.Duration(time.Minute)
	return []model.Duration{5 * m, 30 * m, hour, 2 * hour, 6 * hour, day, 3 * day}
}
