// Package detect owns the generic statistical layer of the diagnosis engine:
// robust location and scale with a relative floor (so that a 0.4% move of a
// flat series is no anomaly), deviation scores, peer comparison at one
// instant, onset (change-point) detection that resists noise and one-sample
// blips, persistence, Bayesian online change-point probabilities, and the
// common onset of many series.
//
// Every function works on evenly stepped series held as []float64, one value
// per step, with NaN for "no sample". Nothing here allocates beyond its
// result and scratch space, keeps state between calls, or reads the clock.
//
// The package does not query anything and knows no signal: it has no PromQL,
// no metric names, no units, no thresholds tied to a vocabulary and no idea
// what a GPU is. Fetching the series and saying what a shift means belong to
// internal/diagnose and internal/catalog.
package detect
