package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOtherScenariosUnchanged: scenarios other than bad_rollout write the
// bytes they wrote before bad_rollout showed in the metrics (hashes pinned
// then), metrics and request path alike.
func TestOtherScenariosUnchanged(t *testing.T) {
	pinned := map[string][2]string{
		"healthy":                {"0e60ffd7bb2d062009fe5edeccbb2ed6722bb5823cebfb5cf31e1009c6d8cd4f", "140ded2a478a73a6a40f8f1efc91d0b96eb2224da90f7e72bb14ba2427217198"},
		"pod_evicted":            {"73ed990253134eacc0ad19500fafd78e1f16a4843ba7537c4319ae51ee31d3fa", "64ae9414b586a76757071c056e9f687576db1fe74b5d52e6f654bf371e04dbd4"},
		"dependency_slow":        {"ff00a91a8fd8b3f5c28f950e914537482b313990577ea97782890c0623801a8c", "a801e6083fc27268dda7eed735c714b0ac42a062afa6d9468fdeb1188af40272"},
		"nvlink_degraded/subtle": {"160d30354d5a03832a5ab3f5740a825a8ef16ae2918822bd190d186efa1676a2", "62b7659bdb0ff06a2b1deb7d171862b3d45f3bea5c38bc123e4e5eb7d193206f"},
	}
	for _, c := range []struct {
		name string
		seed uint64
	}{{Healthy, 1}, {"pod_evicted", 2}, {"dependency_slow", 3}, {"nvlink_degraded/subtle", 4}} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := ParseScenario(c.name)
			require.NoError(t, err)
			s, err := New(Config{Seed: c.seed, Duration: 20 * time.Minute}, sc)
			require.NoError(t, err)
			om, tr := sha256.New(), sha256.New()
			require.NoError(t, s.WriteOpenMetrics(context.Background(), om))
			require.NoError(t, s.WriteRequestPath(tr, discard{}))
			got := [2]string{hex.EncodeToString(om.Sum(nil)), hex.EncodeToString(tr.Sum(nil))}
			t.Logf("%q: {%q, %q},", c.name, got[0], got[1])
			require.Equal(t, pinned[c.name], got)
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
