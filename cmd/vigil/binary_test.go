package main

import (
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// TestBinaryGracefulShutdown stops the real binary with SIGTERM and then
// with SIGINT (peertest's Stop), and checks that both exit 0 having closed
// the store, and that what was stored before a stop is there after a
// restart.
func TestBinaryGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "127.0.0.1:0")
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)

	// First run: our own process handle, to send SIGTERM.
	addr := peertest.FreeAddr(t)
	out := &peertest.SyncBuffer{}
	cmd := exec.Command(peertest.Vigil(t), append([]string{"serve", "--config", cfg, "--listen", addr}, peertest.OTLPFlags(nil)...)...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := "http://" + addr
	waitFor(t, func() bool {
		code, _ := httpGet(t, client, base+"/-/ready")
		return code == http.StatusOK
	}, "/-/ready", out.String)
	selfSamples := `count_over_time(up{job="vigil",instance="` + addr + `"}[1h])`
	var before int
	waitFor(t, func() bool {
		v := queryURL(t, client, base, selfSamples)
		if len(v) == 1 {
			before, _ = strconv.Atoi(v[0].Value[1].(string))
		}
		return before >= 2
	}, "two samples of up", out.String)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status after SIGTERM; output:\n%s", out)
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil still running 30s after SIGTERM:\n%s", out)
	}
	requireCleanStop(t, out.String())

	// Second run on the same directory: the samples are there.
	p := peertest.StartVigil(t, "--config", cfg)
	v := queryURL(t, client, p.URL, selfSamples)
	require.Len(t, v, 1, "the first run's series after a restart")
	after, err := strconv.Atoi(v[0].Value[1].(string))
	require.NoError(t, err)
	require.GreaterOrEqual(t, after, before)
	require.NoError(t, p.Stop())
	requireCleanStop(t, p.Output())
}

// requireCleanStop checks the logs of a server that was stopped.
func requireCleanStop(t *testing.T, logs string) {
	t.Helper()
	require.NotContains(t, logs, "level=ERROR")
	require.NotContains(t, logs, "panic")
	http, closed := strings.Index(logs, `msg="HTTP server stopped"`), strings.Index(logs, `msg="store closed"`)
	require.Positive(t, http, logs)
	require.Greater(t, closed, http, logs)
}
