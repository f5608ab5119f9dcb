package limits

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// static is a Source of fixed limits that a test may change.
type static struct {
	mu       sync.Mutex
	defaults Limits
	tenants  map[string]Limits
}

func (s *static) For(tenant string) Limits {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.tenants[tenant]; ok {
		return l
	}
	return s.defaults
}

func (s *static) set(tenant string, l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tenants == nil {
		s.tenants = map[string]Limits{}
	}
	s.tenants[tenant] = l
}

// newTestEnforcer returns an Enforcer of src on a test clock.
func newTestEnforcer(src Source) (*Enforcer, *clock) {
	c := newClock()
	return NewEnforcer(src, EnforcerOptions{Now: c.Now}, nil), c
}
