package logtemplates

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are real-looking lines and the edge cases of the scanner.
var fuzzSeeds = []string{
	"connected to 10.0.0.1\nconnected to 192.168.0.1\nHex number 0xDEADBEAF",
	"user davidoh logged in\nuser eranr logged in\nuser Ohad logged in",
	"ERROR  c.s.ContactsServiceImpl#37  [findContactsById][contactsRepository.findById][No contacts according to contactsId] contactsId: 0b3f9d8e-2c41-4e7a-9f6b-1a2d3c4e5f60",
	"2025-03-14 09:21:07.412 ERROR [ts-contacts-service,5f2b6a3c9d1e4f5a,8b9c0d1e2f3a4b5c] 1 --- [http-nio-12347-exec-4]",
	"Dec 10 07:07:38 LabSZ sshd[24206]: input_userauth_request: invalid user test9 [preauth]",
	`level=info msg="handled request" status=200 duration=0.041s user=a@b.io ip=10.0.0.1:443`,
	`{"level":"info","ts":1762915753.41,"msg":"it's \"5\" o'clock"}`,
	"A A A\nA A B\nB A A\nB A B\nC A A\nC A B\nB A A\nA A A",
	"", "\n\n", " \t ", "\u00a0x\u0085y", "5µs é5 naïve", "\xff\xfe 5 \xc3", `"unclosed 5`, `'a \' 6`, `Get "http://10.0.0.1:8080/x": EOF`,
	"0x 0xg 1e-9 -5 +3 61.4% 1,234 10-20", "q= k==v token=dGVzdA== user=<*> <*>",
	"2024-05-12T10:11:12.345+02:00 10:11:12,345 1.2.3.4.5 256.0.0.1:80 123e4567-e89b-12d3-a456-426614174000",
}

// FuzzAdd checks that mining never panics and keeps its promises on any
// input, split into messages at newlines:
//
//	go test ./internal/logtemplates -run '^$' -fuzz FuzzAdd -fuzztime 60s
func FuzzAdd(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data string, tight bool) {
		cfg := Config{MaxClusters: 4, MaxTemplateBytes: 1 << 20}
		if tight {
			cfg = Config{Depth: 5, SimThreshold: 0.3, MaxChildren: 2, MaxClusters: 2, MaxTokens: 5, MaxTemplateBytes: 16}
		}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var lastID uint64
		for _, msg := range strings.Split(data, "\n") {
			id, isNew := m.Add(msg)
			tmpl := m.Template(id)
			if id == 0 || id > m.lastID {
				t.Fatalf("Add(%q) = %d, the last ID given being %d", msg, id, m.lastID)
			}
			if isNew && id != lastID+1 || !isNew && id > lastID {
				t.Fatalf("Add(%q) = %d, %v after ID %d", msg, id, isNew, lastID)
			}
			lastID = m.lastID
			if m.Len() > m.cfg.MaxClusters {
				t.Fatalf("Len() = %d over MaxClusters %d", m.Len(), m.cfg.MaxClusters)
			}
			if (tmpl == "") != (len(strings.Fields(msg)) == 0) {
				t.Fatalf("Add(%q): template %q", msg, tmpl)
			}
			if utf8.ValidString(msg) && !utf8.ValidString(tmpl) {
				t.Fatalf("Add(%q): template %q is not valid UTF-8", msg, tmpl)
			}
			if len(tmpl) > m.cfg.MaxTemplateBytes {
				t.Fatalf("Add(%q): template %q over %d bytes", msg, tmpl, m.cfg.MaxTemplateBytes)
			}
			if !tight {
				checkTemplateFits(t, m.cfg.MaxTokens, msg, tmpl)
			}
			checkInvariants(t, m)
		}
	})
}

// checkTemplateFits checks that the template of msg has its token count,
// and at each position the masked token or <*>.
func checkTemplateFits(t *testing.T, maxTokens int, msg, tmpl string) {
	t.Helper()
	want := strings.Fields(Mask(msg[:fieldsEnd(msg, maxTokens)]))
	got := strings.Fields(tmpl)
	if len(got) != len(want) {
		t.Fatalf("template %q has %d tokens, the message %q %d", tmpl, len(got), msg, len(want))
	}
	for i := range got {
		if got[i] != wild && got[i] != want[i] {
			t.Fatalf("template %q token %d is %q, the message's %q", tmpl, i, got[i], want[i])
		}
	}
}

// FuzzMask checks that masking never panics, keeps valid UTF-8 valid,
// never joins or splits tokens, and that masking twice changes nothing:
//
//	go test ./internal/logtemplates -run '^$' -fuzz FuzzMask -fuzztime 60s
func FuzzMask(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Mask(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Mask(%q) = %q is not valid UTF-8", s, got)
		}
		if n, want := len(strings.Fields(got)), len(strings.Fields(s)); n != want {
			t.Fatalf("Mask(%q) = %q has %d tokens, want %d", s, got, n, want)
		}
		if again := Mask(got); again != got {
			t.Fatalf("Mask(%q) = %q, masked again %q", s, got, again)
		}
	})
}

// FuzzLocation checks that Location never panics, that what it finds is
// in the message, and that masking keeps it:
//
//	go test ./internal/logtemplates -run '^$' -fuzz FuzzLocation -fuzztime 60s
func FuzzLocation(f *testing.F) {
	for _, s := range append(fuzzSeeds, "t.s.TravelServiceImpl#451 TraceID: x", "02:47:31.5 1 controller.go:114] x", "(train.py:88): y", "[a.go:1") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, ok := Location(s)
		if ok != (loc != "") || !strings.Contains(s, loc) {
			t.Fatalf("Location(%q) = %q, %v", s, loc, ok)
		}
		if ok && !strings.Contains(Mask(s), loc) {
			t.Fatalf("Mask(%q) = %q lost the location %q", s, Mask(s), loc)
		}
	})
}
