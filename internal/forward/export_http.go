package forward

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/vigil-obs/vigil/internal/buildinfo"
)

// maxResponseBytes bounds how much of a response body is read.
const maxResponseBytes = 1 << 20

// httpExporter sends OTLP/HTTP binary protobuf.
type httpExporter struct {
	client             *http.Client
	transport          *http.Transport
	tracesURL, logsURL string
	header             http.Header
	gzip               bool
	// auth returns the Authorization value of one export ("" none).
	auth func() (string, error)
}

func newHTTPExporter(ep *endpoint, headers [][2]string, gz bool, timeout time.Duration, tc *tls.Config, auth func() (string, error)) *httpExporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tc != nil {
		tr.TLSClientConfig = tc
	}
	tr.MaxIdleConnsPerHost = workers
	h := http.Header{}
	for _, kv := range headers {
		h.Add(kv[0], kv[1])
	}
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("User-Agent", "vigil/"+buildinfo.Version)
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	if ep.hasAuth {
		r := &http.Request{Header: http.Header{}}
		r.SetBasicAuth(ep.user, ep.password)
		h.Set("Authorization", r.Header.Get("Authorization"))
	}
	return &httpExporter{
		client: &http.Client{
			Transport: tr,
			Timeout:   timeout,
			// An OTLP endpoint answers, it does not redirect; following
			// one would send the headers elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		transport: tr,
		tracesURL: ep.base.JoinPath("v1", "traces").String(),
		logsURL:   ep.base.JoinPath("v1", "logs").String(),
		header:    h,
		gzip:      gz,
		auth:      auth,
	}
}

func (e *httpExporter) export(ctx context.Context, b *batch) (int64, string, error) {
	var (
		body []byte
		err  error
		url  string
	)
	if b.signal == SignalTraces {
		body, err = ptraceotlp.NewExportRequestFromTraces(b.traces).MarshalProto()
		url = e.tracesURL
	} else {
		body, err = plogotlp.NewExportRequestFromLogs(b.logs).MarshalProto()
		url = e.logsURL
	}
	if err != nil {
		return 0, "", &exportError{marshal: true, status: "marshal", err: err}
	}
	if e.gzip {
		if body, err = gzipBytes(body); err != nil {
			return 0, "", &exportError{marshal: true, status: "gzip", err: err}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", &exportError{status: "request", err: err}
	}
	req.Header = e.header.Clone()
	if e.auth != nil {
		v, err := e.auth()
		if err != nil {
			return 0, "", &exportError{retryable: true, status: "credentials", err: err}
		}
		if v != "" {
			req.Header.Set("Authorization", v)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, "", &exportError{retryable: true, status: "connection error", err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err != nil {
			// The data arrived; only the partial-success details are lost.
			return 0, "", nil
		}
		return partialFromHTTP(b.signal, resp.Header.Get("Content-Type"), data)
	}
	ee := &exportError{status: "HTTP " + strconv.Itoa(resp.StatusCode)}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		ee.retryable = true
		ee.after = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return 0, "", ee
}

// partialFromHTTP reads the partial success of a 2xx response.
func partialFromHTTP(signal, contentType string, data []byte) (int64, string, error) {
	if len(data) == 0 || !strings.HasPrefix(contentType, "application/x-protobuf") {
		return 0, "", nil
	}
	if signal == SignalTraces {
		r := ptraceotlp.NewExportResponse()
		if r.UnmarshalProto(data) != nil {
			return 0, "", nil
		}
		return r.PartialSuccess().RejectedSpans(), r.PartialSuccess().ErrorMessage(), nil
	}
	r := plogotlp.NewExportResponse()
	if r.UnmarshalProto(data) != nil {
		return 0, "", nil
	}
	return r.PartialSuccess().RejectedLogRecords(), r.PartialSuccess().ErrorMessage(), nil
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(b)/4 + 64)
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	return buf.Bytes(), nil
}

func (e *httpExporter) close() error {
	e.transport.CloseIdleConnections()
	return nil
}
