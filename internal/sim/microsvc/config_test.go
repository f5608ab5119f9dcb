package microsvc

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.Resolve()
	require.Equal(t, Config{Start: DefaultStart, Duration: time.Hour, Step: 15 * time.Second, App: AppSockShop,
		Style: StylePrometheus, Namespace: "sock-shop", FaultScale: 1, NoiseScale: 1}, c)
	require.NoError(t, c.Validate())
	require.Equal(t, c, c.Resolve())
	require.Equal(t, "online-boutique", Config{App: AppOnlineBoutique}.Resolve().Namespace)
}

func TestConfigValidate(t *testing.T) {
	f := func(cfg Config, want string) {
		t.Helper()
		_, err := New(cfg, FaultSpec{})
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.ErrorContains(t, err, want)
	}
	f(Config{Duration: -time.Minute}, "duration -1m0s is outside (0, 168h0m0s]")
	f(Config{Duration: 8 * 24 * time.Hour}, "duration 192h0m0s is outside")
	f(Config{Step: 500 * time.Millisecond}, "step 500ms must be at least 1s")
	f(Config{Step: 1500*time.Millisecond + time.Microsecond}, "whole number of milliseconds")
	f(Config{Duration: time.Minute}, "duration 1m0s holds fewer than 8 steps of 15s")
	f(Config{App: "hipster-shop"}, `unknown app "hipster-shop"`)
	f(Config{Style: "csv"}, `unknown style "csv"`)
	f(Config{Namespace: "Sock_Shop"}, `namespace "Sock_Shop" is not a Kubernetes name`)
	f(Config{FaultScale: -1}, "fault scale -1 is outside (0, 10]")
	f(Config{FaultScale: math.NaN()}, "fault scale NaN")
	f(Config{NoiseScale: 11}, "noise scale 11 is outside (0, 10]")
	f(Config{NoiseScale: math.Inf(1)}, "noise scale +Inf")
}

func TestFaultSpecValidate(t *testing.T) {
	f := func(spec FaultSpec, want string) {
		t.Helper()
		_, err := New(Config{}, spec)
		require.ErrorIs(t, err, ErrInvalidFault)
		require.ErrorContains(t, err, want)
	}
	f(FaultSpec{Kind: "disk"}, `unknown kind "disk" (want "cpu", "memory", "latency" or "availability")`)
	f(FaultSpec{Subtle: true}, "a healthy run (no kind) takes no subtle")
	f(FaultSpec{Service: "carts"}, "a healthy run")
	f(FaultSpec{Kind: FaultCPU, Service: "cartservice"}, `app sock-shop has no service "cartservice" (it has front-end, orders,`)
	f(FaultSpec{Kind: FaultCPU, After: time.Hour}, "onset 1h0m0s is outside [step, duration=1h0m0s)")
	f(FaultSpec{Kind: FaultCPU, After: -time.Second}, "onset -1s is outside")
	f(FaultSpec{Kind: FaultCPU, After: 10 * time.Second}, "onset 10s is before the second scrape (step 15s)")
}
