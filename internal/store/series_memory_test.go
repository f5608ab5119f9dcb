package store

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/vigil-obs/vigil/internal/admission"
)

// TestSeriesMemory checks admission.BytesPerSeries, the head memory of one
// series behind the series cap of a memory budget: the live heap that
// 100,000 dcgm-exporter series of 12 labels, one sample each, hold.
func TestSeriesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 100,000 series")
	}
	st, err := OpenEmbedded(DefaultEmbeddedConfig(t.TempDir()), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const n = 100_000
	for b := 0; b < n; b += 10_000 {
		app := st.AppenderV2(t.Context())
		for i := b; i < b+10_000; i++ {
			ls := labels.FromStrings("__name__", "DCGM_FI_DEV_GPU_UTIL", "Hostname", "gpu-node-"+strconv.Itoa(i/8),
				"UUID", "GPU-5f1c2d3e-9a8b-4c7d-"+strconv.Itoa(100000+i), "gpu", strconv.Itoa(i%8), "device", "nvidia"+strconv.Itoa(i%8),
				"modelName", "NVIDIA H100 80GB HBM3", "namespace", "training", "pod", "trainer-"+strconv.Itoa(i/8),
				"container", "trainer", "instance", "10.0."+strconv.Itoa(i/250%250)+"."+strconv.Itoa(i%250)+":9400", "job", "dcgm-exporter")
			if _, err := app.Append(0, ls, 0, now.UnixMilli(), float64(i), nil, nil, storage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := (int64(m1.HeapInuse) - int64(m0.HeapInuse)) / n
	t.Logf("%d bytes of live heap per series (admission.BytesPerSeries %d)", per, admission.BytesPerSeries)
	if per > admission.BytesPerSeries {
		t.Fatalf("a series holds %d bytes, more than admission.BytesPerSeries %d", per, admission.BytesPerSeries)
	}
	runtime.KeepAlive(st)
}
