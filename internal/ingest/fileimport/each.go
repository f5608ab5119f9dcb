package fileimport

import (
	"math"

	"github.com/prometheus/prometheus/model/labels"
)

// Each calls fn for every sample of f in file order, identical duplicates
// left out. lset is only valid during the call.
func (f *File) Each(fn func(lset labels.Labels, t int64, v float64) error) error {
	_, err := f.each(math.MinInt64, math.MaxInt64, fn)
	return err
}
