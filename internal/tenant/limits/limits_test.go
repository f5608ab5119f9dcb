package limits

import (
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	f := func(l Limits, want string) {
		t.Helper()
		err := l.Validate()
		if want == "" {
			require.NoError(t, err)
			return
		}
		require.EqualError(t, err, want)
	}
	f(Limits{}, "")
	f(Limits{IngestionRate: 0.5, IngestionBurstSize: 1, MaxRequestBytes: 1 << 20}, "")
	f(Limits{IngestionRate: -1}, "ingestion_rate: must be 0 (unlimited) or more, not -1")
	f(Limits{SpansRate: math.NaN()}, "spans_rate: must be a finite number, not NaN")
	f(Limits{IngestionRate: math.Inf(1)}, "ingestion_rate: must be a finite number, not +Inf")
	f(Limits{MaxActiveSeries: -3}, "max_active_series: must be 0 (unlimited) or more, not -3")
	f(Limits{MaxRequestBytes: -1}, "max_request_bytes: must be 0 (unlimited) or more, not -1")
	f(Limits{MaxPushGroups: -1}, "max_push_groups: must be 0 (unlimited) or more, not -1")
}

// Every field of Limits has a YAML name that the runtime file and the
// checks know, in the struct's order.
func TestFieldNames(t *testing.T) {
	typ := reflect.TypeFor[Limits]()
	var tags []string
	for i := range typ.NumField() {
		tags = append(tags, typ.Field(i).Tag.Get("yaml"))
	}
	require.Equal(t, tags, fieldNames())
	for i, name := range fieldNames() {
		var l Limits
		v := reflect.ValueOf(&l).Elem().Field(i)
		if v.Kind() == reflect.Float64 {
			v.SetFloat(-1)
		} else {
			v.SetInt(-1)
		}
		require.ErrorContains(t, l.validateField(name), name+": must be 0", "field %s", name)
	}
}

func TestBurst(t *testing.T) {
	f := func(r float64, b, want int) {
		t.Helper()
		require.Equal(t, want, burst(r, b))
	}
	f(100, 250, 250)
	f(100, 0, 100)
	f(0.5, 0, 1)
	f(10.2, 0, 11)
	f(1e12, 0, math.MaxInt32)
}
