package catalog

import (
	"fmt"
	"math"
	"strings"
)

// ClockReason is one bit of DCGM_FI_DEV_CLOCKS_EVENT_REASONS (formerly
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, NVML's clocks event reasons): why the
// GPU's clocks are below their maximum.
type ClockReason uint64

// The clock-event reason bits.
const (
	ClockIdle            ClockReason = 0x1
	ClockSettings        ClockReason = 0x2
	ClockSWPowerCap      ClockReason = 0x4
	ClockHWSlowdown      ClockReason = 0x8
	ClockSyncBoost       ClockReason = 0x10
	ClockSWThermal       ClockReason = 0x20
	ClockHWThermal       ClockReason = 0x40
	ClockHWPowerBrake    ClockReason = 0x80
	ClockDisplaySettings ClockReason = 0x100
)

// ClockReasonInfo describes one reason bit.
type ClockReasonInfo struct {
	Bit ClockReason
	// Name is a short stable name, e.g. sw_power_cap.
	Name string
	// Meaning is what the bit says, in words.
	Meaning string
	// Thermal and Power say which fault kind the bit evidences; Benign
	// bits (idle, application clock settings, sync boost) are no fault.
	Thermal, Power, Benign bool
}

// ClockReasons returns every known reason bit, lowest first.
func ClockReasons() []ClockReasonInfo {
	return []ClockReasonInfo{
		{ClockIdle, "idle", "nothing running on the GPU; clocks are low on purpose", false, false, true},
		{ClockSettings, "clocks_setting", "application clocks were set lower (nvidia-smi -ac)", false, false, true},
		{ClockSWPowerCap, "sw_power_cap", "the power draw reached the power limit; the driver lowers clocks", false, true, false},
		{ClockHWSlowdown, "hw_slowdown", "hardware slowdown (by half or more): high temperature or power brake or a PSU alert", true, true, false},
		{ClockSyncBoost, "sync_boost", "clocks held to match the other GPUs of a sync-boost group", false, false, true},
		{ClockSWThermal, "sw_thermal", "the GPU or memory temperature reached its software limit", true, false, false},
		{ClockHWThermal, "hw_thermal", "hardware thermal slowdown: the temperature is too high", true, false, false},
		{ClockHWPowerBrake, "hw_power_brake", "an external power brake (the system's power supply) slowed the GPU", false, true, false},
		{ClockDisplaySettings, "display_clock_setting", "display clock settings hold the GPU's clocks", false, false, true},
	}
}

// DecodeClockReasons returns the reasons set in a DCGM clock-event bitmask
// value, lowest bit first, and the bits it does not know. A negative,
// fractional or blank value decodes to nothing.
func DecodeClockReasons(v float64) (reasons []ClockReasonInfo, unknown uint64) {
	if IsBlank(v) || v < 0 || v >= 1<<32 || v != math.Trunc(v) {
		return nil, 0
	}
	mask := uint64(v)
	var known uint64
	for _, r := range ClockReasons() {
		known |= uint64(r.Bit)
		if mask&uint64(r.Bit) != 0 {
			reasons = append(reasons, r)
		}
	}
	return reasons, mask &^ known
}

// FormatClockReasons writes a bitmask as its reason names, e.g.
// "sw_power_cap|hw_slowdown", or "none".
func FormatClockReasons(v float64) string {
	rs, unknown := DecodeClockReasons(v)
	names := make([]string, 0, len(rs)+1)
	for _, r := range rs {
		names = append(names, r.Name)
	}
	if unknown != 0 {
		names = append(names, fmt.Sprintf("0x%x", unknown))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}
