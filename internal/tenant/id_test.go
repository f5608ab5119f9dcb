package tenant

import (
	"net/http"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	good := []string{"a", "team-a", "A_b.c", "x!*'()", strings.Repeat("a", MaxIDLength), "...", ".a"}
	for _, id := range good {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	bad := []string{"", ".", "..", "a/b", "../x", `a\b`, "a b", "a|b", "a\x00", "ü", "a:b", "a\n", strings.Repeat("a", MaxIDLength+1)}
	for _, id := range bad {
		err := ValidateID(id)
		if err == nil {
			t.Errorf("ValidateID(%q) = nil, want an error", id)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ValidateID(%q): the error is not one line: %q", id, err)
		}
	}
}

func TestParseIDs(t *testing.T) {
	ids, err := ParseIDs("b|a")
	if err != nil || JoinIDs(ids) != "a|b" {
		t.Fatalf("ParseIDs(b|a) = %v, %v", ids, err)
	}
	for _, v := range []string{"", "a|a", "a||b", "|a", "a|..", "a|b/c"} {
		if _, err := ParseIDs(v); err == nil {
			t.Errorf("ParseIDs(%q) = nil error", v)
		}
	}
}

func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"a", "a|b", "a|a", "..", "a/b", strings.Repeat("x", 151), "(a)|*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ids, err := ParseIDs(v)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of %q is not one line: %q", v, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || id == "." || id == ".." || len(id) > MaxIDLength || strings.ContainsAny(id, "/\\|\x00") {
				t.Fatalf("ParseIDs(%q) accepted %q", v, id)
			}
			if seen[id] {
				t.Fatalf("ParseIDs(%q) repeated %q", v, id)
			}
			seen[id] = true
		}
		again, err := ParseIDs(JoinIDs(ids))
		if err != nil || JoinIDs(again) != JoinIDs(ids) {
			t.Fatalf("round trip of %q: %v, %v", v, again, err)
		}
		// The matcher of any accepted set matches each ID and nothing else
		// of the set's own spelling.
		m := Matcher(Principal{IDs: ids})
		for _, id := range ids {
			if !m.Matches(id) {
				t.Fatalf("matcher %s does not match %q", m, id)
			}
		}
		if m.Matches(JoinIDs(ids) + "x") {
			t.Fatalf("matcher %s matches %q", m, JoinIDs(ids)+"x")
		}
	})
}

func TestResolve(t *testing.T) {
	open := NewResolver(Config{Enabled: true})
	fed := NewResolver(Config{Enabled: true, Federation: true})
	auth := NewResolver(Config{Enabled: true, Identities: map[string]Identity{
		"alice": {Tenants: []string{"a"}},
		"multi": {Tenants: []string{"b", "a"}},
		"ops":   {Role: "platform"},
		"root":  {Role: "admin"},
	}})
	cases := []struct {
		r        *Resolver
		who, hdr string
		need     Need
		status   int
		ids      string
	}{
		{open, "", "", NeedRead, http.StatusUnauthorized, ""},
		{open, "", "a", NeedRead, 0, "a"},
		{open, "", "a", NeedWrite, 0, "a"},
		{open, "", "../a", NeedRead, http.StatusBadRequest, ""},
		{open, "", "a|a", NeedRead, http.StatusBadRequest, ""},
		{open, "", "a|b", NeedRead, http.StatusBadRequest, ""},
		{fed, "", "a|b", NeedRead, 0, "a|b"},
		{fed, "", "a|b", NeedWrite, http.StatusBadRequest, ""},
		{open, "", "a", NeedPlatform, http.StatusForbidden, ""},
		{open, "", "", NeedNone, 0, ""},
		{auth, "alice", "", NeedRead, 0, "a"},
		{auth, "alice", "a", NeedWrite, 0, "a"},
		{auth, "alice", "b", NeedRead, http.StatusForbidden, ""},
		{auth, "alice", "a|b", NeedRead, http.StatusForbidden, ""},
		{auth, "multi", "", NeedRead, 0, "a|b"},
		{auth, "multi", "", NeedWrite, 0, "b"},
		{auth, "multi", "a|b", NeedRead, 0, "a|b"},
		{auth, "mallory", "a", NeedRead, http.StatusForbidden, ""},
		{auth, "", "", NeedRead, http.StatusUnauthorized, ""},
		{auth, "ops", "a|b", NeedRead, 0, "a|b"},
		{auth, "ops", "a", NeedWrite, http.StatusForbidden, ""},
		{auth, "ops", "", NeedPlatform, 0, ""},
		{auth, "ops", "", NeedAdmin, http.StatusForbidden, ""},
		{auth, "root", "b", NeedWrite, 0, "b"},
		{auth, "root", "", NeedAdmin, 0, ""},
		{auth, "alice", "", NeedPlatform, http.StatusForbidden, ""},
	}
	for _, c := range cases {
		p, err := c.r.Resolve(c.who, c.hdr, c.need)
		switch {
		case c.status != 0 && (err == nil || err.Status != c.status):
			t.Errorf("Resolve(%q, %q, %d) = %v, %v; want status %d", c.who, c.hdr, c.need, p, err, c.status)
		case c.status == 0 && err != nil:
			t.Errorf("Resolve(%q, %q, %d): %v", c.who, c.hdr, c.need, err)
		case c.status == 0 && JoinIDs(p.IDs) != c.ids:
			t.Errorf("Resolve(%q, %q, %d) acts on %q, want %q", c.who, c.hdr, c.need, JoinIDs(p.IDs), c.ids)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Enabled = true
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, edit := range []func(*Config){
		func(c *Config) { c.Identities = map[string]Identity{"x": {Tenants: []string{"../a"}}} },
		func(c *Config) { c.Identities = map[string]Identity{"x": {Tenants: []string{"a"}, Role: "root"}} },
		func(c *Config) { c.Identities = map[string]Identity{"x": {}} },
		func(c *Config) { c.DefaultScrapeTenant = "a/b" },
		func(c *Config) { c.ScrapeTenants = map[string]string{"job": ".."} },
		func(c *Config) { c.InternalTenant = "" },
		func(c *Config) { c.LimitsReloadPeriod = 0 },
		func(c *Config) { c.Limits.IngestionRate = -1 },
	} {
		c := ok
		edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", c)
		}
	}
}

func TestResolveReadOrPlatform(t *testing.T) {
	r := NewResolver(Config{Enabled: true, Identities: map[string]Identity{"alice": {Tenants: []string{"a"}}, "ops": {Role: "platform"}}})
	p, err := r.Resolve("alice", "", NeedReadOrPlatform)
	if err != nil || JoinIDs(p.IDs) != "a" {
		t.Errorf("alice: %v, %v", p, err)
	}
	p, err = r.Resolve("ops", "", NeedReadOrPlatform)
	if err != nil || len(p.IDs) != 0 || p.Role != RolePlatform {
		t.Errorf("ops with no header: %v, %v", p, err)
	}
	p, err = r.Resolve("ops", "b", NeedReadOrPlatform)
	if err != nil || JoinIDs(p.IDs) != "b" {
		t.Errorf("ops as b: %v, %v", p, err)
	}
	if _, err := r.Resolve("", "", NeedReadOrPlatform); err == nil || err.Status != http.StatusUnauthorized {
		t.Errorf("nobody: %v", err)
	}
	if _, err := r.Resolve("alice", "b", NeedReadOrPlatform); err == nil || err.Status != http.StatusForbidden {
		t.Errorf("alice as b: %v", err)
	}
}
