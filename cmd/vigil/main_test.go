package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-obs/vigil/internal/peertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// result is what one call of Run left behind.
type result struct {
	stdout, stderr string
	err            error
	code           int
}

// runVigil calls Run in-process with stdin and args.
func runVigil(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(t.Context(), args, strings.NewReader(stdin), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err, code: exitCode(err)}
}

// requireUsage checks a usage error: exit 2 and one line on stderr, naming
// what contains says.
func requireUsage(t *testing.T, r result, contains string) {
	t.Helper()
	require.Equal(t, 2, r.code, "exit code; stderr: %s", r.stderr)
	requireOneLine(t, r, contains)
}

// requireOneLine checks that stderr is exactly one "vigil: ..." line that
// contains contains, with nothing on stdout.
func requireOneLine(t *testing.T, r result, contains string) {
	t.Helper()
	require.Empty(t, r.stdout)
	require.Regexp(t, `^vigil: [^\n]+\n$`, r.stderr)
	require.Contains(t, r.stderr, contains)
	require.NotContains(t, r.stderr, "goroutine ")
	require.NotContains(t, r.stderr, "Usage:")
}

// serveProc is a `vigil serve` running in-process.
type serveProc struct {
	url    string
	stdout *peertest.SyncBuffer
	stderr *peertest.SyncBuffer
	done   chan error
	client *http.Client
}

var listeningRE = regexp.MustCompile(`msg=listening address=(\S+)`)

// startServe runs Run(ctx, args) in a goroutine and waits, polling with a
// deadline, until the server logs the address it listens on and answers
// /-/ready. Cancel ctx and read done to stop it.
func startServe(t *testing.T, ctx context.Context, args ...string) *serveProc {
	t.Helper()
	s := &serveProc{stdout: &peertest.SyncBuffer{}, stderr: &peertest.SyncBuffer{}, done: make(chan error, 1), client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(s.client.CloseIdleConnections)
	if len(args) > 0 && args[0] == "serve" {
		args = append(slices.Clone(args), peertest.OTLPFlags(args)...)
	}
	go func() { s.done <- Run(ctx, args, strings.NewReader(""), s.stdout, s.stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = "http://" + m[1]
			break
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve returned before listening: %v\n%s", err, s.stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "serve is not listening after 30s:\n%s", s.stderr)
		time.Sleep(20 * time.Millisecond)
	}
	s.waitFor(t, func() bool {
		code, _ := s.get(t, "/-/ready")
		return code == http.StatusOK
	}, "/-/ready")
	return s
}

// get returns the status and body of GET path.
func (s *serveProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return httpGet(t, s.client, s.url+path)
}

// httpGet returns the status and body of GET url; status 0 and the error
// when there is no answer.
func httpGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds or 30 s pass.
func (s *serveProc) waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	waitFor(t, cond, what, s.stderr.String)
}

// waitFor polls cond until it holds or 30 s pass; logs tells what the
// server said, for the failure message.
func waitFor(t *testing.T, cond func() bool, what string, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "%s: not after 30s; server output:\n%s", what, logs())
		time.Sleep(50 * time.Millisecond)
	}
}

// vectorSample is one element of an instant vector in the API's JSON.
type vectorSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// queryVector evaluates an instant query through the HTTP API.
func queryVector(t *testing.T, s *serveProc, q string) []vectorSample {
	t.Helper()
	return queryURL(t, s.client, s.url, q)
}

// queryURL evaluates an instant query through the HTTP API at base.
func queryURL(t *testing.T, c *http.Client, base, q string) []vectorSample {
	t.Helper()
	code, body := httpGet(t, c, base+"/api/v1/query?query="+url.QueryEscape(q))
	require.Equal(t, http.StatusOK, code, body)
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string         `json:"resultType"`
			Result     []vectorSample `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Equal(t, "success", resp.Status)
	require.Equal(t, "vector", resp.Data.ResultType)
	return resp.Data.Result
}
