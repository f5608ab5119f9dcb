//go:build !slicelabels && !dedupelabels

package remotewrite

import "unsafe"

// labelString returns the bytes of a label name or value as a string
// without copying them. It is safe only because the default labels.Labels
// (stringlabels) copies what a ScratchBuilder was given into memory of its
// own when Labels is called, before the body the bytes belong to is
// reused; the strings must not be kept past that call.
func labelString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
