package catalog

import "math"

// DCGM writes a blank sentinel instead of a value it cannot read. The int64
// family is 0x7ffffffffffffff0 (blank) and +1 (not found), +2 (not
// supported: 9223372036854775794), +3 (not permissioned); the float64 family
// is 2^47 and the same offsets. dcgm-exporter prints them as numbers, so they
// reach a store as samples. (DCGM's int32 family, 0x7ffffff0.., is never a
// field value: DCGM fields are int64, double or string.)
const (
	// DCGMInt64Blank is DCGM_INT64_BLANK.
	DCGMInt64Blank int64 = 0x7ffffffffffffff0
	// DCGMFP64Blank is DCGM_FP64_BLANK (2^47).
	DCGMFP64Blank float64 = 140737488355328.0
)

// Blank is what a DCGM blank sentinel says.
type Blank int

// The blank kinds, in sentinel order.
const (
	// NotBlank is a real value.
	NotBlank Blank = iota
	// BlankUnspecified is DCGM_*_BLANK.
	BlankUnspecified
	// BlankNotFound is DCGM_*_NOT_FOUND.
	BlankNotFound
	// BlankNotSupported is DCGM_*_NOT_SUPPORTED: the GPU or driver cannot
	// report this field.
	BlankNotSupported
	// BlankNotPermissioned is DCGM_*_NOT_PERMISSIONED.
	BlankNotPermissioned
	// BlankInt64 is one of the int64 family, whose members a float64 sample
	// cannot tell apart (they all round to 2^63).
	BlankInt64
)

func (b Blank) String() string {
	switch b {
	case NotBlank:
		return "value"
	case BlankUnspecified:
		return "blank"
	case BlankNotFound:
		return "not found"
	case BlankNotSupported:
		return "not supported"
	case BlankNotPermissioned:
		return "not permissioned"
	case BlankInt64:
		return "blank (not supported, not found or not permissioned)"
	}
	return "unknown"
}

// int64BlankAsFloat is where every int64 sentinel lands once parsed as a
// float64 sample: 2^63 (float64 spacing there is 1024 below, 2048 above).
var int64BlankAsFloat = float64(DCGMInt64Blank)

// BlankKind tells which sentinel v is, or NotBlank.
func BlankKind(v float64) Blank {
	if v == int64BlankAsFloat {
		return BlankInt64
	}
	if d := v - DCGMFP64Blank; d >= 0 && d <= 3 && d == math.Trunc(d) {
		return Blank(int(d) + 1)
	}
	return NotBlank
}

// IsBlank reports whether a dcgm-exporter sample is a DCGM blank sentinel:
// "no value", not a measurement. Ignore such samples (and say the field is
// not supported) rather than reading 9.2e18 as a temperature.
func IsBlank(v float64) bool { return BlankKind(v) != NotBlank }
