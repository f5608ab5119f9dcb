package peertest

import "testing"

// StartPushgateway runs Debian's Prometheus Pushgateway and waits for
// /-/ready. It keeps metrics in memory only: Debian's default persistence
// file, /var/lib/prometheus/pushgateway.data, would carry groups from one
// test run (or another test) into the next.
func StartPushgateway(t testing.TB, extra ...string) *Proc {
	t.Helper()
	bin := LookPath(t, "prometheus-pushgateway")
	addr := FreeAddr(t)
	url := "http://" + addr
	args := append([]string{"--web.listen-address=" + addr, "--log.level=warn", "--persistence.file="}, extra...)
	return Start(t, url, addr, StatusOK(url+"/-/ready"), bin, args...)
}
