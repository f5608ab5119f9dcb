package remotewrite

import (
	"math"
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/stretchr/testify/require"
)

// decodeV1Seeds are bodies of every kind the receiver meets: floats,
// integer and float histograms, exemplars, metadata, a 2.0 body, fields
// 1.0 does not have, and broken ones.
func decodeV1Seeds(t testing.TB) [][]byte {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return b
	}
	full := &prompb.WriteRequest{
		Timeseries: []prompb.TimeSeries{
			{
				Labels:    []prompb.Label{{Name: "b", Value: "2"}, {Name: "__name__", Value: "m"}, {Name: "a", Value: ""}},
				Samples:   []prompb.Sample{{Value: 1, Timestamp: 1000}, {Value: math.Inf(-1), Timestamp: -5}},
				Exemplars: []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "abc"}}, Value: 2, Timestamp: 1000}},
			},
			{
				Labels: []prompb.Label{{Name: "__name__", Value: "h"}},
				Histograms: []prompb.Histogram{
					{Count: &prompb.Histogram_CountInt{CountInt: 3}, Sum: 4, Schema: 1, ZeroCount: &prompb.Histogram_ZeroCountInt{ZeroCountInt: 1},
						PositiveSpans: []prompb.BucketSpan{{Offset: 0, Length: 2}}, PositiveDeltas: []int64{1, 0}, Timestamp: 2000},
					{Count: &prompb.Histogram_CountFloat{CountFloat: 3}, Sum: 4, Schema: 0, ZeroCount: &prompb.Histogram_ZeroCountFloat{ZeroCountFloat: 1},
						NegativeSpans: []prompb.BucketSpan{{Offset: 1, Length: 1}}, NegativeCounts: []float64{2}, Timestamp: 3000},
				},
			},
			{Labels: []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "b", Value: "2"}, {Name: "a", Value: ""}}, Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}}},
		},
		Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "m", Help: "h", Unit: "s"}},
	}
	v2 := marshal(&writev2.Request{
		Symbols:    []string{"", "__name__", "m"},
		Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}},
	})
	b := marshal(full)
	return [][]byte{
		b,
		b[:len(b)-3],
		marshal(wireRequest(5, 2, 1, 1)),
		v2,
		{},
		[]byte("\xff\xff\xff garbage"),
		[]byte("\x0a\x05\x0a\x03\x0a\x01x"),
		append([]byte("\x10\x01"), b...),   // a varint field 2 before the series
		[]byte("\x0a\x04\x13\x08\x01\x14"), // a group inside a series
		[]byte("\x0a\x0b\x12\x09\x09\x00\x00\x00\x00\x00\x00\xf0\x3f"),
	}
}

// decodedV1 is what both decoders agree on about a request.
type decodedV1 struct {
	series     []labels.Labels
	samples    [][]sampleV1
	histograms [][]prompb.Histogram
	exemplars  [][]prompb.Exemplar
	unknown    bool
	count      int
}

// gogoV1 decodes with gogo's Unmarshal and ToLabels, as the receiver did.
func gogoV1(body []byte) (*decodedV1, error) {
	var req prompb.WriteRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	d := &decodedV1{unknown: len(req.XXX_unrecognized) > 0, count: countV1(&req)}
	b := labels.NewScratchBuilder(0)
	for _, ts := range req.Timeseries {
		d.series = append(d.series, ts.ToLabels(&b, nil))
		var ss []sampleV1
		for _, s := range ts.Samples {
			ss = append(ss, sampleV1{t: s.Timestamp, v: s.Value})
		}
		d.samples = append(d.samples, ss)
		d.histograms = append(d.histograms, ts.Histograms)
		d.exemplars = append(d.exemplars, ts.Exemplars)
	}
	return d, nil
}

// wireV1 decodes with requestV1.
func wireV1(body []byte) (*decodedV1, error) {
	var req requestV1
	if err := req.decode(body); err != nil {
		return nil, err
	}
	d := &decodedV1{unknown: req.unknown, count: req.count()}
	b := labels.NewScratchBuilder(0)
	for i := range req.series {
		d.series = append(d.series, req.labelsOf(i, &b))
		var ss []sampleV1
		ss = append(ss, req.samplesOf(i)...)
		d.samples = append(d.samples, ss)
		var hs []prompb.Histogram
		hs = append(hs, req.histogramsOf(i)...)
		d.histograms = append(d.histograms, hs)
		var es []prompb.Exemplar
		es = append(es, req.exemplarsOf(i)...)
		d.exemplars = append(d.exemplars, es)
	}
	return d, nil
}

// requireSameV1 fails unless both decoders fail on body or agree on it
// (float values compared by their bits, NaNs included).
func requireSameV1(t *testing.T, body []byte) {
	want, errGogo := gogoV1(body)
	got, errWire := wireV1(body)
	if errGogo != nil || errWire != nil {
		require.Equal(t, errGogo == nil, errWire == nil, "gogo: %v; wire: %v", errGogo, errWire)
		require.Equal(t, errGogo.Error(), errWire.Error())
		return
	}
	require.Equal(t, want.unknown, got.unknown, "fields 1.0 does not have")
	require.Equal(t, want.count, got.count)
	require.Len(t, got.series, len(want.series))
	for i := range want.series {
		require.True(t, labels.Equal(want.series[i], got.series[i]), "series %d: %s, %s", i, want.series[i], got.series[i])
		require.Len(t, got.samples[i], len(want.samples[i]))
		for k, s := range want.samples[i] {
			g := got.samples[i][k]
			require.True(t, s.t == g.t && math.Float64bits(s.v) == math.Float64bits(g.v), "series %d sample %d: %v, %v", i, k, s, g)
		}
		require.Len(t, got.histograms[i], len(want.histograms[i]))
		for k := range want.histograms[i] {
			requireSameMessage(t, &want.histograms[i][k], &got.histograms[i][k])
		}
		require.Len(t, got.exemplars[i], len(want.exemplars[i]))
		for k := range want.exemplars[i] {
			requireSameMessage(t, &want.exemplars[i][k], &got.exemplars[i][k])
		}
	}
}

// requireSameMessage compares two messages by their encoding (a NaN is
// then equal to itself).
func requireSameMessage(t *testing.T, want, got proto.Message) {
	w, err := proto.Marshal(want)
	require.NoError(t, err)
	g, err := proto.Marshal(got)
	require.NoError(t, err)
	require.Equal(t, w, g)
}

func TestDecodeV1MatchesGogo(t *testing.T) {
	for i, body := range decodeV1Seeds(t) {
		t.Run(string(rune('a'+i)), func(t *testing.T) { requireSameV1(t, body) })
	}
}

// TestDecodeV1ReusedRequest: a pooled request holds nothing of the last
// body, and labels built from a body stay intact once it is overwritten.
func TestDecodeV1ReusedRequest(t *testing.T) {
	seeds := decodeV1Seeds(t)
	var req requestV1
	body := append([]byte(nil), seeds[0]...)
	require.NoError(t, req.decode(body))
	b := labels.NewScratchBuilder(0)
	ls := req.labelsOf(0, &b)
	want := ls.String()
	clear(body)
	require.Equal(t, want, ls.String())

	require.NoError(t, req.decode(seeds[2]))
	require.Len(t, req.series, 5)
	require.False(t, req.unknown)
	require.NoError(t, req.decode(nil))
	require.Empty(t, req.series)
	require.Zero(t, req.count())
}

// FuzzDecodeV1Differential: for any body, the receiver's Remote-Write 1.0
// decoder and gogo's Unmarshal with ToLabels agree on its series, samples,
// histograms, exemplars and unknown fields, or both fail with the same
// error.
//
//	go test -run '^$' -fuzz FuzzDecodeV1Differential -fuzztime 60s ./internal/ingest/remotewrite
func FuzzDecodeV1Differential(f *testing.F) {
	for _, b := range decodeV1Seeds(f) {
		f.Add(b)
	}
	f.Fuzz(requireSameV1)
}
