package logtemplates

import (
	"slices"
	"strings"
)

// node is a node of the prefix tree below a token-count node. An inner
// node has children by token; a leaf has clusters, oldest first. Nodes
// left with neither are removed.
type node struct {
	parent *node // nil for a token-count node
	key    string
	// children are by token; the <*> child takes tokens with a digit,
	// masked variables, and tokens that find the node full.
	children map[string]*node
	clusters []*cluster
}

// search returns the cluster that the loaded message joins, or nil.
func (m *Miner) search() *cluster {
	n := m.lengths[len(m.toks)]
	if n == nil {
		return nil
	}
	for d := 1; d < m.maxNodeDepth && d < len(m.toks); d++ {
		next := n.children[string(m.token(d-1))]
		if next == nil {
			next = n.children[wild]
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return m.fastMatch(n.clusters)
}

// fastMatch returns the cluster most similar to the loaded message, the
// one with more <*> on a tie and the oldest on a tie of both, where its
// similarity reaches the threshold; else nil.
func (m *Miner) fastMatch(cs []*cluster) *cluster {
	var best *cluster
	bestSim, bestParams := -1, -1
	for _, c := range cs {
		sim, params := m.similarity(c)
		if sim > bestSim || sim == bestSim && params > bestParams {
			best, bestSim, bestParams = c, sim, params
		}
	}
	if best == nil {
		return nil
	}
	if len(m.toks) == 0 || float64(bestSim)/float64(len(m.toks)) >= m.cfg.SimThreshold {
		return best
	}
	return nil
}

// similarity returns the number of c's positions that hold the loaded
// message's token, not counting its <*> positions, and the number of those.
// A masked variable in a template is a token like any other: it equals the
// message's <*> there, as drain3's named masks (<NUM>, <IP>) do.
func (m *Miner) similarity(c *cluster) (sim, params int) {
	for i, t := range c.toks {
		switch {
		case t.param:
			params++
		case t.s == string(m.token(i)):
			sim++
		}
	}
	return sim, params
}

// insert adds c to the tree, making the nodes of its path as drain3's
// add_seq_to_prefix_tree does.
func (m *Miner) insert(c *cluster) {
	n := m.lengths[len(c.toks)]
	if n == nil {
		n = &node{}
		m.lengths[len(c.toks)] = n
	}
	for d := 1; d < m.maxNodeDepth && d < len(c.toks); d++ {
		n = m.child(n, c.toks[d-1].s)
	}
	n.clusters = append(n.clusters, c)
	c.leaf = n
}

// child returns the child of n that token t goes to, made if need be. A
// token with a digit, or a masked variable, goes to the <*> child; so does
// any new token once n is full, a place being kept for <*>.
func (m *Miner) child(n *node, t string) *node {
	if next := n.children[t]; next != nil {
		return next
	}
	key := t
	if t == wild || hasDigit(t) {
		key = wild
	} else {
		limit := m.cfg.MaxChildren
		if n.children[wild] == nil {
			limit--
		}
		if len(n.children) >= limit {
			key = wild
		}
	}
	if next := n.children[key]; next != nil {
		return next
	}
	if n.children == nil {
		n.children = make(map[string]*node)
	}
	// The key is cloned so that the node does not keep the whole text of
	// the cluster that made it.
	next := &node{parent: n, key: key}
	if key != wild {
		next.key = strings.Clone(key)
	}
	n.children[next.key] = next
	return next
}

// remove takes c out of its leaf and removes the nodes it leaves empty.
func (m *Miner) remove(c *cluster) {
	n := c.leaf
	if i := slices.Index(n.clusters, c); i >= 0 {
		n.clusters = slices.Delete(n.clusters, i, i+1)
	}
	c.leaf = nil
	for len(n.clusters) == 0 && len(n.children) == 0 {
		if n.parent == nil {
			delete(m.lengths, len(c.toks))
			return
		}
		delete(n.parent.children, n.key)
		n = n.parent
	}
}
