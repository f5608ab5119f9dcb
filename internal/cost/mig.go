package cost

import (
	"regexp"
	"strconv"
	"strings"
)

// migProfile reads the compute slices of a MIG GPU instance profile as
// dcgm-exporter's GPU_I_PROFILE names it: 1g.10gb, 3g.40gb, 1g.10gb+me,
// 1c.3g.40gb (a compute instance of a 3g instance: its GPU instance's
// slices).
var migProfile = regexp.MustCompile(`(?:^|\.)([1-8])g\.`)

// migSlices is how many compute slices a GPU model has: 4 on the A30, 7
// on the A100, H100, H200, H20, B200 and their kin.
func migSlices(gpuModel string) int {
	if strings.Contains(strings.ToUpper(gpuModel), "A30") {
		return 4
	}
	return 7
}

// MIGShare is the share of its GPU a MIG instance of profile holds: its
// compute slices over the GPU's (1g.10gb on an A100 or H100 is 1/7). ok is
// false for a profile it cannot read.
func MIGShare(profile, gpuModel string) (share float64, ok bool) {
	m := migProfile.FindStringSubmatch(profile)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	total := migSlices(gpuModel)
	if n > total {
		return 0, false
	}
	return float64(n) / float64(total), true
}
