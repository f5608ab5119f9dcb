package redact

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// handler is an slog.Handler that redacts records before next sees them.
type handler struct {
	next   slog.Handler
	r      *Redactor
	prefix string // the open groups, dotted, for key rules
}

var _ slog.Handler = (*handler)(nil)

// NewHandler returns a handler that redacts each record's message and
// attributes (groups, errors, fmt.Stringers, slog.LogValuers and other
// values by their JSON) with r's rules, then passes it to next. Attribute
// keys are judged with their groups ("db" group, "password" key:
// "db.password").
func NewHandler(next slog.Handler, r *Redactor) slog.Handler {
	return &handler{next: next, r: r}
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	msg, _ := h.r.text(rec.Message, 0)
	out := slog.NewRecord(rec.Time, rec.Level, msg, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.r.attr(h.prefix, a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.r.attr(h.prefix, a)
	}
	return &handler{next: h.next.WithAttrs(red), r: h.r, prefix: h.prefix}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{next: h.next.WithGroup(name), r: h.r, prefix: join(h.prefix, name)}
}

func join(prefix, key string) string {
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	}
	return prefix + "." + key
}

// attr returns a redacted under the open groups prefix.
func (r *Redactor) attr(prefix string, a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	path := join(prefix, a.Key)
	kind := keyPlain
	if a.Key != "" {
		kind = r.keys.kind(path)
	}
	if kind != keyPlain && !(kind == keyGenAI && r.genAI == GenAIKeep) {
		if s := attrText(a.Value); s != "" && !isMarker(s) {
			switch {
			case kind == keyGenAI && r.genAI == GenAIHash:
				r.count(ruleGenAI)
				return slog.String(a.Key, r.hash(s))
			case kind == keyGenAI:
				r.count(ruleGenAI)
				return slog.String(a.Key, marker(ruleGenAI))
			case !r.allowed(s):
				r.count(keyRule(kind))
				return slog.String(a.Key, marker(keyRule(kind)))
			}
		}
		return a
	}
	switch a.Value.Kind() {
	case slog.KindGroup:
		group := slices.Clone(a.Value.Group())
		for i := range group {
			group[i] = r.attr(path, group[i])
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(group...)}
	case slog.KindString:
		if out, ch := r.text(a.Value.String(), 0); ch {
			return slog.String(a.Key, out)
		}
	case slog.KindAny:
		for _, s := range anyTexts(a.Value.Any()) {
			if out, ch := r.text(s, 0); ch {
				return slog.String(a.Key, out)
			}
		}
	}
	return a
}

// attrText is the text an slog value shows.
func attrText(v slog.Value) string {
	switch v.Kind() {
	case slog.KindAny:
		return strings.Join(anyTexts(v.Any()), " ")
	case slog.KindGroup:
		var b strings.Builder
		for _, a := range v.Group() {
			fmt.Fprintf(&b, "%s=%s ", a.Key, attrText(a.Value.Resolve()))
		}
		return b.String()
	}
	return v.String()
}

// anyTexts are the texts handlers may write for a value of kind Any: its
// MarshalText, its JSON (slog.JSONHandler) and its %+v (slog.TextHandler;
// an error's message, a Stringer's string). A method that panics gives no
// text.
func anyTexts(v any) (texts []string) {
	if v == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			texts = append(texts, fmt.Sprintf("%T", v))
		}
	}()
	if b, ok := v.([]byte); ok {
		return []string{string(b)}
	}
	if tm, ok := v.(encoding.TextMarshaler); ok {
		if b, err := tm.MarshalText(); err == nil {
			texts = append(texts, string(b))
		}
	}
	if _, isErr := v.(error); !isErr {
		if b, err := json.Marshal(v); err == nil {
			texts = append(texts, string(b))
		}
	}
	return append(texts, fmt.Sprintf("%+v", v))
}
