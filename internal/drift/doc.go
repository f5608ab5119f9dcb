// Package drift measures how far a current sample of features has moved from
// a baseline (reference) sample, streaming both from CSV or Parquet files.
//
// It owns the statistics (PSI, KL divergence, Jensen–Shannon distance,
// Hellinger distance, L-infinity, normalised Wasserstein distance, two-sample
// Kolmogorov–Smirnov and chi-square goodness of fit), the binning of numeric
// features, the choice of a default method, and the readers of the two file
// formats. It does not own flags, output formats, the store or alerting.
//
// # Bins
//
// Binned methods (psi, kl, js, hellinger, linf, chisquare) compare shares per
// bin. Bins come from the reference only, so that a current sample is always
// judged on the baseline's scale. Quantile bins (deciles) are the default:
// every bin holds about a tenth of the reference, so no reference bin is
// empty (an empty reference bin makes PSI and KL depend on the smoothing
// constant rather than on the data), a few outliers cannot squeeze the bulk
// of the distribution into one bin the way equal-width bins do, and deciles
// are what the PSI thresholds of credit-risk practice were calibrated on.
// Sturges and Doane equal-width bins over the reference's range are options.
// The outer bins are open, so current values beyond the reference's range
// land in the first or last bin. A numeric reference with at most five
// distinct values is binned by those values, as Evidently treats it.
// Categorical features use one bin per category seen in either sample.
//
// Empty bins follow Evidently: a zero share becomes 0.0001, or the smallest
// non-zero share / 10⁶ when that share is below 0.0001, for psi, kl, js and
// for the expected counts of chisquare. Hellinger and linf use raw shares.
//
// # Methods, thresholds and the default
//
//	method       score                          drift when            threshold
//	psi          Σ (c−r)·ln(c/r)                score ≥ threshold     0.1 (≥ 0.1 moderate, ≥ 0.25 significant)
//	kl           Σ r·ln(r/c)                    score ≥ threshold     0.1
//	js           √JS divergence, natural log    score ≥ threshold     0.1
//	hellinger    ‖√r−√c‖₂ / √2                  score ≥ threshold     0.1
//	linf         max |r−c|                      score ≥ threshold     0.1
//	wasserstein  W₁(r, c) / σ(reference)        score ≥ threshold     0.1
//	ks           D statistic, p-value           p < threshold         0.05
//	chisquare    χ² statistic, p-value          p < threshold         0.05
//
// Without a method, a feature gets Evidently's default: a reference of at most
// 1000 rows uses ks for a numeric feature and chisquare for a categorical one
// (or a numeric one with at most five distinct values; Evidently's Z-test for
// binary features is folded into chisquare); a larger reference uses
// wasserstein for numeric features and js for categorical ones.
//
// A reference with zero variance cannot normalise the Wasserstein distance:
// the score is then the raw distance, drift is any distance above zero, and
// the result's note says so.
//
// The Kolmogorov–Smirnov p-value is exact (the lattice-path count scipy's
// ks_2samp uses in its exact mode) when n·m ≤ 10⁶ and both samples are held
// exactly, and otherwise the asymptotic Kolmogorov distribution at
// √(n·m/(n+m))·D (scipy's kstwobign).
//
// # Memory
//
// Reading streams: binned methods keep one count per bin or category
// (categories are capped, see Options.MaxCategories). Ks and wasserstein need
// the values: each sample keeps them exactly up to Options.ExactValues in all
// (by default 4 Mi values, 32 MiB, shared among the features), and beyond
// that a deterministic compactor sketch (Manku–Rajagopalan–Lindsay) of
// SketchK values per level whose rank error is at most n·L/SketchK, with L
// its number of levels (⌈log₂(n/SketchK)⌉+1): 0.2% of the rows at 10⁹ rows.
// The KS statistic is then within the two samples' rank errors (its
// p-value is taken at the statistic less both errors, so that sketching
// cannot raise false drift) and the
// Wasserstein distance within their sum times the value range. When a
// reference overflows its exact store, its file is read a second time to
// count bins exactly.
package drift
