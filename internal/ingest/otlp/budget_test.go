package otlp

import (
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vigil-obs/vigil/internal/admission"
)

// The in-flight byte budget over both transports: 503 / Unavailable when
// the server is full, 429 / ResourceExhausted over the client's share,
// both with a retry hint; 413 when a request can never fit.
func TestInflightBudget(t *testing.T) {
	b := admission.NewBudget(1<<20, nil)
	tr := startReceiver(t, &sink{}, Options{Budget: b})
	body := tracesProto(t, 50, 0)
	traces := ptraceotlp.NewGRPCClient(dial(t, tr.grpcAddr))
	export := func() *status.Status {
		req := ptraceotlp.NewExportRequestFromTraces(newTraces(50, 0))
		_, err := traces.Export(t.Context(), req)
		st, _ := status.FromError(err)
		return st
	}

	code, _, resp := post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", body)
	require.Equal(t, http.StatusOK, code, string(resp))
	require.Equal(t, codes.OK, export().Code())

	// Someone else holds nearly all of it: 503 and Unavailable.
	other, r := b.Acquire("10.1.1.1", "otlp", 1<<20-10)
	require.Nil(t, r)
	code, h, resp := post(t, tr.httpURL+"/v1/traces", contentTypeJSON, "", []byte(`{"resourceSpans":[]}`))
	require.Equal(t, http.StatusServiceUnavailable, code, string(resp))
	require.Equal(t, "1", h.Get("Retry-After"))
	require.Contains(t, statusMessage(t, contentTypeJSON, resp), "memory.max_inflight_bytes")
	st := export()
	require.Equal(t, codes.Unavailable, st.Code(), st.Message())
	require.Equal(t, 1.0, retryDelay(st))
	other.Release()

	// This client holds over its share already: 429 and ResourceExhausted.
	mine, r := b.Acquire("127.0.0.1", "otlp", 1<<19)
	require.Nil(t, r)
	code, h, _ = post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", body)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "1", h.Get("Retry-After"))
	st = export()
	require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
	mine.Release()

	// Larger than the whole budget once decoded: 413, no retry.
	big := tracesProto(t, 5000, 0)
	code, h, _ = post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Empty(t, h.Get("Retry-After"))

	code, _, _ = post(t, tr.httpURL+"/v1/traces", contentTypeProto, "", body)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 2.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "http", "signal", "traces", "reason", reasonBudget))
	require.Equal(t, 2.0, counterValue(t, tr.reg, "vigil_otlp_rejected_total", "transport", "grpc", "signal", "traces", "reason", reasonBudget))
	left, r := b.Acquire("probe", "otlp", 1<<20)
	require.Nil(t, r, "bytes still charged after the requests")
	left.Release()
}

// TestExpansion checks ExpansionOTLPProto and ExpansionOTLPJSON against
// what pdata's decoders allocate per byte of the decoded body, for spans
// shaped like an inference gateway's.
func TestExpansion(t *testing.T) {
	req := benchBatches(1, 10000)[0]
	pb, err := req.MarshalProto()
	require.NoError(t, err)
	js, err := req.MarshalJSON()
	require.NoError(t, err)
	for _, c := range []struct {
		name      string
		body      []byte
		expansion int
		decode    func([]byte) error
	}{
		{"protobuf", pb, admission.ExpansionOTLPProto, func(b []byte) error { _, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b); return err }},
		{"JSON", js, admission.ExpansionOTLPJSON, func(b []byte) error { _, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b); return err }},
	} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		require.NoError(t, c.decode(c.body))
		runtime.ReadMemStats(&m1)
		ratio := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(len(c.body))
		t.Logf("%s: %d bytes, %.2f allocated per byte (expansion charged %d)", c.name, len(c.body), ratio, c.expansion)
		require.LessOrEqual(t, ratio, float64(c.expansion), c.name)
	}
}
