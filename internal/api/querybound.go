package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-obs/vigil/internal/admission"
)

// QueryLimits bound a PromQL expression before it is parsed. Prometheus's
// parser takes time quadratic in the nesting depth and in the length of a
// chain of binary operators (measured on its v3 parser, 2 cores: 10,000
// nested parentheses 0.37 s; `up or ` 5,000 times 0.12 s, 20,000 times
// 1.7 s, 50,000 times 11 s), and cannot be cancelled: a query of a few
// hundred kilobytes holds a core for minutes, whether or not its client
// waits. A long regular expression is linear (550 KB: 14 ms) and only
// the byte bound applies to it. The defaults keep the worst query they
// admit under about 50 ms of parsing.
type QueryLimits struct {
	// MaxBytes bounds the expression's length (default 1 MiB).
	MaxBytes int
	// MaxDepth bounds the nesting of parentheses, brackets and braces
	// (default 256).
	MaxDepth int
	// MaxOperators bounds the binary operators (default 2,000).
	MaxOperators int
}

func (l QueryLimits) withDefaults() QueryLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 1 << 20
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 256
	}
	if l.MaxOperators <= 0 {
		l.MaxOperators = 2000
	}
	return l
}

// checkQuery reports the first bound q exceeds. It scans q once, as
// PromQL's lexer would split it — string literals and comments skipped,
// label matchers' operators not counted — and never fails on what the
// parser would refuse: that is the parser's to say.
func checkQuery(q string, l QueryLimits) error {
	if len(q) > l.MaxBytes {
		return fmt.Errorf("the query is %d bytes, more than query.max_bytes (%d)", len(q), l.MaxBytes)
	}
	depth, braces, ops := 0, 0, 0
	isWord := func(c byte) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '"' || c == '\'' || c == '`':
			for i++; i < len(q) && q[i] != c; i++ {
				if q[i] == '\\' && c != '`' {
					i++
				}
			}
		case c == '#':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '(' || c == '[' || c == '{':
			depth++
			if c == '{' {
				braces++
			}
			if depth > l.MaxDepth {
				return fmt.Errorf("the query nests deeper than query.max_depth (%d)", l.MaxDepth)
			}
		case c == ')' || c == ']' || c == '}':
			depth--
			if c == '}' {
				braces--
			}
		case braces > 0:
			// Inside a selector's braces: label names and matchers.
		case c >= '0' && c <= '9' || c == '.':
			// A number or a duration, whose exponent's sign is no operator.
			for i+1 < len(q) && (isWord(q[i+1]) || q[i+1] == '.' || (q[i+1] == '-' || q[i+1] == '+') && (q[i] == 'e' || q[i] == 'E')) {
				i++
			}
		case isWord(c):
			j := i
			for j < len(q) && isWord(q[j]) {
				j++
			}
			switch strings.ToLower(q[i:j]) {
			case "or", "and", "unless", "atan2":
				ops++
			}
			i = j - 1
		case strings.IndexByte("+-*/%^<>=!", c) >= 0:
			ops++
			if i+1 < len(q) && q[i+1] == '=' {
				i++ // ==, !=, <=, >=
			}
		}
		if ops > l.MaxOperators {
			return fmt.Errorf("the query has more than query.max_operators (%d) binary operators", l.MaxOperators)
		}
	}
	return nil
}

// boundQueries refuses, with Prometheus's 400 bad_data, a request whose
// query (the query endpoints) or series selectors (match[]) exceed l,
// before the Prometheus API parses them.
func boundQueries(l QueryLimits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			next.ServeHTTP(w, r) // the API answers a bad form itself
			return
		}
		for _, key := range []string{"query", "match[]"} {
			for _, q := range r.Form[key] {
				if err := checkQuery(q, l); err != nil {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data",
						"error": fmt.Sprintf("%s: %v", key, err)})
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// gatedPaths are the API paths that read the store at length, which
// take a slot of the fair gate.
var gatedPaths = map[string]bool{
	"/api/v1/query": true, "/api/v1/query_range": true, "/api/v1/query_exemplars": true,
	"/api/v1/series": true, "/api/v1/labels": true, "/api/v1/read": true,
}

// gateQueries makes the store's readers wait for their client's share of
// g (admission.FairGate). A client that goes away while it waits is
// dropped; one that goes away while its query runs cancels it, since the
// API evaluates under the request's context.
func gateQueries(g *admission.FairGate, wait time.Duration, next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !gatedPaths[r.URL.Path] && !strings.HasPrefix(r.URL.Path, "/api/v1/label/") {
			next.ServeHTTP(w, r)
			return
		}
		client := admission.ClientOf(r)
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		err := g.Acquire(ctx, client)
		cancel()
		if err != nil {
			if r.Context().Err() == nil { // waited the query timeout
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "unavailable",
					"error": fmt.Sprintf("no query slot for this client within %s (query.max_concurrency): retry later", wait)})
			}
			return // else the client is gone: nobody to answer
		}
		defer g.Release(client)
		next.ServeHTTP(w, r)
	})
}
