package reliability

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// badInput is one entry of the catalogue: a request a broken or hostile
// client sends, and the status a serious server answers it with.
type badInput struct {
	name   string
	otlp   bool // to the OTLP/HTTP port rather than the API's
	method string
	path   string
	header map[string]string
	body   []byte
	want   int
}

// outcome is what became of one bad input.
type catalogueRow struct {
	in     badInput
	status int
	up     bool
	lost   bool
}

func snappyOf(b []byte) []byte { return snappy.Encode(nil, b) }

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// rw is a Remote-Write 1.0 request of one series with samples at ts.
func rw(t *testing.T, ls []prompb.Label, ts ...int64) []byte {
	t.Helper()
	s := prompb.TimeSeries{Labels: ls}
	for i, at := range ts {
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: at, Value: float64(i + 1)})
	}
	return snappyOf(marshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{s}}))
}

// catalogue returns the bad inputs, at least 60, over remote write, OTLP,
// push, the query API and remote read.
func catalogue(t *testing.T, now time.Time) []badInput {
	ms := now.UnixMilli()
	v1 := map[string]string{"Content-Type": contentTypeV1, "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}
	v2 := map[string]string{"Content-Type": contentTypeV2, "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "2.0.0"}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	many := make([]string, 0, 600)
	for i := range 300 {
		many = append(many, fmt.Sprintf("l%03d", i), "v")
	}
	// A snappy block whose header claims 1 GiB decoded.
	hugeHeader := []byte{0x80, 0x80, 0x80, 0x80, 0x04, 0x00}
	// gzip of 80 MiB of zeros: a decompression bomb over the 64 MiB bound.
	bomb := gz(t, make([]byte, 80<<20))
	v2bad := snappyOf(marshal(t, &writev2.Request{Symbols: []string{"", "__name__", "x"},
		Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 9}, Samples: []writev2.Sample{{Value: 1, Timestamp: ms}}}}}))
	pb := map[string]string{"Content-Type": "application/x-protobuf"}
	js := map[string]string{"Content-Type": "application/json"}
	deep := strings.Repeat(`{"kvlistValue":{"values":[{"key":"k","value":`, 120) + `{"stringValue":"x"}` + strings.Repeat(`}]}}`, 120)
	deepJSON := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"s","attributes":[{"key":"a","value":` + deep + `}]}]}]}]}`
	text := map[string]string{"Content-Type": "text/plain; version=0.0.4"}
	q := func(v url.Values) string { return v.Encode() }
	nested := strings.Repeat("(", 300) + "up" + strings.Repeat(")", 300)
	return []badInput{
		// Remote write.
		{name: "GET on the write endpoint", method: "GET", path: "/api/v1/write", want: 405},
		{name: "empty body", method: "POST", path: "/api/v1/write", header: v1, want: 400},
		{name: "body not snappy", method: "POST", path: "/api/v1/write", header: v1, body: []byte("hello, not snappy"), want: 400},
		{name: "snappy of garbage, not protobuf", method: "POST", path: "/api/v1/write", header: v1, body: snappyOf([]byte{0xff, 0xff, 0xff, 0x01, 0x02}), want: 400},
		{name: "truncated snappy block", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("x"), ms)[:8], want: 400},
		{name: "Content-Encoding gzip", method: "POST", path: "/api/v1/write", header: with(v1, "Content-Encoding", "gzip"), body: rw(t, labelsOf("x"), ms), want: 415},
		{name: "Content-Type text/plain", method: "POST", path: "/api/v1/write", header: with(v1, "Content-Type", "text/plain"), body: rw(t, labelsOf("x"), ms), want: 415},
		{name: "unknown proto= message type", method: "POST", path: "/api/v1/write", header: with(v1, "Content-Type", "application/x-protobuf;proto=foo.Bar"), body: rw(t, labelsOf("x"), ms), want: 415},
		{name: "1.0 body under the 2.0 content type", method: "POST", path: "/api/v1/write", header: v2, body: rw(t, labelsOf("rw_wrong_version"), ms), want: 400},
		{name: "2.0 label ref out of the symbols", method: "POST", path: "/api/v1/write", header: v2, body: v2bad, want: 400},
		{name: "two values for one timestamp", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_dup"), ms, ms), want: 400},
		{name: "Content-Length over 16 MiB", method: "POST", path: "/api/v1/write", header: v1, body: make([]byte, 17<<20), want: 413},
		{name: "snappy header claiming 1 GiB", method: "POST", path: "/api/v1/write", header: v1, body: hugeHeader, want: 413},
		{name: "empty label name", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_bad", "", "v"), ms), want: 400},
		{name: "label name not UTF-8", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_bad", "a\xffb", "v"), ms), want: 400},
		{name: "300 labels on one series", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_bad", many...), ms), want: 400},
		{name: "label value of 20 KB", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_bad", "v", strings.Repeat("x", 20000)), ms), want: 400},
		{name: "series without a name", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, []prompb.Label{{Name: "job", Value: "x"}}, ms), want: 400},
		{name: "duplicate label names", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_bad", "a", "1", "a", "2"), ms), want: 400},
		{name: "sample an hour ahead", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_future"), ms+3600_000), want: 400},
		{name: "label value not UTF-8", method: "POST", path: "/api/v1/write", header: v1, body: rw(t, labelsOf("rw_bad", "v", "\xff\xfe"), ms), want: 400},

		// OTLP/HTTP.
		{name: "GET /v1/traces", otlp: true, method: "GET", path: "/v1/traces", want: 405},
		{name: "OTLP text/plain", otlp: true, method: "POST", path: "/v1/traces", header: text, body: []byte("x"), want: 415},
		{name: "OTLP protobuf garbage", otlp: true, method: "POST", path: "/v1/traces", header: pb, body: []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, want: 400},
		{name: "OTLP JSON syntax error", otlp: true, method: "POST", path: "/v1/logs", header: js, body: []byte(`{"resourceLogs":[`), want: 400},
		{name: "OTLP JSON of the wrong shape", otlp: true, method: "POST", path: "/v1/metrics", header: js, body: []byte(`{"resourceMetrics":"nope"}`), want: 400},
		{name: "gzip claimed, not gzip", otlp: true, method: "POST", path: "/v1/traces", header: with(pb, "Content-Encoding", "gzip"), body: []byte("plain"), want: 400},
		{name: "Content-Encoding br", otlp: true, method: "POST", path: "/v1/traces", header: with(pb, "Content-Encoding", "br"), body: []byte("x"), want: 415},
		{name: "attribute nested 120 deep", otlp: true, method: "POST", path: "/v1/traces", header: js, body: []byte(deepJSON), want: 400},
		{name: "OTLP body over 16 MiB", otlp: true, method: "POST", path: "/v1/traces", header: pb, body: make([]byte, 17<<20), want: 413},
		{name: "gzip bomb to 80 MiB", otlp: true, method: "POST", path: "/v1/logs", header: with(pb, "Content-Encoding", "gzip"), body: bomb, want: 413},
		{name: "unknown OTLP path", otlp: true, method: "POST", path: "/v1/profiles", header: pb, body: []byte{}, want: 404},
		{name: "trace id of 3 bytes", otlp: true, method: "POST", path: "/v1/traces", header: js, body: []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abcdef","spanId":"eee19b7ec3c1b174","name":"s"}]}]}]}`), want: 400},
		{name: "timestamp as a word", otlp: true, method: "POST", path: "/v1/traces", header: js, body: []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","startTimeUnixNano":"soon"}]}]}]}`), want: 400},
		{name: "OTLP JSON under the protobuf type", otlp: true, method: "POST", path: "/v1/logs", header: pb, body: []byte(`{"resourceLogs":[]}`), want: 400},
		{name: "OTLP Content-Type with a bad parameter", otlp: true, method: "POST", path: "/v1/traces", header: map[string]string{"Content-Type": "application/x-protobuf; ="}, body: []byte{}, want: 415},

		// Push (the Pushgateway's API).
		{name: "push of bad text", method: "PUT", path: "/metrics/job/cat", header: text, body: []byte("this is { not metrics\n"), want: 400},
		{name: "push without a job", method: "PUT", path: "/metrics/job/", header: text, body: []byte("x 1\n"), want: 400},
		{name: "push path with a label and no value", method: "PUT", path: "/metrics/job/cat/instance", header: text, body: []byte("x 1\n"), want: 400},
		{name: "push job in bad base64", method: "PUT", path: "/metrics/job@base64/!!!", header: text, body: []byte("x 1\n"), want: 400},
		{name: "push with PATCH", method: "PATCH", path: "/metrics/job/cat", header: text, body: []byte("x 1\n"), want: 405},
		{name: "push of a bad metric name", method: "PUT", path: "/metrics/job/cat", header: text, body: []byte("1abc 1\n"), want: 400},
		{name: "push over 16 MiB", method: "PUT", path: "/metrics/job/cat", header: text, body: bytes.Repeat([]byte("# padding\n"), 17<<20/10), want: 413},
		{name: "push of garbage protobuf", method: "PUT", path: "/metrics/job/cat", header: map[string]string{"Content-Type": "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"}, body: []byte{0x05, 0xff, 0xff}, want: 400},
		{name: "push of a type clash in one body", method: "PUT", path: "/metrics/job/cat", header: text, body: []byte("# TYPE m counter\nm 1\n# TYPE m gauge\nm 2\n"), want: 400},
		{name: "push of a reserved label in the path", method: "PUT", path: "/metrics/job/cat/__name__/x", header: text, body: []byte("x 1\n"), want: 400},

		// The query API.
		{name: "query without a query", method: "GET", path: "/api/v1/query", want: 400},
		{name: "query syntax error", method: "GET", path: "/api/v1/query?" + q(url.Values{"query": {"sum(("}}), want: 400},
		{name: "query nested 300 deep", method: "GET", path: "/api/v1/query?" + q(url.Values{"query": {nested}}), want: 400},
		{name: "query of 2 MB", method: "POST", path: "/api/v1/query", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, body: []byte(q(url.Values{"query": {strings.Repeat("up+", 700_000) + "up"}})), want: 400},
		{name: "query of 3,000 or", method: "POST", path: "/api/v1/query", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, body: []byte(q(url.Values{"query": {strings.Repeat("up or ", 3000) + "up"}})), want: 400},
		{name: "query time not a time", method: "GET", path: "/api/v1/query?" + q(url.Values{"query": {"up"}, "time": {"yesterday"}}), want: 400},
		{name: "query timeout not a duration", method: "GET", path: "/api/v1/query?" + q(url.Values{"query": {"up"}, "timeout": {"forever"}}), want: 400},
		{name: "query_range step 0", method: "GET", path: "/api/v1/query_range?" + q(url.Values{"query": {"up"}, "start": {"0"}, "end": {"100"}, "step": {"0"}}), want: 400},
		{name: "query_range end before start", method: "GET", path: "/api/v1/query_range?" + q(url.Values{"query": {"up"}, "start": {"100"}, "end": {"0"}, "step": {"1"}}), want: 400},
		{name: "query_range of 86 million points", method: "GET", path: "/api/v1/query_range?" + q(url.Values{"query": {"up"}, "start": {"0"}, "end": {"86400"}, "step": {"0.001"}}), want: 400},
		{name: "series without match[]", method: "GET", path: "/api/v1/series", want: 400},
		{name: "series with a bad selector", method: "GET", path: "/api/v1/series?" + q(url.Values{"match[]": {"{a=}"}}), want: 400},
		{name: "series selector matching everything", method: "GET", path: "/api/v1/series?" + q(url.Values{"match[]": {`{a=~".*"}`}}), want: 400},
		{name: "label values of a name not UTF-8", method: "GET", path: "/api/v1/label/a%FFb/values", want: 400},
		{name: "exemplars with a bad selector", method: "GET", path: "/api/v1/query_exemplars?" + q(url.Values{"query": {"{"}}), want: 400},
		{name: "query form of the wrong type", method: "POST", path: "/api/v1/query", header: map[string]string{"Content-Type": "application/json"}, body: []byte(`{"query":"up"}`), want: 400},
		{name: "remote read not snappy", method: "POST", path: "/api/v1/read", header: map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}, body: []byte("nope"), want: 400},
		{name: "remote read of bad protobuf", method: "POST", path: "/api/v1/read", header: map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}, body: snappyOf([]byte{0x0a, 0xff, 0xff, 0xff}), want: 400},
		{name: "unknown incident", method: "GET", path: "/api/v1/incidents/" + base64.RawURLEncoding.EncodeToString([]byte("no such")), want: 404},
		{name: "unknown API path", method: "GET", path: "/api/v1/nope", want: 404},
	}
}

// TestBadInputCatalogue sends every bad input of the catalogue to the real
// binary and records, for each, the status, whether the server still
// answers and whether data stored before it is still there. A table of
// it goes to $VIGIL_RELIABILITY_OUT/catalogue.md (make reliability).
func TestBadInputCatalogue(t *testing.T) {
	otlpAddr := peertest.FreeAddr(t)
	v := startVigilArgs(t, "", "--otlp-http-listen", otlpAddr)
	now := time.Now().Truncate(time.Second)
	var ts []int64
	for i := range 10 {
		ts = append(ts, now.Add(time.Duration(i-9)*15*time.Second).UnixMilli())
	}
	var sentinel prompb.WriteRequest
	sentinel.Timeseries = []prompb.TimeSeries{{Labels: labelsOf("catalogue_sentinel", "job", "probe")}}
	for _, at := range ts {
		sentinel.Timeseries[0].Samples = append(sentinel.Timeseries[0].Samples, prompb.Sample{Timestamp: at, Value: 7})
	}
	v.mustWriteV1(t, &sentinel)
	intact := func() bool {
		return len(v.rangeOf(t, "catalogue_sentinel[10m]", now)) == len(ts)
	}
	require.True(t, intact())

	inputs := catalogue(t, now)
	require.GreaterOrEqual(t, len(inputs), 60)
	var rows []catalogueRow
	for _, in := range inputs {
		base := v.URL
		if in.otlp {
			base = "http://" + otlpAddr
		}
		req, err := http.NewRequestWithContext(within(t, time.Minute), in.method, base+in.path, bytes.NewReader(in.body))
		require.NoError(t, err)
		for k, val := range in.header {
			req.Header.Set(k, val)
		}
		row := catalogueRow{in: in}
		if resp, err := v.client.Do(req); err == nil {
			row.status = resp.StatusCode
			resp.Body.Close()
		}
		if resp, err := v.client.Get(v.URL + "/-/healthy"); err == nil {
			row.up = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		row.lost = !intact()
		rows = append(rows, row)
	}
	writeTable(t, "catalogue.md", catalogueTable(rows))
	for _, r := range rows {
		require.True(t, r.up, "%s: the server went down; its log:\n%s", r.in.name, v.Output())
		require.False(t, r.lost, "%s: data stored before it is gone", r.in.name)
		require.Equal(t, r.in.want, r.status, "%s (%s %s)", r.in.name, r.in.method, r.in.path)
	}
	v.requireUp(t)
}

func catalogueTable(rows []catalogueRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| # | input | endpoint | status | expected | server up | data lost |\n|---|---|---|---|---|---|---|\n")
	ok := 0
	for i, r := range rows {
		ep := r.in.method + " " + r.in.path
		if len(ep) > 48 {
			ep = ep[:45] + "…"
		}
		if r.in.otlp {
			ep = "OTLP " + ep
		}
		yes := func(b bool) string {
			if b {
				return "yes"
			}
			return "no"
		}
		if r.status == r.in.want && r.up && !r.lost {
			ok++
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %d | %d | %s | %s |\n", i+1, r.in.name, ep, r.status, r.in.want, yes(r.up), yes(r.lost))
	}
	fmt.Fprintf(&b, "\n%d of %d inputs answered as expected, the server up and no data lost after each.\n", ok, len(rows))
	return b.String()
}

// writeTable writes a table of the suite to $VIGIL_RELIABILITY_OUT/name
// when that is set, and logs it otherwise.
func writeTable(t *testing.T, name, table string) {
	t.Helper()
	dir := os.Getenv("VIGIL_RELIABILITY_OUT")
	if dir == "" {
		t.Log("\n" + table)
		return
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(table), 0o644))
}

// startVigilArgs is startVigil with more flags.
func startVigilArgs(t *testing.T, config string, extra ...string) *server {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--data-dir", filepath.Join(dir, "data")}, extra...)
	if config != "" {
		cfg := filepath.Join(dir, "vigil.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
		args = append(args, "--config", cfg)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	return &server{Proc: peertest.StartVigil(t, args...), client: &http.Client{Transport: tr, Timeout: time.Minute}}
}
