package limits

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a log destination safe for the reload goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename, as a config map update does, so that a read never
	// sees half a file.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

func TestNewWithoutFile(t *testing.T) {
	d := Limits{IngestionRate: 10}
	o, err := New(d, "", 0, nil, nil)
	require.NoError(t, err)
	require.Equal(t, d, o.For("anyone"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- o.Run(ctx) }()
	cancel()
	require.NoError(t, <-done)
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := New(Limits{}, filepath.Join(dir, "missing.yml"), 0, nil, nil)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "read runtime limits file: ")

	bad := filepath.Join(dir, "bad.yml")
	writeFile(t, bad, "overrides:\n  a:\n    ingestion_rat: 1\n")
	_, err = New(Limits{}, bad, 0, nil, nil)
	require.EqualError(t, err, bad+`:3: tenant "a": unknown limit "ingestion_rat" (the limits are `+strings.Join(fieldNames(), ", ")+")")

	_, err = New(Limits{MaxActiveSeries: -1}, "", 0, nil, nil)
	require.EqualError(t, err, "default limits: max_active_series: must be 0 (unlimited) or more, not -1")

	// A failed New registers nothing: the fixed file loads on the same
	// registry.
	reg := prometheus.NewRegistry()
	_, err = New(Limits{}, bad, 0, nil, reg)
	require.Error(t, err)
	writeFile(t, bad, "overrides:\n  a:\n    ingestion_rate: 1\n")
	o, err := New(Limits{}, bad, 0, nil, reg)
	require.NoError(t, err)
	require.Equal(t, 1.0, o.For("a").IngestionRate)
}

// The runtime file is read again while Run runs: a change shows in For
// without a restart, a bad file keeps the last good limits (logged once
// and counted), and a fixed file loads again.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits.yml")
	writeFile(t, path, "overrides:\n  a:\n    ingestion_rate: 100\n")
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	defaults := Limits{IngestionRate: 10, MaxActiveSeries: 1000}
	o, err := New(defaults, path, 5*time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	require.NoError(t, err)
	require.Equal(t, Limits{IngestionRate: 100, MaxActiveSeries: 1000}, o.For("a"))
	require.Equal(t, defaults, o.For("b"))
	first := testutil.ToFloat64(o.m.lastSuccess)
	require.NotZero(t, first)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- o.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	writeFile(t, path, "overrides:\n  a:\n    ingestion_rate: 200\n  b:\n    max_active_series: 5\n")
	require.Eventually(t, func() bool { return o.For("a").IngestionRate == 200 }, 5*time.Second, time.Millisecond)
	require.Equal(t, Limits{IngestionRate: 10, MaxActiveSeries: 5}, o.For("b"))

	writeFile(t, path, "overrides:\n  a:\n    ingestion_rate: -1\n")
	require.Eventually(t, func() bool { return testutil.ToFloat64(o.m.failures) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 200.0, o.For("a").IngestionRate, "the last good limits stay")
	require.Equal(t, 5, o.For("b").MaxActiveSeries)
	require.Zero(t, testutil.ToFloat64(o.m.successful))
	// The same bad file is not reported again.
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, 1.0, testutil.ToFloat64(o.m.failures))

	writeFile(t, path, "overrides:\n  a:\n    ingestion_rate: 300\n")
	require.Eventually(t, func() bool { return o.For("a").IngestionRate == 300 }, 5*time.Second, time.Millisecond)
	require.Equal(t, defaults, o.For("b"), "a tenant no longer in the file is back to the defaults")
	require.Equal(t, 1.0, testutil.ToFloat64(o.m.successful))

	require.NoError(t, os.Remove(path))
	require.Eventually(t, func() bool { return testutil.ToFloat64(o.m.failures) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 300.0, o.For("a").IngestionRate)

	var bad []string
	for _, l := range logs.lines() {
		if strings.Contains(l, "level=ERROR") {
			bad = append(bad, l)
		}
	}
	require.Len(t, bad, 2, "one line per bad file:\n%s", strings.Join(logs.lines(), "\n"))
	require.Contains(t, bad[0], `limits.yml:3: tenant \"a\": ingestion_rate: must be 0 (unlimited) or more, not -1`)
	require.Contains(t, bad[1], "no such file or directory")

	n, err := testutil.GatherAndCount(reg,
		"vigil_tenant_limits_reload_failures_total",
		"vigil_tenant_limits_last_reload_success_timestamp_seconds",
		"vigil_tenant_limits_last_reload_successful")
	require.NoError(t, err)
	require.Equal(t, 3, n)
}

// Reload loads the file on request even when it did not change, and
// reports a bad one each time.
func TestReloadOnRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits.yml")
	writeFile(t, path, "overrides:\n  a:\n    max_push_groups: 1\n")
	o, err := New(Limits{}, path, time.Hour, nil, nil)
	require.NoError(t, err)
	writeFile(t, path, "overrides:\n  a:\n    max_push_groups: 2\n")
	require.NoError(t, o.Reload())
	require.Equal(t, 2, o.For("a").MaxPushGroups)
	writeFile(t, path, "overrides: [")
	require.Error(t, o.Reload())
	require.Error(t, o.Reload())
	require.Equal(t, 2.0, testutil.ToFloat64(o.m.failures))
	require.Equal(t, 2, o.For("a").MaxPushGroups)
}
