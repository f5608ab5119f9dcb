package logsignals

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// exampleLine is one line of testdata/lines.txt.
type exampleLine struct {
	lineNo int
	want   Events
	xid    int
	pci    string
	text   string
}

// readLines reads testdata/lines.txt.
func readLines(t testing.TB) []exampleLine {
	t.Helper()
	f, err := os.Open("testdata/lines.txt")
	require.NoError(t, err)
	defer f.Close()
	byName := map[string]Event{}
	for _, e := range AllEvents() {
		byName[e.String()] = e
	}
	var out []exampleLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ex := exampleLine{lineNo: n}
		events, rest, ok := strings.Cut(line, " ")
		require.True(t, ok, "line %d has no text", n)
		if events != "-" {
			for name := range strings.SplitSeq(events, ",") {
				e, ok := byName[name]
				require.True(t, ok, "line %d: unknown event %q", n, name)
				ex.want.Add(e)
			}
		}
		for strings.HasPrefix(rest, "xid=") || strings.HasPrefix(rest, "pci=") {
			var field string
			field, rest, _ = strings.Cut(rest, " ")
			k, v, _ := strings.Cut(field, "=")
			if k == "xid" {
				ex.xid, err = strconv.Atoi(v)
				require.NoError(t, err, "line %d", n)
			} else {
				ex.pci = v
			}
		}
		ex.text = strings.ReplaceAll(rest, `\n`, "\n")
		out = append(out, ex)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestLinesFile(t *testing.T) {
	lines := readLines(t)
	seen := Events(0)
	misses := 0
	for _, ex := range lines {
		// A line is a record's body: text, or a JSON object.
		lr := plog.NewLogRecord()
		lr.Body().SetStr(ex.text)
		got := MatchRecord(lr)
		require.Equal(t, ex.want.String(), got.Events.String(), "line %d: %s", ex.lineNo, ex.text)
		if ex.want.Has(EventXID) {
			require.Equal(t, ex.xid, got.XID, "line %d", ex.lineNo)
			require.Equal(t, ex.pci, got.PCI, "line %d", ex.lineNo)
		}
		seen |= ex.want
		if ex.want.Empty() {
			misses++
		}
	}
	for _, e := range AllEvents() {
		require.True(t, seen.Has(e), "testdata/lines.txt has no example of %s", e)
	}
	require.GreaterOrEqual(t, misses, 10, "near-misses in testdata/lines.txt")
}

// TestLinesInRecords checks that the lines match the same way as the
// message of a JSON body, of a map body, and inside a longer text.
func TestLinesInRecords(t *testing.T) {
	for _, ex := range readLines(t) {
		if strings.HasPrefix(strings.TrimSpace(ex.text), "{") {
			continue
		}
		want := ex.want
		want.Del(EventHTTP5xx) // the request line is quoted in JSON; see TestJSONAccessLog
		lr := plog.NewLogRecord()
		b, err := jsonString(map[string]any{"level": "error", "msg": ex.text})
		require.NoError(t, err)
		lr.Body().SetStr(b)
		got := MatchRecord(lr).Events
		got.Del(EventHTTP5xx)
		require.Equal(t, want.String(), got.String(), "JSON body, line %d", ex.lineNo)

		lr.Body().SetEmptyMap().PutStr("message", ex.text)
		require.Equal(t, ex.want.String(), MatchRecord(lr).Events.String(), "map body, line %d", ex.lineNo)

		lr.Body().SetStr("2026-11-12T02:47:31.514Z stderr F " + ex.text)
		require.Equal(t, ex.want.String(), MatchRecord(lr).Events.String(), "CRI-prefixed text, line %d", ex.lineNo)
	}
}

func TestMatchRecord(t *testing.T) {
	f := func(name string, build func(lr plog.LogRecord), want ...Event) {
		t.Helper()
		lr := plog.NewLogRecord()
		build(lr)
		var w Events
		for _, e := range want {
			w.Add(e)
		}
		require.Equal(t, w.String(), MatchRecord(lr).Events.String(), name)
	}
	body := func(s string) func(plog.LogRecord) {
		return func(lr plog.LogRecord) { lr.Body().SetStr(s) }
	}
	f("JSON message", body(`{"level":"error","message":"RuntimeError: CUDA error: an illegal memory access was encountered"}`), EventCUDAError)
	f("JSON log field (Docker)", body(`{"log":"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n","stream":"stderr"}`), EventCUDAOOM)
	f("journald MESSAGE", body(`{"MESSAGE":"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.","_HOSTNAME":"gpu-node-06"}`), EventXID, EventGPUFellOffBus)
	f("nested error.message", body(`{"level":"error","error":{"type":"DistBackendError","message":"NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"}}`), EventNCCLError)
	f("JSON other fields are not messages", body(`{"msg":"starting","env":"NCCL timeout","cmd":"kill -9 OOMKilled"}`))
	f("JSON status number 5xx", body(`{"msg":"done","status":503}`), EventHTTP5xx)
	f("JSON status_code", body(`{"status_code":500}`), EventHTTP5xx)
	f("JSON statusCode string", body(`{"statusCode":"504"}`), EventHTTP5xx)
	f("JSON flat OTel key", body(`{"http.response.status_code":502}`), EventHTTP5xx)
	f("JSON envoy response_code", body(`{"response_code":503,"path":"/v1/chat/completions"}`), EventHTTP5xx)
	f("JSON status 200", body(`{"status":200}`))
	f("JSON status 404", body(`{"status":"404"}`))
	f("JSON status 600 is no HTTP status", body(`{"status":600}`))
	f("JSON status 500.5", body(`{"status":500.5}`))
	f("JSON status text", body(`{"status":"error"}`))
	f("broken JSON falls back to text", body(`{"msg": "RuntimeError: CUDA error: device-side assert triggered"`), EventCUDAError)
	f("attribute http.response.status_code int", func(lr plog.LogRecord) {
		lr.Body().SetStr("request finished")
		lr.Attributes().PutInt("http.response.status_code", 502)
	}, EventHTTP5xx)
	f("attribute http.status_code string", func(lr plog.LogRecord) {
		lr.Attributes().PutStr("http.status_code", "500")
	}, EventHTTP5xx)
	f("attribute 404", func(lr plog.LogRecord) {
		lr.Attributes().PutInt("http.response.status_code", 404)
	})
	f("map body with nested status", func(lr plog.LogRecord) {
		m := lr.Body().SetEmptyMap()
		m.PutStr("msg", "request")
		m.PutEmptyMap("http").PutEmptyMap("response").PutInt("status_code", 503)
	}, EventHTTP5xx)
	f("map body status double", func(lr plog.LogRecord) {
		lr.Body().SetEmptyMap().PutDouble("status", 500)
	}, EventHTTP5xx)
	f("bytes body", func(lr plog.LogRecord) {
		lr.Body().SetEmptyBytes().FromRaw([]byte("CUDA error: x"))
	})
	f("empty body", func(plog.LogRecord) {})
	f("access line and attribute count once", func(lr plog.LogRecord) {
		lr.Body().SetStr(`INFO:     10.0.0.1:1 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error`)
		lr.Attributes().PutInt("http.response.status_code", 500)
	}, EventHTTP5xx)
}

func TestMatchTextDetails(t *testing.T) {
	f := func(line string, want string) {
		t.Helper()
		require.Equal(t, want, MatchText(line).Events.String(), line)
	}
	f("", "")
	f("NCCL", "")
	f("Xid", "")
	f(`"GET / HTTP/1.1" 5`, "")
	f(`"GET / HTTP/1.1" 5000`, "")
	f(`"GET / HTTP/1.1" 599`, "http_5xx")
	f("NVRM: Xid (PCI:0000:3b:00): 0, nothing", "")
	f("NVRM: Xid (PCI:0000:3B:00.0): 94, pid=1, Contained: ...", "xid")
	require.Equal(t, "0000:3b:00.0", MatchText("NVRM: Xid (PCI:0000:3B:00.0): 94, pid=1").PCI)
	f("oom-kill:constraint=CONSTRAINT_NONE then later oom-kill event", "")
	f("CUDA out of memory; CUDA error: illegal", "cuda_oom")
	f("NCCL timeout: 1800", "")
	f("nccl timed out waiting for rank 3", "nccl_timeout")
	f("ProcessGroupNCCL.cpp:1617 Process group watchdog thread terminated with exception: NCCL error: unhandled cuda error", "nccl_error")
}

// jsonString encodes v as one line of JSON.
func jsonString(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func FuzzMatchText(f *testing.F) {
	for _, ex := range readLines(f) {
		f.Add(ex.text)
	}
	f.Add(`{"status":`)
	f.Add(`{"http":{"response":{"status_code":{"x":1}}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		m := MatchText(s)
		if m.Events.Has(EventXID) {
			require.Positive(t, m.XID)
			require.NotEmpty(t, m.PCI)
		}
		if !mayMatch(s) {
			require.True(t, m.Events.Empty(), "the gate let a match through")
		}
		require.False(t, m.Events.Has(EventCUDAOOM) && m.Events.Has(EventCUDAError))
		require.False(t, m.Events.Has(EventNCCLTimeout) && m.Events.Has(EventNCCLError))
		lr := plog.NewLogRecord()
		lr.Body().SetStr(s)
		lr.Attributes().PutStr("http.response.status_code", s)
		_ = MatchRecord(lr)
		lr.Body().SetEmptyMap().PutStr("msg", s)
		_ = MatchRecord(lr)
	})
}
