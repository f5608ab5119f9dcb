package remotewrite

import (
	"testing"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/prometheus/prompb"
)

func wireRequest(series, samples, exemplars, histograms int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{Metadata: []prompb.MetricMetadata{{MetricFamilyName: "m", Help: "h"}}}
	for i := range series {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "i", Value: string(rune('a' + i%26))}}}
		for k := range samples {
			ts.Samples = append(ts.Samples, prompb.Sample{Value: float64(k), Timestamp: int64(k)})
		}
		for k := range exemplars {
			ts.Exemplars = append(ts.Exemplars, prompb.Exemplar{Value: 1, Timestamp: int64(k)})
		}
		for k := range histograms {
			ts.Histograms = append(ts.Histograms, prompb.Histogram{Timestamp: int64(k)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	return req
}

// TestWireSamplesV1: the count on the wire is what countV1 counts of the
// decoded request, and a body that does not parse says so.
func TestWireSamplesV1(t *testing.T) {
	for _, c := range [][4]int{{0, 0, 0, 0}, {1, 1, 0, 0}, {3, 5, 1, 0}, {10, 2, 0, 3}, {100, 1, 1, 1}} {
		req := wireRequest(c[0], c[1], c[2], c[3])
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := wireSamplesV1(b)
		if !ok || n != countV1(req) {
			t.Errorf("%v: wire %d (%v), decoded %d", c, n, ok, countV1(req))
		}
	}
	if _, ok := wireSamplesV1([]byte{0x0a, 0x05, 0x12}); ok {
		t.Error("a truncated body parses")
	}
}

func FuzzWireSamplesV1(f *testing.F) {
	for _, c := range [][4]int{{1, 1, 0, 0}, {3, 5, 1, 2}} {
		b, _ := proto.Marshal(wireRequest(c[0], c[1], c[2], c[3]))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := wireSamplesV1(b)
		var req prompb.WriteRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		if ok && n != countV1(&req) {
			t.Fatalf("wire %d, decoded %d", n, countV1(&req))
		}
	})
}
