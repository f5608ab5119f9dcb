package redact

import (
	"context"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Label redacts the value of the label name as an attribute of that key
// is redacted: the whole value when the name is a secret key (password,
// authorization, ...), GenAI content by genai_content, and the secrets
// that the value patterns find otherwise. The metric name is never
// touched. It reports whether the value changed.
func (r *Redactor) Label(name, value string) (string, bool) {
	if name == model.MetricNameLabel || value == "" || isMarker(value) {
		return value, false
	}
	switch kind := r.keys.kind(name); kind {
	case keySecret, keyDenied:
		if len(r.allow) > 0 && r.allowed(value) {
			return value, false
		}
		rule := keyRule(kind)
		r.count(rule)
		return marker(rule), true
	case keyGenAI:
		switch r.genAI {
		case GenAIDrop:
			r.count(ruleGenAI)
			return marker(ruleGenAI), true
		case GenAIHash:
			r.count(ruleGenAI)
			return r.hash(value), true
		}
	}
	return r.text(value, 0)
}

// Labels redacts every label value of lset (Label) and returns the labels
// and whether any changed; unchanged, lset itself is returned.
func (r *Redactor) Labels(lset labels.Labels) (labels.Labels, bool) {
	type change struct {
		i     int
		value string
	}
	var changes []change
	i := 0
	lset.Range(func(l labels.Label) {
		if v, ch := r.Label(l.Name, l.Value); ch {
			changes = append(changes, change{i, v})
		}
		i++
	})
	if len(changes) == 0 {
		return lset, false
	}
	b := labels.NewScratchBuilder(lset.Len())
	i = 0
	lset.Range(func(l labels.Label) {
		v := l.Value
		if len(changes) > 0 && changes[0].i == i {
			v, changes = changes[0].value, changes[1:]
		}
		b.Add(l.Name, v)
		i++
	})
	return b.Labels(), true
}

// labelCacheSize bounds the series whose redacted labels an appendable
// remembers: series repeat from one request or scrape to the next, and
// redacting a series' labels again each time would cost more than the
// append.
const labelCacheSize = 1 << 17

// Appendable returns app with every sample's labels, and its exemplars'
// labels, redacted (Labels) before they are appended. Series are
// remembered by their labels' hash (checked against the labels, so a hash
// collision costs a redaction, never a wrong series), up to
// labelCacheSize, then forgotten all at once.
func (r *Redactor) Appendable(app storage.AppendableV2) storage.AppendableV2 {
	return &redactingAppendable{r: r, next: app, cache: map[uint64]cachedLabels{}}
}

type cachedLabels struct {
	in, out labels.Labels
	changed bool
}

type redactingAppendable struct {
	r    *Redactor
	next storage.AppendableV2

	mu    sync.Mutex
	cache map[uint64]cachedLabels
}

func (a *redactingAppendable) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return &redactingAppender{AppenderV2: a.next.AppenderV2(ctx), a: a}
}

// labels returns lset redacted, from the cache when it holds lset.
func (a *redactingAppendable) labels(lset labels.Labels) labels.Labels {
	h := lset.Hash()
	a.mu.Lock()
	c, ok := a.cache[h]
	a.mu.Unlock()
	if ok && labels.Equal(c.in, lset) {
		if c.changed {
			// Each sample of a secret counts, as each OTLP value does.
			a.r.Labels(lset)
		}
		return c.out
	}
	out, changed := a.r.Labels(lset)
	a.mu.Lock()
	if len(a.cache) >= labelCacheSize {
		clear(a.cache)
	}
	a.cache[h] = cachedLabels{in: lset, out: out, changed: changed}
	a.mu.Unlock()
	return out
}

type redactingAppender struct {
	storage.AppenderV2
	a *redactingAppendable
}

func (ap *redactingAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	ls = ap.a.labels(ls)
	if len(opts.Exemplars) > 0 {
		exs := make([]exemplar.Exemplar, len(opts.Exemplars))
		for i, e := range opts.Exemplars {
			e.Labels, _ = ap.a.r.Labels(e.Labels)
			exs[i] = e
		}
		opts.Exemplars = exs
	}
	return ap.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
}
