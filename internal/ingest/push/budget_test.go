package push_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/admission"
	"github.com/vigil-obs/vigil/internal/ingest/push"
)

// A push is charged to the in-flight byte budget shared with the other
// ingest paths: 503 with Retry-After when it is full, and nothing of the
// push stored; the push goes through once there is room.
func TestInflightBudget(t *testing.T) {
	b := admission.NewBudget(1<<16, nil)
	e := newEnv(t, push.Options{Budget: b})
	body := "# TYPE job_last_success gauge\njob_last_success 1\n"
	other, r := b.Acquire("10.0.0.7", "push", 1<<16-10)
	require.Nil(t, r)
	code, msg := e.doHeader(t, http.MethodPut, "/metrics/job/backup", body)
	require.Equal(t, http.StatusServiceUnavailable, code, msg)
	require.Contains(t, msg, "memory.max_inflight_bytes")
	require.Empty(t, e.query(t, "job_last_success"))
	other.Release()
	code, msg = e.do(t, http.MethodPut, "/metrics/job/backup", "", body)
	require.Equal(t, http.StatusOK, code, msg)
	require.Len(t, e.query(t, "job_last_success"), 1)
}

// doHeader is do that also requires Retry-After on a 503 or 429.
func (e *env) doHeader(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
	}
	return resp.StatusCode, string(b)
}
