package redacttest

import "math/rand/v2"

// Alphabets the generators draw from.
const (
	Alnum         = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	Letters       = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	UpperNum      = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	B64URL        = Alnum + "-_"
	HexLower      = "0123456789abcdef"
	Digits        = "0123456789"
	PasswordChars = Alnum + "!$*-_.~^"
)

// Gen is a deterministic source of random strings. It is not safe for
// concurrent use.
type Gen struct{ rnd *rand.Rand }

// NewGen returns a generator whose output depends only on seed.
func NewGen(seed uint64) *Gen {
	return &Gen{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Str returns n bytes drawn from alphabet.
func (g *Gen) Str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// Bytes returns n random bytes.
func (g *Gen) Bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rnd.IntN(256))
	}
	return b
}

// IntN returns a number in [0, n).
func (g *Gen) IntN(n int) int { return g.rnd.IntN(n) }

// Password returns a random password of 16 to 23 bytes that holds a digit
// and a symbol.
func (g *Gen) Password() string {
	return g.Str(Letters, 4) + g.Str(Digits, 2) + g.Str("!$*-_.~^", 1) + g.Str(PasswordChars, 9+g.rnd.IntN(8))
}
