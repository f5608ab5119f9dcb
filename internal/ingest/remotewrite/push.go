package remotewrite

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/vigil-obs/vigil/internal/ingest/fileimport"
)

// PushOptions configure Push.
type PushOptions struct {
	// BatchSamples is the most samples in one request (default 10,000).
	BatchSamples int
	// Client is the HTTP client (default: 1-minute timeout).
	Client *http.Client
	Logger *slog.Logger
}

// Push sends files through the remote-write endpoint of the server at
// baseURL (Remote-Write 1.0), in batches, retrying 5xx and 429 answers with
// backoff. A 4xx answer stops it with the server's reason; samples of earlier
// batches stay stored.
func Push(ctx context.Context, baseURL string, files []*fileimport.File, opts PushOptions) (fileimport.Stats, error) {
	if opts.BatchSamples <= 0 {
		opts.BatchSamples = 10_000
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: time.Minute}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	api, err := remoteapi.NewAPI(baseURL,
		remoteapi.WithAPIHTTPClient(opts.Client),
		remoteapi.WithAPILogger(opts.Logger),
		remoteapi.WithAPIPath("api/v1/write"))
	if err != nil {
		return fileimport.Stats{}, fmt.Errorf("remote write client for %s: %w", baseURL, err)
	}
	b := &pushBatch{index: map[uint64]int{}}
	flush := func() error {
		if b.samples == 0 {
			return nil
		}
		if _, err := api.Write(ctx, remoteapi.WriteV1MessageType, &prompb.WriteRequest{Timeseries: b.series}); err != nil {
			return fmt.Errorf("send %d samples to %s: %w", b.samples, baseURL, err)
		}
		b.reset()
		return nil
	}
	for _, f := range files {
		err := f.Each(func(lset labels.Labels, t int64, v float64) error {
			b.add(lset, t, v)
			if b.samples >= opts.BatchSamples {
				return flush()
			}
			return nil
		})
		if err != nil {
			return fileimport.Stats{}, err
		}
	}
	if err := flush(); err != nil {
		return fileimport.Stats{}, err
	}
	return fileimport.Sum(files), nil
}

// pushBatch groups samples by series.
type pushBatch struct {
	series  []prompb.TimeSeries
	index   map[uint64]int
	samples int
}

func (b *pushBatch) add(lset labels.Labels, t int64, v float64) {
	h := lset.Hash()
	i, ok := b.index[h]
	if !ok {
		ls := make([]prompb.Label, 0, lset.Len())
		lset.Range(func(l labels.Label) { ls = append(ls, prompb.Label{Name: l.Name, Value: l.Value}) })
		b.series = append(b.series, prompb.TimeSeries{Labels: ls})
		i = len(b.series) - 1
		b.index[h] = i
	}
	b.series[i].Samples = append(b.series[i].Samples, prompb.Sample{Timestamp: t, Value: v})
	b.samples++
}

func (b *pushBatch) reset() {
	b.series = b.series[:0]
	clear(b.index)
	b.samples = 0
}
