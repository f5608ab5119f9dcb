package traces

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/vigil-obs/vigil/internal/traces/tracestest"
)

// TestConcurrent runs writers, readers and retention at once (run it with
// -race); every trace written is then served whole.
func TestConcurrent(t *testing.T) {
	s := open(t, nil)
	s.clock.set(t0.Add(2 * time.Hour))
	const writers, batches = 4, 15
	var all [writers][]tracestest.Trace
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 16)
	for w := range writers {
		gen := tracestest.NewGen(uint64(w+10), t0.Add(time.Duration(w)*10*time.Minute), 100*time.Millisecond)
		bs, infos := gen.Batches(batches, 4, 6)
		all[w] = infos
		reqs := map[pcommon.TraceID]string{}
		for _, in := range infos {
			reqs[in.ID] = in.RequestID
		}
		wg.Go(func() {
			for _, td := range bs {
				if err := s.ConsumeTraces(t.Context(), td); err != nil {
					errs <- err
					return
				}
				if err := s.ConsumeLogs(t.Context(), tracestest.Logs(td, reqs)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for r := range 3 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch r {
				case 0:
					_, err = s.SearchTraces(t.Context(), TraceQuery{Service: "vllm", Limit: 50})
				case 1:
					_, err = s.LogsForRequest(t.Context(), all[0][0].RequestID)
				case 2:
					err = s.EnforceRetention(t.Context())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, infos := range all {
		for _, in := range infos {
			td, err := s.Trace(t.Context(), in.ID)
			require.NoError(t, err)
			require.Equal(t, in.Spans, td.SpanCount())
			recs, err := s.LogsForRequest(t.Context(), in.RequestID)
			require.NoError(t, err)
			require.Len(t, bodies(recs), in.Spans)
		}
	}
}
