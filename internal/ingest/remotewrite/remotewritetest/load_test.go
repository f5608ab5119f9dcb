package remotewritetest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

func TestGPUSeriesAreDistinctAndSorted(t *testing.T) {
	lsets := GPUSeries(2000)
	seen := map[string]bool{}
	for _, ls := range lsets {
		require.Len(t, ls, LabelsPerSeries)
		require.True(t, sort.SliceIsSorted(ls, func(a, b int) bool { return ls[a].Name < ls[b].Name }))
		var sb strings.Builder
		for _, l := range ls {
			sb.WriteString(l.Name + "=" + l.Value + ",")
		}
		require.False(t, seen[sb.String()], "duplicate series %s", sb.String())
		seen[sb.String()] = true
	}
}

// TestSendKeepsSeriesInOrder sends a load to a server that records every
// sample and checks that each series got every round, in order.
func TestSendKeepsSeriesInOrder(t *testing.T) {
	end := time.Date(2026, 11, 12, 2, 0, 0, 0, time.UTC)
	l, err := NewLoad(2500, 300, 4, 15*time.Second, end)
	require.NoError(t, err)
	require.Equal(t, 9, l.Batches)
	var mu sync.Mutex
	last := map[string]int64{}
	count := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req prompb.WriteRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ts := range req.Timeseries {
			key := fmt.Sprint(ts.Labels)
			for _, s := range ts.Samples {
				if s.Timestamp <= last[key] || s.Timestamp > end.UnixMilli() {
					http.Error(w, "out of order", http.StatusBadRequest)
					return
				}
				last[key] = s.Timestamp
				count[key]++
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	client := NewClient(3)
	require.NoError(t, l.Send(t.Context(), client, srv.URL, 3, 0, 1))
	require.NoError(t, l.Send(t.Context(), client, srv.URL, 3, 1, l.Rounds))
	require.Len(t, count, 2500)
	for _, n := range count {
		require.Equal(t, 4, n)
	}
	require.Equal(t, 10_000, l.Samples(0, l.Rounds))
}

func TestSendFailsOnNon2xx(t *testing.T) {
	l, err := NewLoad(100, 10, 1, 15*time.Second, time.Now())
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too many series", http.StatusBadRequest)
	}))
	defer srv.Close()
	err = l.Send(t.Context(), NewClient(2), srv.URL, 2, 0, 1)
	require.ErrorContains(t, err, "400 Bad Request: too many series")
}
