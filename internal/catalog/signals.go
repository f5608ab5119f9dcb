package catalog

// builtinSignals returns every built-in signal, domain by domain.
func builtinSignals() []Signal {
	var out []Signal
	for _, part := range [][]Signal{
		gpuDeviceSignals(), gpuErrorSignals(), gpuLinkSignals(), gpuProfSignals(),
		inferSignals(), inferServerSignals(), inferPlatformSignals(),
		kubeSignals(), hostSignals(),
	} {
		out = append(out, part...)
	}
	return out
}

// builtinIgnored returns the upstream metrics the catalog knowingly leaves
// out, with the reason.
func builtinIgnored() []Ignored {
	var out []Ignored
	out = append(out, dcgmIgnored()...)
	out = append(out, vllmIgnored()...)
	out = append(out, otherIgnored()...)
	return out
}

// dcgm is a dcgm-exporter source of a DCGM field.
func dcgm(metric string, field int) Source {
	return Source{Vocabulary: DCGMExporter, Metric: metric, Field: field}
}

// with returns s with a note.
func (s Source) with(note string) Source { s.Note = note; return s }

// declared returns s with the type its # TYPE line claims.
func (s Source) declared(t Type) Source { s.Declared = t; return s }

// scaled returns s with a scale into the signal's unit.
func (s Source) scaled(f float64) Source { s.Scale = f; return s }

// labelled returns s with its meaningful labels.
func (s Source) labelled(ls ...string) Source { s.Labels = ls; return s }

// versions returns s with a version note.
func (s Source) versions(v string) Source { s.Versions = v; return s }

// monotonicUnsure marks s's true type as in doubt.
func (s Source) monotonicUnsure() Source { s.CheckMonotonic = true; return s }
