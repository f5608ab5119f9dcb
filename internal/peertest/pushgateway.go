package peertest

import "testing"

// StartPushgateway runs Debian's Prometheus Pushgateway (no persistence
// file) and waits for /-/ready.
func StartPushgateway(t testing.TB, extra ...string) *Proc {
	t.Helper()
	bin := LookPath(t, "prometheus-pushgateway")
	addr := FreeAddr(t)
	url := "http://" + addr
	args := append([]string{"--web.listen-address=" + addr, "--log.level=warn"}, extra...)
	return Start(t, url, addr, StatusOK(url+"/-/ready"), bin, args...)
}
