package logtemplates

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"zero takes the defaults", Config{}, ""},
		{"drain3 defaults", Config{Depth: 4, SimThreshold: 0.4, MaxChildren: 100, MaxClusters: 1000, MaxTokens: 64, MaxTemplateBytes: 200}, ""},
		{"least depth", Config{Depth: 3}, ""},
		{"threshold 1", Config{SimThreshold: 1}, ""},
		{"least template bytes", Config{MaxTemplateBytes: 8}, ""},
		{"negative depth", Config{Depth: -1}, "logtemplates config: Depth -1 is negative"},
		{"shallow depth", Config{Depth: 2}, "logtemplates config: Depth 2 is below the minimum of 3"},
		{"negative threshold", Config{SimThreshold: -0.1}, "logtemplates config: SimThreshold -0.1 is not within [0, 1]"},
		{"threshold over 1", Config{SimThreshold: 1.5}, "logtemplates config: SimThreshold 1.5 is not within [0, 1]"},
		{"NaN threshold", Config{SimThreshold: math.NaN()}, "logtemplates config: SimThreshold NaN is not within [0, 1]"},
		{"negative children", Config{MaxChildren: -3}, "logtemplates config: MaxChildren -3 is negative"},
		{"negative clusters", Config{MaxClusters: -1}, "logtemplates config: MaxClusters -1 is negative"},
		{"negative tokens", Config{MaxTokens: -64}, "logtemplates config: MaxTokens -64 is negative"},
		{"negative template bytes", Config{MaxTemplateBytes: -1}, "logtemplates config: MaxTemplateBytes -1 is negative"},
		{"small template bytes", Config{MaxTemplateBytes: 7}, "logtemplates config: MaxTemplateBytes 7 is below the minimum of 8"},
		{"every error", Config{Depth: 1, SimThreshold: 2, MaxClusters: -1},
			"logtemplates config: Depth 1 is below the minimum of 3\n" +
				"logtemplates config: SimThreshold 2 is not within [0, 1]\n" +
				"logtemplates config: MaxClusters -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			m, newErr := New(tc.cfg)
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, newErr)
				require.NotNil(t, m)
				return
			}
			require.EqualError(t, err, tc.want)
			require.EqualError(t, newErr, tc.want)
			require.Nil(t, m)
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	m := newMiner(t, Config{})
	require.Equal(t, Config{Depth: 4, SimThreshold: 0.4, MaxChildren: 100, MaxClusters: 1000, MaxTokens: 64, MaxTemplateBytes: 200}, m.cfg)
	require.Equal(t, 2, m.maxNodeDepth)

	m = newMiner(t, Config{Depth: 6, SimThreshold: 0.5, MaxClusters: 7})
	require.Equal(t, Config{Depth: 6, SimThreshold: 0.5, MaxChildren: 100, MaxClusters: 7, MaxTokens: 64, MaxTemplateBytes: 200}, m.cfg)
}

// TestDepth checks that Depth-3 tokens route: at depth 5 the second token
// separates messages that are similar enough to meet at depth 4.
func TestDepth(t *testing.T) {
	msgs := []string{"GET /a status ok", "GET /b status ok"}
	m4 := newMiner(t, Config{Depth: 4})
	require.Equal(t, []added{{1, true, "GET /a status ok"}, {1, false, "GET <*> status ok"}}, mine(t, m4, msgs...))
	m5 := newMiner(t, Config{Depth: 5})
	require.Equal(t, []added{{1, true, "GET /a status ok"}, {2, true, "GET /b status ok"}}, mine(t, m5, msgs...))
	m3 := newMiner(t, Config{Depth: 3})
	require.Equal(t, []added{{1, true, "alpha is up"}, {1, false, "<*> is up"}}, mine(t, m3, "alpha is up", "beta is up"))
}
