package reliability

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"
)

// TestRemoteRead is issue 17's second finding: a POST to /api/v1/read
// never answered (its concurrency gate was 0) and held a connection. Read
// back through Prometheus's own remote-read client, in both response types
// it accepts (streamed chunks, as Prometheus and Thanos ask for first, and
// samples), from several readers at once, with the samples written.
func TestRemoteRead(t *testing.T) {
	v := startVigil(t, "")
	now := time.Now().Truncate(time.Second)
	var req prompb.WriteRequest
	want := map[string][]sample{}
	for s := range 3 {
		ts := prompb.TimeSeries{Labels: labelsOf("read_probe", "series", strconv.Itoa(s))}
		for i := range 40 {
			at := now.Add(time.Duration(i-39) * 15 * time.Second).UnixMilli()
			val := float64(100*s + i)
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: at, Value: val})
			want[strconv.Itoa(s)] = append(want[strconv.Itoa(s)], sample{T: at, V: strconv.FormatFloat(val, 'f', -1, 64)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	v.mustWriteV1(t, &req)

	u, err := url.Parse(v.URL + "/api/v1/read")
	require.NoError(t, err)
	types := map[string][]prompb.ReadRequest_ResponseType{
		"streamed chunks": {prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		"samples":         {prompb.ReadRequest_SAMPLES},
	}
	for name, accepted := range types {
		t.Run(name, func(t *testing.T) {
			c, err := remote.NewReadClient("probe", &remote.ClientConfig{
				URL: &config_util.URL{URL: u}, Timeout: model.Duration(20 * time.Second),
				HTTPClientConfig: config_util.DefaultHTTPClientConfig, ChunkedReadLimit: 50 << 20,
				AcceptedResponseTypes: accepted,
			})
			require.NoError(t, err)
			q, err := remote.ToQuery(now.Add(-15*time.Minute).UnixMilli(), now.UnixMilli(),
				[]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "read_probe")}, nil)
			require.NoError(t, err)
			// More readers at once than one: each must answer.
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Go(func() {
					ss, err := c.Read(within(t, 30*time.Second), q, true)
					if err != nil {
						errs <- err
						return
					}
					got := map[string][]sample{}
					for ss.Next() {
						s := ss.At()
						it := s.Iterator(nil)
						id := s.Labels().Get("series")
						for it.Next() == chunkenc.ValFloat {
							ts, val := it.At()
							got[id] = append(got[id], sample{T: ts, V: strconv.FormatFloat(val, 'f', -1, 64)})
						}
					}
					if err := ss.Err(); err != nil {
						errs <- err
						return
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						errs <- fmt.Errorf("read back %v, wrote %v", got, want)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
	v.requireUp(t)
}

// TestDuplicateTimestampInOneRequest is issue 17's third finding, first
// half: two values for one timestamp of a series in one request stored the
// first and answered 204, while the README promises 400. The head checks a
// sample against what is committed, not against the rest of its own batch.
func TestDuplicateTimestampInOneRequest(t *testing.T) {
	v := startVigil(t, "")
	at := time.Now().Truncate(time.Second).Add(-time.Minute).UnixMilli()
	cases := []struct {
		name   string
		series []prompb.TimeSeries
		code   int
		stored []sample
	}{{
		name:   "two values in one series",
		series: []prompb.TimeSeries{{Labels: labelsOf("dup_probe", "case", "0"), Samples: []prompb.Sample{{Timestamp: at, Value: 1}, {Timestamp: at, Value: 2}}}},
		code:   http.StatusBadRequest,
		stored: []sample{{T: at, V: "1"}},
	}, {
		name: "the same series twice in the request",
		series: []prompb.TimeSeries{
			{Labels: labelsOf("dup_probe", "case", "1"), Samples: []prompb.Sample{{Timestamp: at - 15000, Value: 5}, {Timestamp: at, Value: 1}}},
			{Labels: labelsOf("dup_probe", "case", "1"), Samples: []prompb.Sample{{Timestamp: at, Value: 2}}},
		},
		code:   http.StatusBadRequest,
		stored: []sample{{T: at - 15000, V: "5"}, {T: at, V: "1"}},
	}, {
		name:   "out of order, then a second value",
		series: []prompb.TimeSeries{{Labels: labelsOf("dup_probe", "case", "2"), Samples: []prompb.Sample{{Timestamp: at, Value: 1}, {Timestamp: at - 15000, Value: 7}, {Timestamp: at, Value: 3}}}},
		code:   http.StatusBadRequest,
		stored: []sample{{T: at - 15000, V: "7"}, {T: at, V: "1"}},
	}, {
		name:   "the same value twice is one sample",
		series: []prompb.TimeSeries{{Labels: labelsOf("dup_probe", "case", "3"), Samples: []prompb.Sample{{Timestamp: at, Value: 4}, {Timestamp: at, Value: 4}}}},
		code:   http.StatusNoContent,
		stored: []sample{{T: at, V: "4"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Every case once as 1.0, once as 2.0 on a series of its own.
			for _, version := range []string{"1.0", "2.0"} {
				series := make([]prompb.TimeSeries, len(c.series))
				for i, s := range c.series {
					s.Labels = append(append([]prompb.Label(nil), s.Labels...), prompb.Label{Name: "version", Value: version})
					series[i] = s
				}
				var resp *http.Response
				var body string
				if version == "1.0" {
					resp, body = v.write(t, &prompb.WriteRequest{Timeseries: series}, contentTypeV1)
				} else {
					resp, body = v.write(t, toV2(series), contentTypeV2)
				}
				require.Equal(t, c.code, resp.StatusCode, "%s: %s", version, body)
				if c.code == http.StatusBadRequest {
					require.Contains(t, body, "duplicate_timestamp", version)
				}
				sel := fmt.Sprintf(`dup_probe{case=%q,version=%q}[10m]`, c.series[0].Labels[1].Value, version)
				require.Equal(t, c.stored, v.rangeOf(t, sel, time.UnixMilli(at).Add(time.Second)), version)
			}
		})
	}
	v.requireUp(t)
}

// TestBodyUnderTheWrongVersion is issue 17's third finding, second half: a
// Remote-Write 1.0 body under the 2.0 content type decoded as an empty 2.0
// request (the two share no field numbers) and got 204 with 0 samples
// written; the sender believed the data arrived. Both mismatches now get a
// 400 that names the likely cause, and nothing is stored.
func TestBodyUnderTheWrongVersion(t *testing.T) {
	v := startVigil(t, "")
	at := time.Now().Truncate(time.Second).Add(-time.Minute).UnixMilli()
	v1 := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: labelsOf("mismatch_probe", "sent", "v1"), Samples: []prompb.Sample{{Timestamp: at, Value: 1}}}}}
	resp, body := v.write(t, v1, contentTypeV2)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "1.0")
	v2 := toV2([]prompb.TimeSeries{{Labels: labelsOf("mismatch_probe", "sent", "v2"), Samples: []prompb.Sample{{Timestamp: at, Value: 1}}}})
	resp, body = v.write(t, v2, contentTypeV1)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "2.0")
	require.Empty(t, v.rangeOf(t, `mismatch_probe[10m]`, time.UnixMilli(at).Add(time.Second)))
	// The right pairs are stored.
	resp, body = v.write(t, v1, contentTypeV1)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	resp, body = v.write(t, v2, contentTypeV2)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	require.Equal(t, "1", resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written"))
	v.requireUp(t)
}

// toV2 is series as a Remote-Write 2.0 request.
func toV2(series []prompb.TimeSeries) *writev2.Request {
	st := writev2.NewSymbolTable()
	out := &writev2.Request{}
	for _, s := range series {
		b := labels.NewScratchBuilder(len(s.Labels))
		for _, l := range s.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(b.Labels(), nil), Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE}}
		for _, p := range s.Samples {
			ts.Samples = append(ts.Samples, writev2.Sample{Value: p.Value, Timestamp: p.Timestamp})
		}
		out.Timeseries = append(out.Timeseries, ts)
	}
	out.Symbols = st.Symbols()
	return out
}
