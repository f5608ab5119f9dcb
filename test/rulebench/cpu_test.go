package rulebench

import (
	"cmp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sampleEvery is how often cpuSampler reads a server's CPU time: finer
// than the kernel's 10 ms accounting, so that a window's CPU is known to
// about a tick at each end.
const sampleEvery = 5 * time.Millisecond

// cpuSampler records a process's CPU time against the wall clock, so that
// the CPU a server spent during its rule evaluations can be told apart
// from what it spent on other work in the same cycle (Vigil's diagnosis):
// on a shared machine, wall times also measure the neighbours.
type cpuSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu  sync.Mutex
	at  []time.Time
	cpu []time.Duration
}

func startCPUSampler(pid int) *cpuSampler {
	s := &cpuSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			if c, err := procCPU(pid); err == nil {
				s.mu.Lock()
				s.at, s.cpu = append(s.at, time.Now()), append(s.cpu, c)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling.
func (s *cpuSampler) Stop() {
	close(s.stop)
	<-s.done
}

// at returns the CPU time at t, interpolated between the samples around
// it (ok is false outside the samples).
func (s *cpuSampler) cpuAt(t time.Time) (time.Duration, bool) {
	i, _ := slices.BinarySearchFunc(s.at, t, func(a, b time.Time) int { return a.Compare(b) })
	if i == 0 || i >= len(s.at) {
		return 0, false
	}
	a, b := s.at[i-1], s.at[i]
	f := float64(t.Sub(a)) / float64(b.Sub(a))
	return s.cpu[i-1] + time.Duration(f*float64(s.cpu[i]-s.cpu[i-1])), true
}

// during returns the CPU time spent in the union of windows; ok is false
// when a window is not covered by samples.
func (s *cpuSampler) during(windows []window) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var total time.Duration
	for _, w := range union(windows) {
		from, ok1 := s.cpuAt(w.from)
		to, ok2 := s.cpuAt(w.to)
		if !ok1 || !ok2 {
			return 0, false
		}
		total += to - from
	}
	return total, true
}

// window is a span of wall time.
type window struct{ from, to time.Time }

// union merges overlapping windows (Prometheus evaluates its groups in
// parallel; their windows may overlap).
func union(ws []window) []window {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b window) int { return cmp.Compare(a.from.UnixNano(), b.from.UnixNano()) })
	var out []window
	for _, w := range ws {
		if n := len(out); n > 0 && !w.from.After(out[n-1].to) {
			if w.to.After(out[n-1].to) {
				out[n-1].to = w.to
			}
			continue
		}
		out = append(out, w)
	}
	return out
}

// ruleWindows are the spans of wall time in which the rules of each group
// evaluated for the last time in now: from the start of its first rule to
// the end of its last.
func ruleWindows(now map[string]ruleEval) []window {
	byGroup := map[string]window{}
	for _, r := range now {
		end := r.last.Add(r.duration)
		w, ok := byGroup[r.group]
		if !ok {
			byGroup[r.group] = window{r.last, end}
			continue
		}
		if r.last.Before(w.from) {
			w.from = r.last
		}
		if end.After(w.to) {
			w.to = end
		}
		byGroup[r.group] = w
	}
	out := make([]window, 0, len(byGroup))
	for _, w := range byGroup {
		out = append(out, w)
	}
	return out
}

// TestCPUWindows checks the attribution of CPU time to windows: windows
// merge where they overlap, and the CPU of a window is interpolated
// between the samples around its ends.
func TestCPUWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 12, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	f := func(in []window, want []window) {
		t.Helper()
		require.Equal(t, want, union(in))
	}
	f(nil, nil)
	f([]window{{at(0), at(10)}}, []window{{at(0), at(10)}})
	f([]window{{at(20), at(30)}, {at(0), at(10)}}, []window{{at(0), at(10)}, {at(20), at(30)}})
	f([]window{{at(0), at(10)}, {at(5), at(8)}, {at(8), at(20)}, {at(25), at(30)}}, []window{{at(0), at(20)}, {at(25), at(30)}})

	// 10 ms of CPU per 10 ms of wall time from 100 ms on, none before.
	s := &cpuSampler{}
	for ms := 0; ms <= 200; ms += 10 {
		s.at = append(s.at, at(ms))
		s.cpu = append(s.cpu, time.Duration(max(0, ms-100))*time.Millisecond)
	}
	got, ok := s.during([]window{{at(50), at(150)}, {at(140), at(155)}, {at(190), at(195)}})
	require.True(t, ok)
	require.Equal(t, 60*time.Millisecond, got)
	_, ok = s.during([]window{{at(150), at(250)}})
	require.False(t, ok, "a window past the samples")
}
