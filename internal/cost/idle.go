package cost

import "fmt"

// IdlePerDay is what gpus GPUs (or GPU shares) at hourly price each cost
// a day in the part they do not use, at activity (0 to 1): gpus × price ×
// (1 − activity) × 24.
func IdlePerDay(gpus, price, activity float64) float64 {
	return gpus * price * (1 - clamp01(activity)) * 24
}

// IdleClause is the clause a gpu_idle finding carries: "idle cost 451.58
// USD/day (8 GPUs at 2.40 USD/h, 2% active)".
func IdleClause(gpus, price, activity float64, currency string) string {
	return fmt.Sprintf("idle cost %.2f %s/day (%.3g GPUs at %.2f %s/h, %.0f%% active)",
		IdlePerDay(gpus, price, activity), currency, gpus, price, currency, 100*clamp01(activity))
}
