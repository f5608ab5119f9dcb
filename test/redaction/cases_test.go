package redaction

import (
	"fmt"
	"strings"

	"github.com/vigil-obs/vigil/internal/redact/redacttest"
)

// tcase is one value placed in one position of one span or log record,
// which carries the case's id as case.id and its group's request id as
// request_id.
type tcase struct {
	id     string
	secret bool
	kind   string
	pos    *position
	key    string
	text   string
	// cores are a secret's random parts (none may survive).
	cores []string
	// placed is what reading the position back gives when nothing changed
	// (set when the case is sent).
	placed string
}

// group is the request id of the case: one per position and class, so
// that `vigil logs --request` and the trace of a group hold several cases.
func (c *tcase) group() string {
	if c.secret {
		return "rq-" + c.pos.name + "-secrets"
	}
	return "rq-" + c.pos.name + "-benign"
}

func positionNamed(name string) *position {
	for _, p := range positions {
		if p.name == name {
			return p
		}
	}
	panic("no position " + name)
}

// urlOf returns the URL in a secret's text ("connecting to postgres://…").
func urlOf(text string) (string, bool) {
	i := strings.Index(text, "://")
	if i < 0 {
		return "", false
	}
	start := strings.LastIndexByte(text[:i], ' ') + 1
	end := len(text)
	if j := strings.IndexAny(text[i:], " \r\n"); j >= 0 {
		end = i + j
	}
	return text[start:end], true
}

// headerOf splits "Authorization: Bearer …" into the header's attribute
// key and its value.
func headerOf(text string) (key, value string, ok bool) {
	name, value, ok := strings.Cut(text, ": ")
	name = strings.ToLower(name)
	if !ok || (name != "authorization" && name != "cookie") || strings.ContainsAny(value, "\r\n") {
		return "", "", false
	}
	return "http.request.header." + name, value, true
}

// buildCases places perKind secrets of every kind and perKind look-alikes
// of every kind. A secret whose only sign is its key goes to the keyed
// positions in turn; every other URL secret goes in url.full and every
// other header secret in its http.request.header.* attribute (as the
// OpenTelemetry semantic conventions put them); the rest go to every
// position in turn.
func buildCases(seed uint64, perKind int) []*tcase {
	var keyed []*position
	for _, p := range positions {
		if p.keyed {
			keyed = append(keyed, p)
		}
	}
	var out []*tcase
	var nKeyed, nURL, nHeader, nAny int
	for i, s := range redacttest.Secrets(seed, perKind) {
		c := &tcase{id: fmt.Sprintf("s%03d", i), secret: true, kind: s.Kind, text: s.Text, cores: s.Cores}
		u, isURL := urlOf(s.Text)
		hk, hv, isHeader := headerOf(s.Text)
		switch {
		case s.Key != "":
			c.pos, c.key = keyed[nKeyed%len(keyed)], s.Key
			nKeyed++
		case isURL && nURL%2 == 0:
			c.pos, c.key, c.text = positionNamed("url-attribute"), "url.full", u
			nURL++
		case isHeader && nHeader%2 == 0:
			c.pos, c.key, c.text = positionNamed("header-attribute"), hk, hv
			nHeader++
		default:
			nURL += boolInt(isURL)
			nHeader += boolInt(isHeader)
			c.pos = positions[nAny%len(positions)]
			c.key = c.pos.key
			nAny++
		}
		out = append(out, c)
	}
	for i, b := range redacttest.LookAlikes(seed+1, perKind*2) {
		p := positions[i%len(positions)]
		out = append(out, &tcase{id: fmt.Sprintf("b%03d", i), kind: b.Kind, pos: p, key: p.key, text: b.Text})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
