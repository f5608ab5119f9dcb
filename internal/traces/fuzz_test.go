package traces

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// FuzzCorrelationBody feeds log bodies to the correlation id extractor:
//
//	go test ./internal/traces -run '^$' -fuzz FuzzCorrelationBody -fuzztime 30s
func FuzzCorrelationBody(f *testing.F) {
	for _, s := range []string{
		`{"request_id":"r1"}`, ` {"a":{"b":{"c":{"requestId":"deep"}}}}`, `{"x-request-id":["a","b",1]}`,
		`{"correlation_id":1e400}`, `{"request_id":"` + strings.Repeat("x", 300) + `"}`, `{`, `[]`, `"str"`,
	} {
		f.Add(s)
	}
	c := newCorrelator(DefaultCorrelationKeys)
	f.Fuzz(func(t *testing.T, body string) {
		v := pcommon.NewValueStr(body)
		ids := c.fromBody(nil, v)
		require.LessOrEqual(t, len(ids), maxCorrIDs)
		seen := map[string]bool{}
		for _, id := range ids {
			require.NotEmpty(t, id)
			require.LessOrEqual(t, len(id), maxCorrIDLen)
			require.NotContains(t, id, "\x00")
			require.False(t, seen[id], "ids are distinct")
			seen[id] = true
		}
	})
}

// FuzzParseTraceID checks that an accepted id prints back as given:
//
//	go test ./internal/traces -run '^$' -fuzz FuzzParseTraceID -fuzztime 30s
func FuzzParseTraceID(f *testing.F) {
	for _, s := range []string{"", "abc", strings.Repeat("0", 32), "ab0100000000000000000000000001ab", strings.Repeat("G", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseTraceID(s)
		if err != nil {
			return
		}
		require.False(t, id.IsEmpty())
		require.Equal(t, strings.ToLower(s), id.String())
	})
}
