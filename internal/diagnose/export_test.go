package diagnose

// SwitchOffDetectorsOf switches off every detector that finds kind, until
// the returned function is called.
func SwitchOffDetectorsOf(kind string) (restore func()) {
	off := map[string]bool{}
	for _, d := range detectors()[kind] {
		off[d.name] = true
	}
	detectorsOff = off
	return func() { detectorsOff = nil }
}
