//go:build slicelabels || dedupelabels

package remotewrite

// labelString returns the bytes of a label name or value as a string. The
// slicelabels and dedupelabels builds of labels.Labels keep the strings a
// ScratchBuilder was given, so they are copied out of the body here.
func labelString(b []byte) string {
	return string(b)
}
