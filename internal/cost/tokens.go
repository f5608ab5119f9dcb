package cost

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/vigil-obs/vigil/internal/catalog"
)

// tokenCount is the tokens one server's series counted in the range.
type tokenCount struct {
	cluster, model     string
	pod                podKey
	prompt, generation float64
}

// tokenSource is one metric that counts tokens of one kind.
type tokenSource struct {
	metric     string
	vocabulary catalog.Vocabulary
	generation bool
	matchers   []*labels.Matcher
}

// tokenSources are the token counters of the catalog: the prompt and
// generation counters of vLLM, NIM and SGLang; TGI's input and generated
// length histograms' sums; the OpenTelemetry GenAI token usage
// histogram's sum by gen_ai_token_type. The per-request histograms of the
// servers that also have counters are left out, so nothing counts twice.
func tokenSources(cat *catalog.Catalog) []tokenSource {
	var out []tokenSource
	add := func(signal string, generation bool, only catalog.Vocabulary, suffix string, ms ...*labels.Matcher) {
		sig, ok := cat.Signal(signal)
		if !ok {
			return
		}
		for _, s := range sig.Sources {
			if only != "" && s.Vocabulary != only {
				continue
			}
			out = append(out, tokenSource{metric: s.Metric + suffix, vocabulary: s.Vocabulary, generation: generation, matchers: ms})
		}
	}
	add("infer.prompt_tokens", false, "", "")
	add("infer.generation_tokens", true, "", "")
	add("infer.request_prompt_tokens", false, catalog.TGI, "_sum")
	add("infer.request_generation_tokens", true, catalog.TGI, "_sum")
	add("infer.client_token_usage", false, catalog.OTelGenAI, "_sum", labels.MustNewMatcher(labels.MatchEqual, "gen_ai_token_type", "input"))
	add("infer.client_token_usage", true, catalog.OTelGenAI, "_sum", labels.MustNewMatcher(labels.MatchEqual, "gen_ai_token_type", "output"))
	return out
}

// tokenBaseline is how far before the range a counter's last sample is
// its starting value.
const tokenBaseline = 5 * time.Minute

// readTokens reads how many tokens each server counted in the range: the
// counter's increase from its last value at or before the start (else its
// first in the range) to its last, resets counted as restarts from zero.
func (c *computation) readTokens(ctx context.Context, names map[string]struct{}) error {
	for _, ts := range tokenSources(c.opts.Catalog) {
		if _, ok := names[ts.metric]; !ok {
			continue
		}
		err := eachSeries(ctx, c.src, c.from-tokenBaseline.Milliseconds(), c.to, ts.metric, ts.matchers, func(lset labels.Labels, times []int64, vs []float64) {
			inc, prev, started := 0.0, 0.0, false
			for i, t := range times {
				v := vs[i]
				switch {
				case t <= c.from:
					prev, started = v, true
					continue
				case !started:
					prev, started = v, true
					continue
				case v >= prev:
					inc += v - prev
				default:
					inc += v // a restart: the counter began again at zero
				}
				prev = v
			}
			if inc <= 0 {
				return
			}
			res := c.opts.Catalog.Resolve(ts.vocabulary, lset)
			tc := tokenCount{cluster: lset.Get("cluster"), model: res.Entity[catalog.KeyModel],
				pod: podKey{res.Entity[catalog.KeyNamespace], res.Entity[catalog.KeyPod]}}
			if ts.generation {
				tc.generation = inc
			} else {
				tc.prompt = inc
			}
			c.tokens = append(c.tokens, tc)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
