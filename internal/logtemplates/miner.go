package logtemplates

import (
	"strings"
	"unicode/utf8"
)

// maxMessageBytes bounds the bytes mined of a message, so that a giant
// token (a blob with no space in it) costs no more than a long line.
const maxMessageBytes = 16 << 10

// Miner mines the templates of a stream of messages. A Miner is made by
// New. It is not safe for concurrent use: the caller serialises its calls,
// Template and Len included (Template caches the text it renders).
type Miner struct {
	cfg Config // with the defaults set
	// maxNodeDepth is drain3's max_node_depth (Depth-2): the depth of the
	// leaves, the token-count nodes being at depth 1.
	maxNodeDepth int
	lengths      map[int]*node // the token-count nodes
	clusters     map[uint64]*cluster
	// lru is the sentinel of the clusters' ring: lru.next is the most
	// recently used, lru.prev the least.
	lru    cluster
	lastID uint64
	// buf and toks are the message being mined: masked, and its tokens.
	buf  []byte
	toks []span
}

// cluster is a template and the messages that joined it.
type cluster struct {
	id   uint64
	toks []tok
	leaf *node
	// prev and next link the clusters from the most recently used.
	prev, next *cluster
	// text is the rendered template; "" until Template asks for it, and
	// again after the template changes.
	text string
}

// tok is a position of a template.
type tok struct {
	s string
	// param says that the messages differ here; s is then <*>. A masked
	// variable has s <*> and param false.
	param bool
}

// New returns a Miner with no clusters, or the error of cfg.Validate.
func New(cfg Config) (*Miner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := &Miner{
		cfg:          cfg,
		maxNodeDepth: cfg.Depth - 2,
		lengths:      make(map[int]*node),
		clusters:     make(map[uint64]*cluster),
	}
	m.lru.next, m.lru.prev = &m.lru, &m.lru
	return m, nil
}

// Add mines one message and returns its cluster: an ID that is stable for the
// cluster's life (IDs start at 1 and are never reused, an evicted cluster's
// included), and whether the message made the cluster. The cluster's template
// can generalise later: a token where a later message differs becomes <*>. The
// message is cut after Config.MaxTokens tokens (and after 16 KiB) and masked
// (see Mask) before it is mined. A message with no token has a cluster of its
// own, with the empty template.
func (m *Miner) Add(msg string) (id uint64, isNew bool) {
	return m.add(msg, true)
}

// add is Add, with the masking optional so that the tests can follow
// drain3's own, which mine unmasked messages.
func (m *Miner) add(msg string, mask bool) (uint64, bool) {
	m.load(msg, mask)
	if c := m.search(); c != nil {
		m.generalise(c)
		m.touch(c)
		return c.id, false
	}
	if len(m.clusters) >= m.cfg.MaxClusters {
		m.evict(m.lru.prev)
	}
	c := m.newCluster()
	m.clusters[c.id] = c
	m.insert(c)
	m.pushFront(c)
	return c.id, true
}

// Template returns the current template of the cluster id: its tokens
// joined by one space, <*> where it varies, cut at a token boundary and
// ended with " …" where it is longer than Config.MaxTemplateBytes (a first
// token too long on its own is cut at a character boundary and ended with
// "…"). It returns "" for an ID that is unknown or evicted, and for the
// cluster of messages with no token. Template does not count as a use of
// the cluster for eviction.
func (m *Miner) Template(id uint64) string {
	c := m.clusters[id]
	if c == nil {
		return ""
	}
	if c.text == "" {
		c.text = render(c.toks, m.cfg.MaxTemplateBytes)
	}
	return c.text
}

// Len returns the number of clusters held.
func (m *Miner) Len() int { return len(m.clusters) }

// load cuts msg after MaxTokens tokens and maxMessageBytes bytes, masks it
// into buf and splits it.
func (m *Miner) load(msg string, mask bool) {
	msg = msg[:fieldsEnd(msg, m.cfg.MaxTokens)]
	if len(msg) > maxMessageBytes {
		k := maxMessageBytes
		for k > 0 && !utf8.RuneStart(msg[k]) {
			k--
		}
		msg = msg[:k]
	}
	b := m.buf[:0]
	changed := false
	if mask {
		b, changed = maskAppend(b, msg)
	}
	if !changed {
		b = append(b, msg...)
	}
	m.buf = b
	m.toks = appendFields(m.toks[:0], b, m.cfg.MaxTokens)
}

// token returns the loaded message's i-th token.
func (m *Miner) token(i int) []byte {
	sp := m.toks[i]
	return m.buf[sp.lo:sp.hi]
}

// newCluster returns a cluster of the loaded message, with the next ID. Its
// tokens share one copy of their text.
func (m *Miner) newCluster() *cluster {
	n := 0
	for _, sp := range m.toks {
		n += sp.hi - sp.lo
	}
	var sb strings.Builder
	sb.Grow(n)
	for i := range m.toks {
		sb.Write(m.token(i))
	}
	text := sb.String()
	toks := make([]tok, len(m.toks))
	off := 0
	for i, sp := range m.toks {
		end := off + sp.hi - sp.lo
		toks[i].s = text[off:end]
		off = end
	}
	m.lastID++
	return &cluster{id: m.lastID, toks: toks}
}

// generalise turns into <*> the positions of c where the loaded message
// differs (drain3's create_template).
func (m *Miner) generalise(c *cluster) {
	for i := range c.toks {
		if t := &c.toks[i]; !t.param && t.s != string(m.token(i)) {
			t.s, t.param = wild, true
			c.text = ""
		}
	}
}

// evict removes c from the tree, the index and the ring.
func (m *Miner) evict(c *cluster) {
	m.remove(c)
	delete(m.clusters, c.id)
	m.unlink(c)
}

// touch makes c the most recently used cluster.
func (m *Miner) touch(c *cluster) {
	if m.lru.next != c {
		m.unlink(c)
		m.pushFront(c)
	}
}

func (m *Miner) pushFront(c *cluster) {
	c.prev, c.next = &m.lru, m.lru.next
	m.lru.next.prev = c
	m.lru.next = c
}

func (m *Miner) unlink(c *cluster) {
	c.prev.next = c.next
	c.next.prev = c.prev
	c.prev, c.next = nil, nil
}

// ellipsis ends a template that was cut.
const ellipsis = "…"

// render joins toks with one space. Where that is longer than max bytes,
// it keeps the whole tokens that fit with " …" after them, or, where not
// even the first fits, as much of the first as fits with "…", cut at a
// character boundary.
func render(toks []tok, max int) string {
	if len(toks) == 0 {
		return ""
	}
	n := len(toks) - 1
	for _, t := range toks {
		n += len(t.s)
	}
	var b strings.Builder
	if n <= max {
		b.Grow(n)
		for i, t := range toks {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t.s)
		}
		return b.String()
	}
	b.Grow(max)
	room := max - len(" "+ellipsis)
	for i, t := range toks {
		need := len(t.s)
		if i > 0 {
			need++
		}
		if b.Len()+need > room {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.s)
	}
	if b.Len() > 0 {
		b.WriteString(" " + ellipsis)
		return b.String()
	}
	s := toks[0].s
	k := min(max-len(ellipsis), len(s))
	for k > 0 && k < len(s) && !utf8.RuneStart(s[k]) {
		k--
	}
	b.WriteString(s[:k])
	b.WriteString(ellipsis)
	return b.String()
}
