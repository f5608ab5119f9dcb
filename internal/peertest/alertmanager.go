package peertest

import (
	"os"
	"path/filepath"
	"testing"
)

// alertmanagerConfig routes every alert to one receiver that notifies
// nobody, with a short group_wait so that tests see groups form quickly.
const alertmanagerConfig = `route:
  receiver: default
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: default
`

// Alertmanager is a running Debian prometheus-alertmanager (0.25) that a
// test can stop and start again on the same port.
type Alertmanager struct {
	*Proc
	bin  string
	args []string
}

// StartAlertmanager runs Debian's prometheus-alertmanager on a free
// 127.0.0.1 port with clustering off, a configuration with one default
// receiver, and its storage (silences, notification log) in a temporary
// directory; it waits for /-/ready. extra flags are appended.
func StartAlertmanager(t testing.TB, extra ...string) *Alertmanager {
	t.Helper()
	bin := LookPath(t, "prometheus-alertmanager")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(alertmanagerConfig), 0o644); err != nil {
		t.Fatalf("write alertmanager config: %v", err)
	}
	addr := FreeAddr(t)
	args := append([]string{
		"--config.file=" + cfg,
		"--storage.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--cluster.listen-address=",
		"--log.level=warn",
	}, extra...)
	a := &Alertmanager{bin: bin, args: args}
	a.Proc = Start(t, "http://"+addr, addr, StatusOK("http://"+addr+"/-/ready"), bin, args...)
	return a
}

// Restart stops Alertmanager if it runs and starts it again with the same
// flags, port and storage. Alertmanager keeps alerts in memory only, so
// it comes back without any.
func (a *Alertmanager) Restart(t testing.TB) {
	t.Helper()
	if err := a.Stop(); err != nil {
		t.Fatalf("stop alertmanager: %v", err)
	}
	a.Proc = Start(t, a.URL, a.Addr, StatusOK(a.URL+"/-/ready"), a.bin, a.args...)
}
