package remotewrite

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
	"github.com/vigil-obs/vigil/internal/store"
)

func TestPush(t *testing.T) {
	cfg := store.DefaultEmbeddedConfig(t.TempDir())
	st, err := store.OpenEmbedded(cfg, nil, nil, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	h, err := New(Options{Appendable: st, Series: st, Limits: DefaultLimits(), Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var text strings.Builder
	for i := range 50 {
		ts := t0.Add(time.Duration(i-50) * 15 * time.Second).UnixMilli()
		text.WriteString("gpu_util{gpu=\"0\"} " + itoa(i) + " " + itoa(int(ts)) + "\n")
		text.WriteString("gpu_util{gpu=\"1\"} " + itoa(2*i) + " " + itoa(int(ts)) + "\n")
	}
	f, err := fileimport.Read("dump.prom", strings.NewReader(text.String()), fileimport.DefaultOptions(t0))
	require.NoError(t, err)
	stats, err := Push(t.Context(), srv.URL, []*fileimport.File{f}, PushOptions{BatchSamples: 7})
	require.NoError(t, err)
	require.Equal(t, 100, stats.Samples)

	v, _, err := store.Query(t.Context(), st, `count_over_time(gpu_util[1h])`, t0)
	require.NoError(t, err)
	vec := v.(promql.Vector)
	require.Len(t, vec, 2)
	require.Equal(t, 50.0, vec[0].F)
	require.Equal(t, 50.0, vec[1].F)

	// A rejected batch stops the push with the server's reason.
	bad, err := fileimport.Read("old.prom", strings.NewReader("gpu_util{gpu=\"0\"} 1 "+itoa(int(t0.Add(-72*time.Hour).UnixMilli()))+"\n"), fileimport.DefaultOptions(t0))
	require.NoError(t, err)
	_, err = Push(t.Context(), srv.URL, []*fileimport.File{bad}, PushOptions{})
	require.ErrorContains(t, err, "too_old")
}

func itoa(i int) string { return strconv.Itoa(i) }
