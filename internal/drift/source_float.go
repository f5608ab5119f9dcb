package drift

import "math"

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal parses the decimal forms CSV files hold —
// [+-]digits[.digits][(e|E)[+-]digits] — when it can do so exactly, and
// reports ok false for everything else (more than 19 digits, a large
// exponent, hex, inf, nan, underscores, spaces, bad syntax), which
// strconv.ParseFloat then decides.
//
// It is strconv's own exact fast path (Clinger's): a mantissa below 2⁵³ is
// a float64 exactly, and so is 10ᵏ for k ≤ 22, so one multiplication or
// division rounds once, correctly; its results are strconv.ParseFloat's bit
// for bit, as FuzzParseDecimal checks.
func parseDecimal(b []byte) (float64, bool) {
	v, n, ok := decimalPrefix(b)
	return v, ok && n == len(b)
}

// decimalPrefix is parseDecimal of the longest prefix of b that has the
// form, and its length.
func decimalPrefix(b []byte) (v float64, size int, ok bool) {
	i, n := 0, len(b)
	if n == 0 {
		return 0, 0, false
	}
	// Branch-free sign: half the values of a centred feature have one.
	c0 := b[0]
	neg := c0 == '-'
	i = int(b2u(neg || c0 == '+'))
	var mant uint64
	nd, exp := 0, 0
	for ; i < n; i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		mant = mant*10 + uint64(c)
		nd++
	}
	if i < n && b[i] == '.' {
		for i++; i < n; i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			mant = mant*10 + uint64(c)
			nd++
			exp--
		}
	}
	if nd == 0 || nd > 19 {
		return 0, 0, false
	}
	if i < n && b[i]|0x20 == 'e' {
		i++
		eneg := false
		if i < n && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		if i == n {
			return 0, 0, false
		}
		e := 0
		if b[i]-'0' > 9 {
			return 0, 0, false
		}
		for ; i < n; i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			if e < 10000 {
				e = e*10 + int(c)
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if mant >= 1<<53 {
		return 0, 0, false
	}
	f := math.Float64frombits(math.Float64bits(float64(mant)) | b2u(neg)<<63)
	switch {
	case mant == 0 || exp == 0:
		return f, i, true
	case exp > 0 && exp <= 15+22:
		// As strconv: a big exponent with few digits moves zeros into
		// the integer part while it stays exact.
		if exp > 22 {
			f *= pow10[exp-22]
			exp = 22
		}
		if f > 1e15 || f < -1e15 {
			return 0, 0, false
		}
		return f * pow10[exp], i, true
	case exp < 0 && exp >= -22:
		return f / pow10[-exp], i, true
	}
	return 0, 0, false
}

// b2u is 1 for true, 0 for false, without a branch.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
