package logtemplates

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMask(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		require.Equal(t, want, Mask(in), "Mask(%q)", in)
	}

	// UUIDs; a near-miss with a short last group is only split into numbers.
	f("order 123e4567-e89b-12d3-a456-426614174000 paid", "order <*> paid")
	f("id=0B3F9D8E-2C41-4E7A-9F6B-1A2D3C4E5F60", "id=<*>")
	f("123e4567-e89b-12d3-a456-42661417400", "<*>-e89b-<*>-a456-<*>")

	// Hex: 0x numbers and runs of 8 or more hex digits; 7 digits, or a run
	// that goes on into other letters, stay.
	f("Hex number 0xDEADBEAF", "Hex number <*>")
	f("ptr 0x7f3a at", "ptr <*> at")
	f("commit deadbeef pushed", "commit <*> pushed")
	f("trace 5f2b6a3c9d1e4f5a8b9c0d1e2f3a4b5c", "trace <*>")
	f("commit deadbee pushed", "commit deadbee pushed")
	f("deadbeefy", "deadbeefy")
	f("0x 0xg", "<*> <*>") // numbers with a unit

	// IPv4 addresses with an optional port; an octet over 255 makes it a
	// number, whose port is then a number of its own.
	f("connected to 10.0.0.1", "connected to <*>")
	f("connected to 192.168.0.1:8080.", "connected to <*>.")
	f("from 256.0.0.1:80", "from <*>:<*>")
	f("version 1.2.3.4.5", "version <*>")

	// Timestamps and times of day.
	f("at 2024-05-12T10:11:12.345Z done", "at <*> done")
	f("at 2024-05-12T10:11:12+02:00 done", "at <*> done")
	f("at 2024-05-12t10:11:12-0530 done", "at <*> done")
	f("2024-05-12 10:11:12,345 INFO start", "<*> <*> INFO start")
	f("Dec 10 07:07:38 LabSZ", "Dec <*> <*> LabSZ")
	f("log.2024-05-12.gz", "log.<*>.gz")
	f("at 10:11 ok", "at <*>:<*> ok")

	// Numbers, with sign, decimals, exponent and unit.
	f("took 12ms", "took <*>")
	f("took 3.5s, wrote 200MB", "took <*>, wrote <*>")
	f("took 5µs", "took <*>")
	f("took 1h2m3.5s", "took <*>")
	f("usage 61.4%", "usage <*>")
	f("0%00", "<*>%<*>")
	f("lr 2.4e-4 loss -0.25 delta +3", "lr <*> loss <*> delta <*>")
	f("sshd[24206]: ok", "sshd[<*>]: ok")
	f("GET /api/v1/users/42 HTTP/1.1", "GET /api/v1/users/<*> HTTP/<*>")
	f("1,234 rows", "<*>,<*> rows")
	f("range 10-20", "range <*>-<*>")
	f("node-7 up", "node-<*> up")
	f("done.", "done.")
	f("5.", "<*>.")

	// Words without digits stay, and so do words with digits after their
	// first letter.
	f("ERROR c.s.ContactsServiceImpl [findContactsById] done", "ERROR c.s.ContactsServiceImpl [findContactsById] done")
	f("v2 sha256 test9 ssh2 abc123 id_42 utf8", "v2 sha256 test9 ssh2 abc123 id_42 utf8")
	f("naïve 5", "naïve <*>")
	f("é5", "é5")

	// E-mail addresses; a domain with one label, or without a letter in
	// its last label, is not one.
	f("sent to john.doe+x@example.co.uk.", "sent to <*>.")
	f("root@localhost", "root@localhost")
	f("a@1.2", "a@<*>")
	f("a@b.io.5 x@y.z.0a", "<*>.<*> <*>")
	f("@handle", "@handle")

	// key=value pairs keep the key.
	f("user=bob logged in", "user=<*> logged in")
	f("a=1,b=two;c=3", "a=<*>,b=<*>;c=<*>")
	f("[user=bob][x-request-id=abc-123]", "[user=<*>][x-request-id=<*>]")
	f("GET /p?id=5&name=x", "GET /p?id=<*>&name=<*>")
	f("--flag=on", "--flag=<*>")
	f("ip=10.0.0.1:80 mail=a@b.io", "ip=<*> mail=<*>")
	f("q= k==v 5=6", "q= k==v <*>=<*>")
	f("token=dGVzdA==", "token=<*>")
	f("dGVzdA==", "dGVzdA==")
	f("user=<*>", "user=<*>")

	// Quoted strings are not variables of their own, and a quoted value of
	// a key=value pair is kept; what is inside quotes is masked like the
	// rest.
	f(`Get "http://10.0.0.1:8080/healthz": context deadline exceeded`, `Get "http://<*>/healthz": context deadline exceeded`)
	f(`query "select 5 from t" took 7ms`, `query "select <*> from t" took <*>`)
	f(`msg="user 5 logged in" user="bob" name='x'`, `msg="user <*> logged in" user="bob" name='x'`)
	f(`HTTPConnectionPool(host='10.0.0.1', port=8080)`, `HTTPConnectionPool(host='<*>', port=<*>)`)
	f("it's 5 o'clock", "it's <*> o'clock")
	f(`"a \" 5" 6`, `"a \" <*>" <*>`)
	f(`{"id":5,"name":"x 7","uid":"0b3f9d8e-2c41-4e7a-9f6b-1a2d3c4e5f60"}`, `{"id":<*>,"name":"x <*>","uid":"<*>"}`)
	f(`KeyError: 'user_id'`, `KeyError: 'user_id'`)

	// A log statement's source location keeps its line: after '#' behind a
	// qualified or capitalised name, after ':' behind a source file's name.
	// A number after '#' or ':' behind anything else is a number.
	f("INFO t.s.TravelServiceImpl#451 TraceID: 5f2b6a3c9d1e4f5a", "INFO t.s.TravelServiceImpl#451 TraceID: <*>")
	f("OrderController#39 [create]", "OrderController#39 [create]")
	f("E1112 02:47:31.514301 1 controller.go:114] sync failed", "E1112 <*> <*> controller.go:114] sync failed")
	f("at pkg/server/http.go:88 and worker.py:7", "at pkg/server/http.go:88 and worker.py:7")
	f("item#5 order #6 retries:3 host.example.com:443 a.go:5x", "item#<*> order #<*> retries:<*> host.example.com:<*> a.go:<*>")

	// White space other than ASCII separates words.
	f("5\u00a0ms", "<*>\u00a0ms")
	f("", "")
	f("   ", "   ")
}

func TestMaskKeepsTokens(t *testing.T) {
	for _, s := range []string{
		"5\u00a0ms x=1\u2003y",
		"a=b\u0085c 10.0.0.1\u00a0:80",
		`"quoted 5" and 'single 6' and "7 8`,
		strings.Repeat("1.", 50) + "µ 2",
	} {
		require.Len(t, strings.Fields(Mask(s)), len(strings.Fields(s)), "Mask(%q) = %q", s, Mask(s))
	}
}

func TestMaskUnchangedDoesNotAllocate(t *testing.T) {
	msg := "ERROR c.s.ContactsServiceImpl [findContactsById][No contacts according to contactsId]"
	allocs := testing.AllocsPerRun(100, func() { _ = Mask(msg) })
	require.Zero(t, allocs)
}

// TestMaskLinear checks that long runs which almost make an e-mail address
// or a key=value pair cost linear time: each would take minutes if every
// word start rescanned the run.
func TestMaskLinear(t *testing.T) {
	const n = 1 << 20
	for name, s := range map[string]string{
		"email": strings.Repeat("a.", n) + "@",
		"key":   strings.Repeat("a.", n) + "= x",
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, s, Mask(s))
		})
	}
	require.Equal(t, "<*>%x", Mask(strings.Repeat("1111.", n)+"1%x"))
}

// TestLocation: a statement's source location among a message's first
// three tokens, with the layout's brackets cut; none where there is none.
func TestLocation(t *testing.T) {
	for msg, want := range map[string]string{
		"t.s.TravelServiceImpl#451 TraceID: x [getRouteByRouteId]": "t.s.TravelServiceImpl#451",
		"02:47:31.514301 1 controller.go:114] sync failed":         "controller.go:114",
		"[main.go:42] starting":                                    "main.go:42",
		"worker 3 (train.py:88): loss 0.2":                         "train.py:88",
		"c.s.ContactsServiceImpl [findContactsById] done":          "",
		"the answer is in item#5":                                  "",
		"a b c d.go:5 too far":                                     "",
		"":                                                         "",
		"retries:3 then giving up":                                 "",
	} {
		got, ok := Location(msg)
		require.Equal(t, want, got, "%q", msg)
		require.Equal(t, want != "", ok, "%q", msg)
	}
}
