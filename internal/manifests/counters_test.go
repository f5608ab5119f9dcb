package manifests

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// csvFields returns the fields a dcgm-exporter counters CSV turns on.
func csvFields(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, ",")
		require.Len(t, cols, 3, "a CSV line is FIELD, type, help: %q", line)
		typ := strings.TrimSpace(cols[1])
		require.Contains(t, []string{"gauge", "counter", "label"}, typ, line)
		out = append(out, strings.TrimSpace(cols[0]))
	}
	require.NoError(t, sc.Err())
	return out
}

// offByDefault are the fields of files/vigil-counters.csv that
// dcgm-exporter's default-counters.csv leaves off; docs/deploy.md lists
// each.
var offByDefault = []string{
	"DCGM_EXP_XID_ERRORS_COUNT",
	"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
	"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
	"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
	"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
	"DCGM_FI_DEV_FB_RESERVED",
	"DCGM_FI_DEV_LOW_UTIL_VIOLATION",
	"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
	"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
	"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
	"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
	"DCGM_FI_DEV_PCIE_LINK_GEN",
	"DCGM_FI_DEV_PCIE_LINK_WIDTH",
	"DCGM_FI_DEV_POWER_VIOLATION",
	"DCGM_FI_DEV_RELIABILITY_VIOLATION",
	"DCGM_FI_DEV_RETIRED_DBE",
	"DCGM_FI_DEV_RETIRED_PENDING",
	"DCGM_FI_DEV_RETIRED_SBE",
	"DCGM_FI_DEV_ROW_REMAP_PENDING",
	"DCGM_FI_DEV_SLOWDOWN_TEMP",
	"DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
	"DCGM_FI_DEV_THERMAL_VIOLATION",
	"DCGM_FI_DRIVER_VERSION",
	"DCGM_FI_PROF_DRAM_ACTIVE",
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	"DCGM_FI_PROF_NVLINK_RX_BYTES",
	"DCGM_FI_PROF_NVLINK_TX_BYTES",
	"DCGM_FI_PROF_PCIE_RX_BYTES",
	"DCGM_FI_PROF_PCIE_TX_BYTES",
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
	"DCGM_FI_PROF_SM_ACTIVE",
	"DCGM_FI_PROF_SM_OCCUPANCY",
}

func TestCountersCSV(t *testing.T) {
	ours, err := fs.ReadFile(chartFS(t), "files/vigil-counters.csv")
	require.NoError(t, err)
	fields := csvFields(t, ours)
	sorted := slices.Clone(fields)
	slices.Sort(sorted)
	require.Equal(t, len(sorted), len(slices.Compact(sorted)), "a field twice")

	// Every field is one the catalog knows, so Vigil reads it.
	c := catalog.Default()
	for _, f := range fields {
		_, known := c.Lookup(f)
		_, ignored := c.IgnoredMetric(f)
		require.True(t, known || ignored, "%s: not in internal/catalog", f)
	}

	// The fields the diagnosis reads are there (internal/diagnose's gpu.*
	// signals, by their dcgm-exporter names).
	for _, f := range []string{
		"DCGM_FI_DEV_XID_ERRORS", "DCGM_EXP_XID_ERRORS_COUNT",
		"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
		"DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION",
		"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
		"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
		"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_LINK_GEN", "DCGM_FI_DEV_PCIE_LINK_WIDTH",
		"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
		"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_GPU_UTIL",
		"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
	} {
		require.Contains(t, fields, f)
	}

	// What dcgm-exporter's default-counters.csv (internal/catalog's copy
	// of upstream) leaves off is offByDefault, and docs/deploy.md lists it.
	def, err := os.ReadFile("../catalog/testdata/upstream/dcgm-exporter-default-counters.csv")
	require.NoError(t, err)
	defaults := csvFields(t, def)
	var off []string
	for _, f := range fields {
		if !slices.Contains(defaults, f) {
			off = append(off, f)
		}
	}
	require.Equal(t, offByDefault, sortStrings(off))
	doc, err := os.ReadFile("../../docs/deploy.md")
	require.NoError(t, err)
	for _, f := range offByDefault {
		require.Contains(t, string(doc), "`"+f+"`", "docs/deploy.md does not list %s", f)
	}
}
