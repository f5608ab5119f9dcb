package admission

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func status(r *Refusal) int {
	if r == nil {
		return 0
	}
	return r.Status
}

func TestBudgetFairShare(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := NewBudget(1000, reg)
	now := time.Unix(0, 0)
	b.now = func() time.Time { return now }

	// Alone, a client may hold half: the other half is a newcomer's.
	var held []*Ticket
	for range 5 {
		tk, r := b.Acquire("abuser", "remote_write", 100)
		if r != nil {
			t.Fatalf("abuser's request within its share refused: %v", r)
		}
		held = append(held, tk)
	}
	if _, r := b.Acquire("abuser", "remote_write", 100); status(r) != http.StatusTooManyRequests {
		t.Fatalf("abuser over half the budget: got %v, want 429", r)
	}
	// A newcomer finds room at once.
	v, r := b.Acquire("victim", "remote_write", 300)
	if r != nil {
		t.Fatalf("victim refused while the abuser holds its share: %v", r)
	}
	// With two clients active each may hold a third: the abuser, at 500,
	// gets nothing more until it drops below.
	held[0].Release()
	held[1].Release()
	if _, r := b.Acquire("abuser", "otlp", 100); status(r) != http.StatusTooManyRequests {
		t.Fatalf("abuser at 300 of a 333 share asking 100: got %v, want 429", r)
	}
	// The budget as a whole: 300 + 300 held; 450 does not fit.
	if _, r := b.Acquire("third", "push", 450); status(r) != http.StatusServiceUnavailable {
		t.Fatalf("request over what is left: got %v, want 503", r)
	}
	if _, r := b.Acquire("third", "push", 1001); status(r) != http.StatusRequestEntityTooLarge {
		t.Fatalf("request over the whole budget: got %v, want 413", r)
	}
	v.Release()
	v.Release() // twice is harmless
	if got := testutil.ToFloat64(b.inflight); got != 300 {
		t.Fatalf("in flight after releases: %v, want 300", got)
	}
	if got := testutil.ToFloat64(b.refused.WithLabelValues("remote_write", ReasonFairShare)); got != 1 {
		t.Fatalf("fair-share refusals of remote_write: %v, want 1", got)
	}

	// Quiet clients are forgotten: the abuser alone gets half again.
	for _, tk := range held[2:] {
		tk.Release()
	}
	now = now.Add(activeFor + 2*time.Second)
	var again []*Ticket
	for range 5 {
		tk, r := b.Acquire("abuser", "remote_write", 100)
		if r != nil {
			t.Fatalf("abuser alone again, within half: %v", r)
		}
		again = append(again, tk)
	}
	if len(b.clients) != 1 {
		t.Fatalf("clients remembered after %s quiet: %d, want 1", activeFor, len(b.clients))
	}
	for _, tk := range again {
		tk.Release()
	}
}

// A request larger than a share goes through when its client holds
// nothing else, and grows in steps (body, then decoded size).
func TestBudgetLoneRequestAndGrow(t *testing.T) {
	b := NewBudget(1000, nil)
	tk, r := b.Acquire("a", "otlp", 200)
	if r != nil {
		t.Fatal(r)
	}
	if r := tk.Grow(700); r != nil {
		t.Fatalf("a lone request of 900 of 1000: %v", r)
	}
	if r := tk.Grow(200); status(r) != http.StatusRequestEntityTooLarge {
		t.Fatalf("growing over the whole budget: got %v, want 413", r)
	}
	if b.used != 900 {
		t.Fatalf("a refused Grow changed what is held: %d, want 900", b.used)
	}
	tk.Release()
	if b.used != 0 || b.clients["a"].held != 0 {
		t.Fatalf("after release: used %d held %d", b.used, b.clients["a"].held)
	}
	// A nil budget admits everything.
	var nb *Budget
	nt, r := nb.Acquire("a", "otlp", 1<<40)
	if r != nil || nt.Grow(1<<40) != nil {
		t.Fatal("a nil budget refused")
	}
	nt.Release()
}

func TestRefusalWrite(t *testing.T) {
	for _, tc := range []struct {
		r     Refusal
		retry string
	}{
		{Refusal{Status: 503, Msg: "full"}, "1"},
		{Refusal{Status: 429, Msg: "share"}, "1"},
		{Refusal{Status: 413, Msg: "big"}, ""},
	} {
		w := httptest.NewRecorder()
		tc.r.Write(w)
		if w.Code != tc.r.Status || w.Header().Get("Retry-After") != tc.retry {
			t.Errorf("%d: got %d Retry-After %q", tc.r.Status, w.Code, w.Header().Get("Retry-After"))
		}
	}
}

func TestClientOf(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.RemoteAddr = "127.0.0.2:51234"
	if got := ClientOf(r); got != "127.0.0.2" {
		t.Fatalf("ClientOf: %q", got)
	}
	r.RemoteAddr = "[::1]:80"
	if got := ClientOf(r); got != "::1" {
		t.Fatalf("ClientOf v6: %q", got)
	}
}

func counterValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }
