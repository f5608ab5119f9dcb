package redact

import "strings"

// prefilter finds which rules' keywords occur in a string in one pass: each
// pair of adjacent bytes, lowercased, indexes a table of the keywords that
// start with that pair. It is a cheap stand-in for gitleaks' Aho–Corasick
// keyword scan; only the rules it reports run their regular expressions.
type prefilter struct {
	// pairs has a bit for each lowercased byte pair that starts a
	// keyword: 8 KiB that stay in cache, read for every byte.
	pairs [1 << 16 / 64]uint64
	// index maps a pair to 1 + its bucket; 0 is none.
	index   [1 << 16]uint16
	buckets [][]keyword
	// always are the rules without keywords.
	always uint64
}

// keyword is one keyword and the rules it gates (a bit per rule).
type keyword struct {
	kw    string // lowercased when fold
	fold  bool
	rules uint64
}

// hintBit is the bit scan sets when a JSON hint occurs: a word that must
// be in JSON for a key rule to apply inside it.
const hintBit = uint64(1) << 63

// newPrefilter indexes the keywords of rules (at most 63) and the JSON
// hints.
func newPrefilter(rules []builtin, hints []string) *prefilter {
	p := &prefilter{}
	for _, h := range hints {
		p.add(keyword{kw: strings.ToLower(h), fold: true, rules: hintBit})
	}
	for i, r := range rules {
		bit := uint64(1) << i
		if len(r.keywords) == 0 {
			p.always |= bit
			continue
		}
		for _, kw := range r.keywords {
			if len(kw) < 2 { // too short to index: the rule always runs
				p.always |= bit
				continue
			}
			if r.fold {
				kw = strings.ToLower(kw)
			}
			p.add(keyword{kw: kw, fold: r.fold, rules: bit})
		}
	}
	return p
}

func (p *prefilter) add(k keyword) {
	if len(k.kw) < 2 {
		return // hints this short are not worth having
	}
	pair := uint16(lower(k.kw[0]))<<8 | uint16(lower(k.kw[1]))
	if p.index[pair] == 0 {
		p.pairs[pair/64] |= 1 << (pair % 64)
		p.buckets = append(p.buckets, nil)
		p.index[pair] = uint16(len(p.buckets))
	}
	b := &p.buckets[p.index[pair]-1]
	for i := range *b {
		if (*b)[i].kw == k.kw && (*b)[i].fold == k.fold {
			(*b)[i].rules |= k.rules
			return
		}
	}
	*b = append(*b, k)
}

// scan returns a bit for each rule whose keyword occurs in s, and the rules
// without keywords.
func (p *prefilter) scan(s string) uint64 {
	found := p.always
	if len(s) < 2 {
		return found
	}
	prev := uint16(lowerTab[s[0]])
	for i := 1; i < len(s); i++ {
		if s[i] == '[' {
			// Markers name rules ("[REDACTED:kv-secret]"), which would
			// read as keywords: step over them.
			if n := markerLen(s[i:]); n > 0 {
				i += n - 1
				prev = ']'
				continue
			}
		}
		cur := uint16(lowerTab[s[i]])
		pair := prev<<8 | cur
		prev = cur
		if p.pairs[pair>>6]&(1<<(pair&63)) == 0 {
			continue
		}
		for _, k := range p.buckets[p.index[pair]-1] {
			if found&k.rules == k.rules || i-1+len(k.kw) > len(s) {
				continue
			}
			w := s[i-1 : i-1+len(k.kw)]
			if w == k.kw || (k.fold && strings.EqualFold(w, k.kw)) {
				found |= k.rules
			}
		}
	}
	return found
}

// lowerTab maps ASCII upper case to lower case and every other byte to
// itself.
var lowerTab = func() (t [256]byte) {
	for i := range t {
		t[i] = lower(byte(i))
	}
	return t
}()

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
