package logtemplates

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// added is what Add returned for a message.
type added struct {
	id    uint64
	isNew bool
	tmpl  string
}

// mine adds msgs to m and returns what each got, the template as it was
// right after the message.
func mine(t testing.TB, m *Miner, msgs ...string) []added {
	t.Helper()
	var got []added
	for _, msg := range msgs {
		id, isNew := m.Add(msg)
		got = append(got, added{id, isNew, m.Template(id)})
		checkInvariants(t, m)
	}
	return got
}

// TestAddClassic mines drain3's README example.
func TestAddClassic(t *testing.T) {
	m := newMiner(t, Config{})
	require.Equal(t, []added{
		{1, true, "connected to <*>"},
		{1, false, "connected to <*>"},
		{2, true, "Hex number <*>"},
		{3, true, "user davidoh logged in"},
		{3, false, "user <*> logged in"},
		{3, false, "user <*> logged in"},
		{4, true, "my IP is <*>"},
	}, mine(t, m,
		"connected to 10.0.0.1",
		"connected to 192.168.0.1",
		"Hex number 0xDEADBEAF",
		"user davidoh logged in",
		"user eranr logged in",
		"user Ohad logged in",
		"my IP is 10.0.0.1",
	))
	require.Equal(t, 4, m.Len())
	require.Equal(t, "user <*> logged in", m.Template(3))
}

// TestAddTrainTicket mines logback lines of a Train Ticket service: the
// same call site with other trace IDs, UUIDs and threads is one cluster; a
// different message of the same token count is another.
func TestAddTrainTicket(t *testing.T) {
	m := newMiner(t, Config{})
	const contacts = "ERROR  c.s.ContactsServiceImpl#37  [findContactsById][contactsRepository.findById][No contacts according to contactsId] contactsId: %s traceId=%s"
	const orders = "ERROR  c.s.OrderServiceImpl#112  [getOrderById][orderRepository.findById][Order not found for orderId] orderId: %s traceId=%s"
	got := mine(t, m,
		fmt.Sprintf(contacts, "0b3f9d8e-2c41-4e7a-9f6b-1a2d3c4e5f60", "5f2b6a3c9d1e4f5a"),
		fmt.Sprintf(contacts, "7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f", "a1b2c3d4e5f60718"),
		fmt.Sprintf(orders, "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a", "0011223344556677"),
		fmt.Sprintf(contacts, "11111111-2222-4333-8444-555555555555", "8899aabbccddeeff"),
	)
	require.Len(t, strings.Fields(fmt.Sprintf(contacts, "u", "t")), len(strings.Fields(fmt.Sprintf(orders, "u", "t"))))
	const want = "ERROR c.s.ContactsServiceImpl#37 [findContactsById][contactsRepository.findById][No contacts according to contactsId] contactsId: <*> traceId=<*>"
	require.Equal(t, []added{
		{1, true, want},
		{1, false, want},
		{2, true, "ERROR c.s.OrderServiceImpl#112 [getOrderById][orderRepository.findById][Order not found for orderId] orderId: <*> traceId=<*>"},
		{1, false, want},
	}, got)

	// The whole line, timestamp and thread included: other times, PIDs,
	// threads and span IDs leave the template as it was.
	m = newMiner(t, Config{})
	const line = "%s %s ERROR [ts-contacts-service,%s,%s] %d --- [http-nio-12347-exec-%d] c.s.ContactsServiceImpl#37 : [findContactsById][contactsRepository.findById][No contacts according to contactsId]"
	got = mine(t, m,
		fmt.Sprintf(line, "2025-03-14", "09:21:07.412", "5f2b6a3c9d1e4f5a", "8b9c0d1e2f3a4b5c", 1, 4),
		fmt.Sprintf(line, "2025-03-14", "09:21:09.007", "a1b2c3d4e5f60718", "0f1e2d3c4b5a6978", 1, 7),
		fmt.Sprintf(line, "2025-03-15", "00:00:00.000", "0011223344556677", "8899aabbccddeeff", 7, 10),
	)
	const wantLine = "<*> <*> ERROR [ts-contacts-service,<*>,<*>] <*> --- [http-nio-<*>-exec-<*>] c.s.ContactsServiceImpl#37 : [findContactsById][contactsRepository.findById][No contacts according to contactsId]"
	require.Equal(t, []added{{1, true, wantLine}, {1, false, wantLine}, {1, false, wantLine}}, got)
}

// TestAddTokenCounts checks that messages of different token counts never
// share a cluster, even at a threshold where any two messages of one count
// and first token would.
func TestAddTokenCounts(t *testing.T) {
	m := newMiner(t, Config{SimThreshold: 1e-9, MaxClusters: 1 << 20})
	words := []string{"disk", "full", "on", "sda", "retry", "now"}
	counts := map[uint64]int{}
	type route struct {
		count int
		first string
	}
	routes := map[route]bool{}
	for i := range 500 {
		n := 1 + i%7
		var b strings.Builder
		for k := range n {
			if k > 0 {
				b.WriteString(strings.Repeat(" ", 1+k%2))
			}
			b.WriteString(words[(i*7+k*3)%len(words)])
		}
		msg := b.String()
		routes[route{n, strings.Fields(msg)[0]}] = true
		id, _ := m.Add(msg)
		if c, ok := counts[id]; ok {
			require.Equal(t, c, n, "cluster %d (%q) got a message of %d tokens", id, m.Template(id), n)
		}
		counts[id] = n
		require.Len(t, strings.Fields(m.Template(id)), n)
	}
	checkInvariants(t, m)
	require.Len(t, routes, m.Len(), "one cluster per token count and first token")
}

// TestAddNumericTokensRoute checks drain3's routing: first tokens without a
// digit get children of their own, so messages that differ there do not
// meet; a token with a digit goes to the <*> child, and so does any token
// with no child of its own once the <*> child exists.
func TestAddNumericTokensRoute(t *testing.T) {
	m := newMiner(t, Config{})
	require.Equal(t, []added{
		{1, true, "alpha failed again"},
		{2, true, "beta failed again"},
		{3, true, "test9 failed again"},
		{3, false, "<*> failed again"},
		{3, false, "<*> failed again"}, // gamma has no child: the <*> child
		{1, false, "alpha failed again"},
	}, mine(t, m, "alpha failed again", "beta failed again", "test9 failed again", "test8 failed again",
		"gamma failed again", "alpha failed again"))
	require.Len(t, m.lengths[3].children, 3)
}

// TestAddTies checks drain3's choice among equally similar clusters: the
// one with more <*>, then the oldest.
func TestAddTies(t *testing.T) {
	m := newMiner(t, Config{})
	require.Equal(t, []added{
		{1, true, "x a b c"},
		{2, true, "x d e f"},
		{1, false, "x a <*> <*>"}, // two tokens like each: the oldest
	}, mine(t, m, "x a b c", "x d e f", "x a e q"))

	m = newMiner(t, Config{SimThreshold: 0.5})
	require.Equal(t, []added{
		{1, true, "k ba bb bc bd be"},
		{2, true, "k aa ab ac ad ae"},
		{2, false, "k aa ab ac ad <*>"},
		{2, false, "k <*> <*> ac ad <*>"}, // three tokens like each: the one with a <*>
	}, mine(t, m, "k ba bb bc bd be", "k aa ab ac ad ae", "k aa ab ac ad zz", "k ba bb ac ad qq"))
}

// TestAddMaxChildren checks that once a node holds MaxChildren children,
// new first tokens go to its <*> child and meet there.
func TestAddMaxChildren(t *testing.T) {
	m := newMiner(t, Config{MaxChildren: 3})
	got := mine(t, m, "alpha is up", "beta is up", "gamma is up", "delta is up", "alpha is down")
	require.Equal(t, []added{
		{1, true, "alpha is up"},
		{2, true, "beta is up"},
		{3, true, "gamma is up"}, // the third child is <*>
		{3, false, "<*> is up"},
		{1, false, "alpha is <*>"},
	}, got)
	n := m.lengths[3]
	require.Len(t, n.children, 3)
	require.Contains(t, n.children, wild)
}

// TestAddEviction checks the LRU bound: a new cluster past MaxClusters
// evicts the one made or joined longest ago, whose ID then has no template
// and is never given again.
func TestAddEviction(t *testing.T) {
	m := newMiner(t, Config{MaxClusters: 2})
	const (
		disk = "disk full on sda"
		link = "link down on eth0"
		fan  = "fan failed in tray"
	)
	got := mine(t, m, disk, link, disk, fan)
	require.Equal(t, []added{
		{1, true, disk},
		{2, true, link},
		{1, false, disk},
		{3, true, fan}, // evicts link, used longest ago
	}, got)
	require.Equal(t, 2, m.Len())
	require.Empty(t, m.Template(2))
	require.Equal(t, disk, m.Template(1))

	id, isNew := m.Add(link) // evicts disk
	require.Equal(t, uint64(4), id)
	require.True(t, isNew)
	require.Empty(t, m.Template(1))
	require.Equal(t, fan, m.Template(3))
	require.Equal(t, 2, m.Len())
	checkInvariants(t, m)

	// Many more: IDs keep counting up, and the tree keeps only what is held.
	seen := map[uint64]bool{1: true, 2: true, 3: true, 4: true}
	for i := range 200 {
		id, isNew := m.Add(fmt.Sprintf("event%c%c happened at %d", 'a'+i%26, 'a'+i/26, i))
		require.True(t, isNew)
		require.False(t, seen[id], "ID %d given twice", id)
		seen[id] = true
		require.LessOrEqual(t, m.Len(), 2)
		checkInvariants(t, m)
	}
	require.Equal(t, 204, len(seen))
	require.Equal(t, uint64(204), m.lastID)
}

// TestAddMaxTokens checks that tokens past MaxTokens are dropped before
// mining.
func TestAddMaxTokens(t *testing.T) {
	m := newMiner(t, Config{MaxTokens: 3})
	require.Equal(t, []added{
		{1, true, "a b c"},
		{1, false, "a b c"},
		{1, false, "a b c"},
		{2, true, "a b"},
	}, mine(t, m, "a b c d e", "a  b\tc x y z", "a b c", "a b"))

	m = newMiner(t, Config{})
	giant := strings.Repeat("word 12 ", 100_000)
	id, _ := m.Add(giant)
	require.LessOrEqual(t, len(m.Template(id)), defaultMaxTemplateBytes)
	require.True(t, strings.HasSuffix(m.Template(id), " …"))
	require.Len(t, m.clusters[id].toks, defaultMaxTokens)
	require.Equal(t, strings.Repeat("word <*> ", 32)[:len("word <*> ")*32-1], joinToks(m.clusters[id].toks))

	// A giant token is cut at 16 KiB, at a character boundary.
	blob := "x" + strings.Repeat("é", 1<<20)
	id, _ = m.Add("payload " + blob)
	toks := m.clusters[id].toks
	require.Len(t, toks, 2)
	require.Equal(t, blob[:maxMessageBytes-len("payload ")-1], toks[1].s)
	require.True(t, utf8.ValidString(m.Template(id)))
	require.LessOrEqual(t, len(m.Template(id)), defaultMaxTemplateBytes)
}

func joinToks(toks []tok) string {
	var s []string
	for _, t := range toks {
		s = append(s, t.s)
	}
	return strings.Join(s, " ")
}

// TestTemplateMaxBytes checks the cutting of long templates.
func TestTemplateMaxBytes(t *testing.T) {
	f := func(max int, msg, want string) {
		t.Helper()
		m := newMiner(t, Config{MaxTemplateBytes: max})
		id, _ := m.Add(msg)
		got := m.Template(id)
		require.Equal(t, want, got)
		require.LessOrEqual(t, len(got), max)
		require.True(t, utf8.ValidString(got))
	}
	f(30, "alpha beta gamma delta epsilon", "alpha beta gamma delta epsilon") // exactly 30
	f(29, "alpha beta gamma delta epsilon", "alpha beta gamma delta …")
	f(20, "alpha beta gamma delta epsilon", "alpha beta gamma …")
	f(10, "abcdefghijklmnop x", "abcdefg…")
	f(10, "abcdefg xyz", "abcdefg…")
	f(10, "ééééééé x", "ééé…")
	f(8, "user=bob logged in at 10:11:12", "user=…")
}

// TestAddGeneralisedTemplateCache checks that Template follows a template
// that generalises after it was rendered.
func TestAddGeneralisedTemplateCache(t *testing.T) {
	m := newMiner(t, Config{})
	id, _ := m.Add("user davidoh logged in")
	require.Equal(t, "user davidoh logged in", m.Template(id))
	m.Add("user eranr logged in")
	require.Equal(t, "user <*> logged in", m.Template(id))
}

// TestAddEmpty checks that messages with no token share one cluster with
// the empty template.
func TestAddEmpty(t *testing.T) {
	m := newMiner(t, Config{})
	got := mine(t, m, "", " \t\n", "x", "\u00a0")
	require.Equal(t, []added{{1, true, ""}, {1, false, ""}, {2, true, "x"}, {1, false, ""}}, got)
	require.Empty(t, m.Template(99))
	require.Empty(t, m.Template(0))
}

// TestAddDoesNotAllocate checks that a message that joins a cluster
// allocates nothing.
func TestAddDoesNotAllocate(t *testing.T) {
	m := newMiner(t, Config{})
	msgs := []string{
		"ERROR c.s.ContactsServiceImpl#37 [findContactsById] contactsId: 0b3f9d8e-2c41-4e7a-9f6b-1a2d3c4e5f60 took 12ms",
		"ERROR c.s.ContactsServiceImpl#37 [findContactsById] contactsId: 7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f took 7ms",
	}
	mine(t, m, msgs...)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		m.Add(msgs[i%2])
		i++
	})
	require.Zero(t, allocs)
}

// checkInvariants checks the tree, the index and the LRU ring against each
// other.
func checkInvariants(t testing.TB, m *Miner) {
	t.Helper()
	inTree := 0
	var walk func(n *node, count, depth int)
	walk = func(n *node, count, depth int) {
		require.False(t, len(n.children) == 0 && len(n.clusters) == 0, "an empty node is kept")
		require.False(t, len(n.children) > 0 && len(n.clusters) > 0, "a node with both children and clusters")
		require.LessOrEqual(t, len(n.children), m.cfg.MaxChildren)
		for key, child := range n.children {
			require.Equal(t, key, child.key)
			require.Same(t, n, child.parent)
			walk(child, count, depth+1)
		}
		if len(n.clusters) > 0 {
			require.Equal(t, max(1, min(m.maxNodeDepth, count)), depth, "leaf depth for %d tokens", count)
		}
		for _, c := range n.clusters {
			require.Same(t, n, c.leaf)
			require.Len(t, c.toks, count)
			require.Same(t, c, m.clusters[c.id])
			inTree++
		}
	}
	for count, n := range m.lengths {
		require.Nil(t, n.parent)
		walk(n, count, 1)
	}
	require.Equal(t, len(m.clusters), inTree, "clusters in the tree")
	require.LessOrEqual(t, len(m.clusters), m.cfg.MaxClusters)

	inRing := 0
	for c := m.lru.next; c != &m.lru; c = c.next {
		require.Same(t, c, c.next.prev)
		require.Same(t, c, m.clusters[c.id])
		inRing++
		require.LessOrEqual(t, inRing, len(m.clusters))
	}
	require.Equal(t, len(m.clusters), inRing, "clusters in the ring")
}
