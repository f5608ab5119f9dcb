package logtemplates

import (
	"errors"
	"fmt"
	"math"
)

// The defaults. Depth, SimThreshold and MaxChildren are drain3's (its Drain
// class and TemplateMinerConfig); drain3 holds any number of clusters by
// default, so MaxClusters, MaxTokens and MaxTemplateBytes are this package's.
const (
	defaultDepth            = 4
	defaultSimThreshold     = 0.4
	defaultMaxChildren      = 100
	defaultMaxClusters      = 1000
	defaultMaxTokens        = 64
	defaultMaxTemplateBytes = 200

	// minDepth is drain3's minimum: the root, the token-count level and the
	// level of the clusters.
	minDepth = 3
	// minTemplateBytes leaves room for a few bytes of text and the ellipsis.
	minTemplateBytes = 8
)

// Config bounds a Miner. A zero field takes its default, so a zero
// SimThreshold means 0.4; to let any message of a leaf join its best
// cluster, use a tiny positive threshold instead.
type Config struct {
	// Depth is the depth of the prefix tree's clusters, counting the root
	// as level 1 and the token-count level as 2, so that the first Depth-3
	// tokens of a message choose its leaf (drain3's depth; default 4, which
	// routes by the first token alone; at least 3).
	Depth int
	// SimThreshold is the least similarity with which a message joins a
	// cluster: the share of the template's positions that hold the
	// message's own token, the template's <*> positions counting as
	// different (drain3's sim_th; default 0.4; within [0, 1]).
	SimThreshold float64
	// MaxChildren bounds the children of a tree node; once a node is full,
	// new tokens go to its <*> child (drain3's max_children; default 100).
	MaxChildren int
	// MaxClusters bounds the clusters held; a new cluster past it evicts the
	// least recently used one (drain3's max_clusters; default 1000).
	MaxClusters int
	// MaxTokens bounds the tokens mined of a message: the ones past it are
	// dropped before masking, which bounds the cost of a giant line
	// (default 64). Bytes past 16 KiB are dropped too, so that a giant
	// token costs no more.
	MaxTokens int
	// MaxTemplateBytes bounds what Template returns: a longer template is
	// cut at a token boundary and ends in " …", or, where its first token is
	// too long on its own, in that token's first bytes and "…" (default
	// 200; at least 8).
	MaxTemplateBytes int
}

// Validate says what is wrong with c: a negative field, a SimThreshold
// outside [0, 1], a Depth below 3 or a MaxTemplateBytes below 8 (zero, the
// default, is valid for every field). Each error names its field.
func (c Config) Validate() error {
	var errs []error
	negative := func(field string, v int) bool {
		if v < 0 {
			errs = append(errs, fmt.Errorf("logtemplates config: %s %d is negative", field, v))
		}
		return v < 0
	}
	if !negative("Depth", c.Depth) && c.Depth > 0 && c.Depth < minDepth {
		errs = append(errs, fmt.Errorf("logtemplates config: Depth %d is below the minimum of %d", c.Depth, minDepth))
	}
	if math.IsNaN(c.SimThreshold) || c.SimThreshold < 0 || c.SimThreshold > 1 {
		errs = append(errs, fmt.Errorf("logtemplates config: SimThreshold %v is not within [0, 1]", c.SimThreshold))
	}
	negative("MaxChildren", c.MaxChildren)
	negative("MaxClusters", c.MaxClusters)
	negative("MaxTokens", c.MaxTokens)
	if !negative("MaxTemplateBytes", c.MaxTemplateBytes) && c.MaxTemplateBytes > 0 && c.MaxTemplateBytes < minTemplateBytes {
		errs = append(errs, fmt.Errorf("logtemplates config: MaxTemplateBytes %d is below the minimum of %d", c.MaxTemplateBytes, minTemplateBytes))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	if c.Depth == 0 {
		c.Depth = defaultDepth
	}
	if c.SimThreshold == 0 {
		c.SimThreshold = defaultSimThreshold
	}
	if c.MaxChildren == 0 {
		c.MaxChildren = defaultMaxChildren
	}
	if c.MaxClusters == 0 {
		c.MaxClusters = defaultMaxClusters
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = defaultMaxTokens
	}
	if c.MaxTemplateBytes == 0 {
		c.MaxTemplateBytes = defaultMaxTemplateBytes
	}
	return c
}
