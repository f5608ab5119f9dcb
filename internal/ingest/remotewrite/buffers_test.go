package remotewrite

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// TestBuffersReused: request buffers are reused between requests, so
// requests of growing and shrinking sizes, one after the other, must each
// store exactly their own series and values.
func TestBuffersReused(t *testing.T) {
	f := newFixture(t, DefaultLimits())
	sizes := []int{200, 3, 50, 1, 120, 7}
	for i, n := range sizes {
		req := &prompb.WriteRequest{}
		for j := range n {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
				Labels:  series(fmt.Sprintf("req_%d", i), "series", fmt.Sprint(j), "pad", strings.Repeat("x", j%17)),
				Samples: []prompb.Sample{{Value: float64(i*1000 + j), Timestamp: t0.UnixMilli()}},
			})
		}
		code, msg, _ := f.post(t, encodeV1(t, req), nil)
		require.Equal(t, http.StatusNoContent, code, msg)
	}
	for i, n := range sizes {
		count, ok := f.value(t, fmt.Sprintf("count(req_%d)", i), t0)
		require.True(t, ok)
		require.Equal(t, float64(n), count, "series of request %d", i)
		sum, _ := f.value(t, fmt.Sprintf("req_%d", i), t0)
		require.Equal(t, float64(n*i*1000+n*(n-1)/2), sum, "values of request %d", i)
	}
}
