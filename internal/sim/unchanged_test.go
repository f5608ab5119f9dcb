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
		"healthy":                {"900c6ddda0769e8efb1e4532f09a290d12bcd0ecf501b7f06764af1bb5d46bd0", "140ded2a478a73a6a40f8f1efc91d0b96eb2224da90f7e72bb14ba2427217198"},
		"pod_evicted":            {"fbc9faeae6392422473ef469e79b71dfc8d0625571d963e0b8de830b123e4071", "64ae9414b586a76757071c056e9f687576db1fe74b5d52e6f654bf371e04dbd4"},
		"dependency_slow":        {"af23e558bcdfa3d07324522807a0158da2e586bb2ed0afeeebf9c67fecfd0ae4", "a801e6083fc27268dda7eed735c714b0ac42a062afa6d9468fdeb1188af40272"},
		"nvlink_degraded/subtle": {"f3a75381ab4b4a37d56004c93f9890ac95a1bf1df8911cfe30d3c67e8981a715", "62b7659bdb0ff06a2b1deb7d171862b3d45f3bea5c38bc123e4e5eb7d193206f"},
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
