package redaction

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/peertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRedactionEndToEnd sends at least 200 fake secrets of every kind and
// at least 200 look-alikes, in every position, to the real `vigil serve`
// (debug logging on, forwarding to a backend), then looks for every
// secret and its distinctive substrings in every file of the data
// directory, every trace and log record of the trace store, the HTTP API's
// answers, the CLI's output, Vigil's own logs and what the backend
// received: none may be there. Every case must arrive, and at most 1% of
// the look-alikes may change, read back through the API and at the
// backend.
func TestRedactionEndToEnd(t *testing.T) {
	bin, err := peertest.BuildVigil()
	if err != nil {
		t.Skipf("the vigil binary cannot be built: %s", strings.SplitN(err.Error(), "\n", 2)[0])
	}
	cases := buildCases(2026, 5)
	nSecrets, nKinds := checkCorpus(t, cases)

	password, header, probed := probes()
	be, beAddr := startBackend(t, probed)
	cfg := filepath.Join(t.TempDir(), "vigil.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("forwarding:\n  endpoint: http://svc:"+password+"@"+beAddr+"\n"+
		"  headers: [\"X-Api-Key: "+header+"\"]\nspanmetrics:\n  flush_interval: 0s\n"), 0o644))
	dataDir := t.TempDir()
	grpcAddr, httpAddr := peertest.FreeAddr(t), peertest.FreeAddr(t)
	p := peertest.StartVigil(t, "--config", cfg, "--data-dir", dataDir, "--log-level", "debug",
		"--otlp-grpc-listen", grpcAddr, "--otlp-http-listen", httpAddr)

	var s sent
	sendSDKTraces(t, grpcAddr, cases, &s)
	sendPdataTraces(t, httpAddr, cases, &s)
	sendSDKLogs(t, httpAddr, cases, &s)
	sendPdataLogs(t, httpAddr, cases, &s)
	traceIDs := append(s.traceIDs, sendDone(t, httpAddr))
	for _, c := range cases {
		require.NotEmpty(t, c.placed, "case %s was sent", c.id)
	}

	waitFor(t, "the span metrics of the last span", func() bool {
		var names []string
		_ = json.Unmarshal(data(t, get(t, p.URL, "/api/v1/label/span_name/values")), &names)
		return slices.Contains(names, doneSpan)
	})
	waitFor(t, "every case at the backend", func() bool {
		tds, lds := be.received()
		return len(spansByCase(tds...))+len(logsByCase(lds...)) == len(cases)
	})

	sc := newScanner(append(slices.Clone(cases), probed...))
	spans, logs := checkAPI(t, p.URL, sc, cases, traceIDs, s.logs)
	changedAPI, benign := checkArrived(t, "API", cases, spans, logs)
	checkCLI(t, bin, p.URL, sc, cases, traceIDs)
	spans, logs = checkForwarded(t, be, sc)
	changedFwd, _ := checkArrived(t, "forwarded", cases, spans, logs)

	require.NoError(t, p.Stop())
	checkOwnLogs(t, sc, p.Output())
	scanDataDir(t, sc, dataDir)
	dumpStore(t, sc, filepath.Join(dataDir, "traces"), len(traceIDs), s.logs)

	for _, l := range sc.leaks {
		t.Errorf("LEAK: %s secret (case %s, %s) in %s: %q", l.c.kind, l.c.id, l.c.pos.describe(), l.output, l.sub)
	}
	t.Logf("%d secrets of %d kinds and %d look-alikes in %d positions; %d needles looked for in:%s",
		nSecrets, nKinds, benign, len(positions), sc.needles, sc.summary())
	t.Logf("secrets found: %d; look-alikes changed: %d of %d through the API (%.1f%%), %d of %d at the backend (%.1f%%)",
		len(sc.leaks), changedAPI, benign, pct(changedAPI, benign), changedFwd, benign, pct(changedFwd, benign))
	require.Zero(t, len(sc.leaks), "secrets survived")
	require.LessOrEqual(t, pct(changedAPI, benign), 1.0)
	require.LessOrEqual(t, pct(changedFwd, benign), 1.0)
}

func pct(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }

// checkCorpus requires at least 200 secrets and 200 look-alikes, and each
// position to hold both; it returns the number of secrets and of kinds.
func checkCorpus(t *testing.T, cases []*tcase) (secrets, kinds int) {
	kind, used := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		if c.secret {
			secrets++
			kind[c.kind] = true
		}
		used[c.pos.name+map[bool]string{true: "/secret", false: "/benign"}[c.secret]] = true
	}
	require.GreaterOrEqual(t, secrets, 200)
	require.GreaterOrEqual(t, len(cases)-secrets, 200)
	for _, p := range positions {
		require.True(t, used[p.name+"/secret"] && used[p.name+"/benign"], "position %s holds secrets and look-alikes", p.name)
	}
	return secrets, len(kind)
}

// checkOwnLogs scans Vigil's output: its logs at debug level, among them
// the backend's partial-success message, which quoted a secret and must
// be there redacted.
func checkOwnLogs(t *testing.T, sc *scanner, own string) {
	require.Contains(t, own, "level=DEBUG", "Vigil logged at debug level")
	refused := 0
	for _, line := range strings.Split(own, "\n") {
		if strings.Contains(line, "OTLP backend refused part of a batch") {
			if refused++; refused == 1 {
				t.Logf("Vigil logged the backend's answer: %s", line)
			}
			require.Contains(t, line, "[REDACTED", "the backend's message is logged, redacted")
		}
	}
	require.Positive(t, refused, "Vigil logged the backend's partial-success message")
	sc.scan(outOwnLogs, "vigil serve's stderr", []byte(own))
}
