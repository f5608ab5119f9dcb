package store

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// referenceMatrix decodes an answer as the remote store did before
// decodeMatrix: encoding/json into model.Matrix.
func referenceMatrix(raw []byte, from, to int64) (status, resultType string, series []cachedSeries, err error) {
	var env apiResponse
	if err := json.Unmarshal(raw, &env); err != nil {
		return "", "", nil, err
	}
	if env.Status != "success" {
		return env.Status, "", nil, nil
	}
	var data struct {
		ResultType string       `json:"resultType"`
		Result     model.Matrix `json:"result"`
	}
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return env.Status, "", nil, err
	}
	for _, ss := range data.Result {
		lb := labels.NewScratchBuilder(len(ss.Metric))
		for k, v := range ss.Metric {
			lb.Add(string(k), string(v))
		}
		lb.Sort()
		var pts fsamples
		for _, p := range ss.Values {
			if t := int64(p.Timestamp); t >= from && t <= to {
				pts = append(pts, fsample{t: t, f: float64(p.Value)})
			}
		}
		if len(pts) > 0 {
			series = append(series, cachedSeries{lset: lb.Labels(), pts: pts})
		}
	}
	return env.Status, data.ResultType, series, nil
}

// requireSameSeries compares two decodings, NaN equal to NaN.
func requireSameSeries(t *testing.T, want, got []cachedSeries) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, labels.Equal(want[i].lset, got[i].lset), "series %d: %s vs %s", i, want[i].lset, got[i].lset)
		require.Len(t, got[i].pts, len(want[i].pts), "series %s", want[i].lset)
		for j, p := range want[i].pts {
			q := got[i].pts[j]
			require.Equal(t, p.t, q.t, "series %s sample %d", want[i].lset, j)
			require.True(t, p.f == q.f || (math.IsNaN(p.f) && math.IsNaN(q.f)), "series %s sample %d: %v vs %v", want[i].lset, j, p.f, q.f)
		}
	}
}

// TestDecodeMatrix: the streaming decoder reads what encoding/json read,
// and says what it cannot.
func TestDecodeMatrix(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      string // an error it must give, "" for none
	}{
		{"two series", `{"status":"success","data":{"resultType":"matrix","result":[
			{"metric":{"__name__":"up","job":"a"},"values":[[1435781451.781,"1"],[1435781466.781,"0.5"]]},
			{"metric":{"job":"b","__name__":"up"},"values":[[1435781451,"NaN"],[1435781452.5,"+Inf"],[1435781453.25,"-Inf"]]}]}}`, ""},
		{"fields in another order and unknown ones", `{"data":{"result":[{"values":[[1,"2"]],"extra":{"x":[1,2]},"metric":{}}],"resultType":"matrix","stats":{}},"status":"success","infos":["i"],"warnings":["w"]}`, ""},
		{"a window cut", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[0.999,"1"],[1,"2"],[2,"3"],[2.001,"4"]]}]}}`, ""},
		{"empty", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, ""},
		{"escapes in labels", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"x\"y\u00e9\n"},"values":[[1,"1"]]}]}}`, ""},
		{"negative time", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[-1.5,"1"]]}]}}`, ""},
		{"an unquoted value", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}}`, "not [time"},
		{"a vector", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]}]}}`, "instant vector"},
		{"a duplicate label", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1","a":"2"},"values":[[1,"1"]]}]}}`, "duplicate"},
		{"truncated", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]`, "EOF"},
		{"two values", `{"status":"success"} {}`, "more than one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := decodeMatrix([]byte(tc.raw), 1000, 2000)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			status, rt, want, err := referenceMatrix([]byte(tc.raw), 1000, 2000)
			require.NoError(t, err)
			require.Equal(t, status, a.status)
			require.Equal(t, rt, a.resultType)
			got := slices.Clone(a.series)
			slices.SortFunc(got, func(a, b cachedSeries) int { return labels.Compare(a.lset, b.lset) })
			slices.SortFunc(want, func(a, b cachedSeries) int { return labels.Compare(a.lset, b.lset) })
			requireSameSeries(t, want, got)
		})
	}
	// A time with an exponent, which model.Time refused, is read.
	a, err := decodeMatrix([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1.5e3,"1"]]}]}}`), 0, 2e6)
	require.NoError(t, err)
	require.Equal(t, int64(1_500_000), a.series[0].pts[0].t)
	a, err = decodeMatrix([]byte(`{"status":"success","warnings":["w1","w2"],"data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"histograms":[[1,{"count":"1"}]]}]}}`), 0, 5000)
	require.NoError(t, err)
	require.Equal(t, []string{"w1", "w2"}, a.warnings)
	require.Equal(t, `{a="1"}`, a.histograms)
	a, err = decodeMatrix([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`), 0, 1)
	require.NoError(t, err)
	require.Equal(t, "error", a.status)
	require.Equal(t, "bad_data", a.errorType)
	require.Equal(t, "parse error", a.errMsg)
	a, err = decodeMatrix([]byte(`<html>login</html>`), 0, 1)
	require.Error(t, err)
	require.Empty(t, a.status)
}

// FuzzDecodeMatrix: any input decodes or fails without a panic; what both
// decoders read, they read alike. Generated answers (a series of the
// fuzzer's labels, times and values, written by encoding/json) must decode
// alike.
func FuzzDecodeMatrix(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1.5,"1"]]}]}}`), "job", "x", int64(1500), 0.25)
	f.Add([]byte(`{"status":"error","errorType":"e","error":"m"}`), "", "", int64(-1), math.Inf(1))
	f.Add([]byte(`{"data":null,"status":"success"}`), "__name__", "é\x00", int64(1<<40), math.NaN())
	f.Fuzz(func(t *testing.T, raw []byte, name, value string, ms int64, v float64) {
		if a, err := decodeMatrix(raw, math.MinInt64, math.MaxInt64); err == nil && a.status == "success" && a.resultType == "matrix" {
			if _, _, want, rerr := referenceMatrix(raw, math.MinInt64, math.MaxInt64); rerr == nil {
				got := slices.Clone(a.series)
				slices.SortFunc(got, func(a, b cachedSeries) int { return labels.Compare(a.lset, b.lset) })
				slices.SortFunc(want, func(a, b cachedSeries) int { return labels.Compare(a.lset, b.lset) })
				if len(want) == len(got) {
					requireSameSeries(t, want, got)
				}
			}
		}
		ms = ms % (1 << 50) // within what a float's seconds hold to the millisecond
		m := model.Matrix{{Metric: model.Metric{model.LabelName(name): model.LabelValue(value)},
			Values: []model.SamplePair{{Timestamp: model.Time(ms), Value: model.SampleValue(v)}}}}
		data, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": m}})
		if err != nil {
			return
		}
		_, _, want, rerr := referenceMatrix(data, math.MinInt64, math.MaxInt64)
		a, err := decodeMatrix(data, math.MinInt64, math.MaxInt64)
		if rerr != nil {
			return
		}
		require.NoError(t, err, "%s", data)
		requireSameSeries(t, want, a.series)
	})
}
