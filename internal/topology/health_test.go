package topology

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
)

func TestHint(t *testing.T) {
	f := func(set func(*gpuSignals), want Health, reason string) {
		t.Helper()
		s := newGPUSignals()
		set(&s)
		h, why := s.hint(catalog.Default(), "5m")
		require.Equal(t, want, h, why)
		require.Contains(t, why, reason)
	}
	f(func(*gpuSignals) {}, HealthUnknown, "none of its series")
	f(func(s *gpuSignals) { s.temp, s.util = 60, 0.9 }, HealthOK, "")
	f(func(s *gpuSignals) { s.temp, s.slowdown = 90, 90 }, HealthHot, "90 °C, at or above its slowdown temperature 90 °C")
	f(func(s *gpuSignals) { s.temp, s.slowdown = 89, 90 }, HealthOK, "")
	f(func(s *gpuSignals) { s.temp = 99 }, HealthOK, "") // no threshold known: no guess
	f(func(s *gpuSignals) { s.clocks = float64(catalog.ClockSWThermal) }, HealthHot, "sw_thermal")
	f(func(s *gpuSignals) { s.clocks = float64(catalog.ClockHWSlowdown | catalog.ClockHWPowerBrake) }, HealthThrottled, "hw_slowdown|hw_power_brake")
	f(func(s *gpuSignals) { s.clocks = float64(catalog.ClockSWPowerCap) }, HealthOK, "") // power capping at full load is normal
	f(func(s *gpuSignals) { s.clocks = float64(catalog.ClockIdle) }, HealthIdle, "idle clock event")
	f(func(s *gpuSignals) { s.clocks, s.util = float64(catalog.ClockIdle), 0.5 }, HealthOK, "")
	f(func(s *gpuSignals) { s.util = 0.004 }, HealthIdle, "utilization 0.4%")
	f(func(s *gpuSignals) { s.engine = 0 }, HealthIdle, "graphics engine active 0%")
	f(func(s *gpuSignals) { s.dbe = 1 }, HealthECC, "1 volatile double-bit ECC errors")
	f(func(s *gpuSignals) { s.remapFailure = 1 }, HealthECC, "row remapping failed")
	f(func(s *gpuSignals) { s.xid, s.xidChanges = 48, 0 }, HealthOK, "") // sticky, unchanged: old news
	f(func(s *gpuSignals) { s.xid, s.xidChanges = 0, 1 }, HealthOK, "")  // changed back to 0
	f(func(s *gpuSignals) { s.xid, s.xidChanges = 31, 1 }, HealthXID, "XID 31 ")
	f(func(s *gpuSignals) { s.xid, s.xidChanges = 79, 2 }, HealthLost, "fell off the bus")
	f(func(s *gpuSignals) { s.xidNew, s.xid, s.xidChanges = 31, 79, 0 }, HealthXID, "XID 31 ")
	f(func(s *gpuSignals) { s.xidCodes = []int{74, 13} }, HealthXID, "XID 13 ROBUST_CHANNEL_GR_EXCEPTION, 74 ")
	f(func(s *gpuSignals) { s.xidCodes = []int{63, 43} }, HealthOK, "") // informational: a row remap event, an application fault
	f(func(s *gpuSignals) { s.xidCodes, s.dbe = []int{79}, 1 }, HealthLost, "dcgm-exporter's XID count")
	f(func(s *gpuSignals) { s.dbe, s.clocks, s.temp, s.slowdown = 2, 8, 95, 90 }, HealthECC, "") // worst first
}

func TestClassifyHost(t *testing.T) {
	f := func(v string, kind hostKind, host string) {
		t.Helper()
		k, h := classifyHost(v)
		require.Equal(t, kind, k, v)
		require.Equal(t, host, h, v)
	}
	f("gpu-node-01", hostName, "gpu-node-01")
	f("gpu-node-01:9100", hostName, "gpu-node-01")
	f("10.0.1.1:9100", hostAddress, "10.0.1.1")
	f("10.0.1.1", hostAddress, "10.0.1.1")
	f("[fd00::1]:9100", hostAddress, "fd00::1")
	f("424773df46e0", hostContainerID, "424773df46e0")
	f("ip-11111", hostName, "ip-11111")
	f("deadbeef0000deadbeef0000deadbeef0000deadbeef0000deadbeef00001234", hostContainerID, "deadbeef0000deadbeef0000deadbeef0000deadbeef0000deadbeef00001234")
}

func TestNaturalCompare(t *testing.T) {
	f := func(a, b string, want int) {
		t.Helper()
		require.Equal(t, want, naturalCompare(a, b), "%s vs %s", a, b)
		require.Equal(t, -want, naturalCompare(b, a), "%s vs %s", b, a)
	}
	f("gpu-node-9", "gpu-node-10", -1)
	f("2", "10", -1)
	f("a", "a", 0)
	f("a01", "a1", 1)
	f("a", "ab", -1)
	f("node-2b", "node-2a", 1)
}

func TestMaxKnown(t *testing.T) {
	require.Equal(t, 3.0, maxKnown(math.NaN(), 3))
	require.Equal(t, 5.0, maxKnown(5, 3))
}
