package limits

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestLimitErrorMessage(t *testing.T) {
	err := error(&LimitError{Tenant: "a", Limit: IngestionRate, Msg: "ingestion rate limit (100 samples/s, burst 200) exceeded while adding 500 samples"})
	require.Equal(t, `tenant "a": ingestion rate limit (100 samples/s, burst 200) exceeded while adding 500 samples; see ingestion_rate in the limits file`, err.Error())
	require.True(t, IsLimitError(err))
	require.True(t, IsLimitError(fmt.Errorf("store: %w", err)))
	require.False(t, IsLimitError(errors.New("other")))
	require.False(t, IsLimitError(nil))
}

func TestWriteHTTP(t *testing.T) {
	f := func(err error, wantOK bool, wantCode int, wantRetry, wantBody string) {
		t.Helper()
		w := httptest.NewRecorder()
		require.Equal(t, wantOK, WriteHTTP(w, err))
		if !wantOK {
			require.Equal(t, http.StatusOK, w.Code, "nothing written")
			require.Empty(t, w.Body.String())
			require.Empty(t, w.Header())
			return
		}
		require.Equal(t, wantCode, w.Code)
		require.Equal(t, wantRetry, w.Header().Get("Retry-After"))
		require.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
		require.Equal(t, wantBody+"\n", w.Body.String())
	}
	rate := &LimitError{Tenant: "a", Limit: IngestionRate, Msg: "over", RetryAfter: 1500 * time.Millisecond}
	f(rate, true, 429, "2", `tenant "a": over; see ingestion_rate in the limits file`)
	f(fmt.Errorf("commit: %w", rate), true, 429, "2", `tenant "a": over; see ingestion_rate in the limits file`)
	f(&LimitError{Tenant: "a", Limit: IngestionRate, Msg: "over", RetryAfter: time.Millisecond}, true, 429, "1", `tenant "a": over; see ingestion_rate in the limits file`)
	f(&LimitError{Tenant: "b", Limit: MaxQueryConcurrency, Msg: "busy"}, true, 429, "", `tenant "b": busy; see max_query_concurrency in the limits file`)
	f(&LimitError{Tenant: "b", Limit: MaxPushGroups, Msg: "many"}, true, 429, "", `tenant "b": many; see max_push_groups in the limits file`)
	f(&LimitError{Tenant: "b", Limit: MaxActiveSeries, Msg: "full"}, true, 400, "", `tenant "b": full; see max_active_series in the limits file`)
	f(&LimitError{Tenant: "b", Limit: MaxSeriesPerMetric, Msg: "full"}, true, 400, "", `tenant "b": full; see max_series_per_metric in the limits file`)
	f(&LimitError{Tenant: "b", Limit: MaxQuerySamples, Msg: "heavy"}, true, 422, "", `tenant "b": heavy; see max_query_samples in the limits file`)
	f(&LimitError{Tenant: "b", Limit: MaxRequestBytes, Msg: "big"}, true, 413, "", `tenant "b": big; see max_request_bytes in the limits file`)
	f(errors.New("other"), false, 0, "", "")
	f(nil, false, 0, "", "")

	// From the Enforcer, end to end.
	e, _ := newTestEnforcer(&static{defaults: Limits{IngestionRate: 100, IngestionBurstSize: 200}})
	require.NoError(t, e.AllowSamples("a", 200))
	f(e.AllowSamples("a", 150), true, 429, "2", `tenant "a": ingestion rate limit (100 samples/s, burst 200) exceeded while adding 150 samples; see ingestion_rate in the limits file`)
}

func TestGRPCStatus(t *testing.T) {
	s, ok := status.FromError(fmt.Errorf("export: %w", &LimitError{Tenant: "a", Limit: SpansRate, Msg: "over", RetryAfter: 3 * time.Second}))
	require.True(t, ok)
	require.Equal(t, codes.ResourceExhausted, s.Code())
	require.Equal(t, `export: tenant "a": over; see spans_rate in the limits file`, s.Message())
	require.Len(t, s.Details(), 1)
	ri, ok := s.Details()[0].(*errdetails.RetryInfo)
	require.True(t, ok)
	require.Equal(t, 3*time.Second, ri.GetRetryDelay().AsDuration())

	s, ok = status.FromError(&LimitError{Tenant: "a", Limit: MaxRequestBytes, Msg: "big"})
	require.True(t, ok)
	require.Equal(t, codes.ResourceExhausted, s.Code())
	require.Empty(t, s.Details(), "no retry hint: the same request will never fit")
}
