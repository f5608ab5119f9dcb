package catalog

// gpuErrorSignals are dcgm-exporter's XID, ECC, page retirement and row
// remapping fields.
func gpuErrorSignals() []Signal {
	return []Signal{
		{Name: "gpu.xid", Level: LevelGPU, Type: Gauge, Unit: UnitCode, Agg: Max,
			Meaning: "Code of the last XID error (Catalog.XID explains it). Sticky: it keeps the last XID, so only a change of value is an event and a repeat of the same XID is invisible; prefer gpu.xid_count when present.",
			Healthy: &Range{Min: 0, Max: 0, Note: "0: no XID since the driver loaded"},
			Sources: []Source{dcgm("DCGM_FI_DEV_XID_ERRORS", 230).labelled("err_code", "err_msg").
				with("recent dcgm-exporter versions add err_code and err_msg labels")}},
		{Name: "gpu.xid_count", Level: LevelGPU, Type: Gauge, Unit: UnitCount, Agg: Sum,
			Meaning: "XID errors per code counted by dcgm-exporter over its window (--xid-count-window-size, 5 minutes by default); each XID code is a series (xid label). Counts repeats that gpu.xid cannot show.",
			Sources: []Source{{Vocabulary: DCGMExporter, Metric: "DCGM_EXP_XID_ERRORS_COUNT", Labels: []string{"xid"},
				Note: "a windowed count, a gauge: read it as is; a value above 0 is an XID inside the window"}}},
		{Name: "gpu.ecc_sbe_volatile", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "Single-bit (corrected) ECC errors since the driver loaded. Corrected: a concern only as a high rate (XID 92).",
			Sources: []Source{dcgm("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 310)}},
		{Name: "gpu.ecc_dbe_volatile", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "Double-bit (uncorrectable) ECC errors since the driver loaded; any increase is XID 48 territory.",
			Healthy: &Range{Min: 0, Max: 0, Note: "any DBE needs the GPU reset (NVIDIA: drain and reset)"},
			Sources: []Source{dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 311)}},
		{Name: "gpu.ecc_sbe_aggregate", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "Single-bit ECC errors over the GPU's lifetime (persistent in the InfoROM).",
			Sources: []Source{dcgm("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 312)}},
		{Name: "gpu.ecc_dbe_aggregate", Level: LevelGPU, Type: Counter, Unit: UnitCount, Agg: Sum,
			Meaning: "Double-bit ECC errors over the GPU's lifetime; track it against the vendor's RMA thresholds.",
			Sources: []Source{dcgm("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 313)}},
		{Name: "gpu.retired_pages_sbe", Level: LevelGPU, Type: Gauge, Unit: UnitCount, Agg: Sum,
			Meaning: "Pages retired for single-bit errors (dynamic page retirement, before Ampere).",
			Sources: []Source{dcgm("DCGM_FI_DEV_RETIRED_SBE", 390).declared(Counter).
				with("a persistent count of retired pages, a state: delta() shows new ones")}},
		{Name: "gpu.retired_pages_dbe", Level: LevelGPU, Type: Gauge, Unit: UnitCount, Agg: Sum,
			Meaning: "Pages retired for double-bit errors (dynamic page retirement, before Ampere).",
			Sources: []Source{dcgm("DCGM_FI_DEV_RETIRED_DBE", 391).declared(Counter)}},
		{Name: "gpu.retired_pages_pending", Level: LevelGPU, Type: Gauge, Unit: UnitCount, Agg: Sum,
			Meaning: "Pages pending retirement: they take effect at the next GPU reset or driver reload.",
			Healthy: &Range{Min: 0, Max: 0, Note: "a pending retirement asks for a GPU reset"},
			Sources: []Source{dcgm("DCGM_FI_DEV_RETIRED_PENDING", 392).declared(Counter)}},
		{Name: "gpu.remapped_rows_uncorrectable", Level: LevelGPU, Type: Gauge, Unit: UnitCount, Agg: Sum,
			Meaning: "Memory rows remapped for uncorrectable errors (Ampere and newer). Each new one follows an uncorrectable error; remaps take effect at the next GPU reset.",
			Sources: []Source{dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 393).declared(Counter)}},
		{Name: "gpu.remapped_rows_correctable", Level: LevelGPU, Type: Gauge, Unit: UnitCount, Agg: Sum,
			Meaning: "Memory rows remapped for correctable errors. A single correctable remap is benign (XID 63).",
			Sources: []Source{dcgm("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 394).declared(Counter)}},
		{Name: "gpu.row_remap_failure", Level: LevelGPU, Type: Gauge, Unit: UnitCode, Agg: Max,
			Meaning: "1 when a row remapping failed (a bank ran out of spare rows): the GPU can no longer repair its memory.",
			Healthy: &Range{Min: 0, Max: 0, Note: "NVIDIA: a remapping failure qualifies the GPU for replacement"},
			Sources: []Source{dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", 395)}},
		{Name: "gpu.row_remap_pending", Level: LevelGPU, Type: Gauge, Unit: UnitCode, Agg: Max,
			Meaning: "1 when a row remap waits for the next GPU reset.",
			Sources: []Source{dcgm("DCGM_FI_DEV_ROW_REMAP_PENDING", 396)}},
	}
}
