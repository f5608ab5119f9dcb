package logsignals

import "strings"

// Event is a kind of log event that becomes a counter.
type Event uint8

// The events, in the order of their bits in Events.
const (
	// EventNCCLTimeout is a collective that timed out or a hung NCCL
	// watchdog (PyTorch's ProcessGroupNCCL).
	EventNCCLTimeout Event = iota
	// EventNCCLError is an NCCL failure other than a timeout: NCCL's own
	// WARN lines, "NCCL error", NCCL's error names and strings.
	EventNCCLError
	// EventCUDAError is a CUDA runtime or driver error other than running
	// out of memory: "CUDA error: …", cudaError*, device-side asserts,
	// illegal memory accesses.
	EventCUDAError
	// EventCUDAOOM is CUDA running out of device memory.
	EventCUDAOOM
	// EventOOMKilled is a process or container killed for want of host
	// memory: the kernel's OOM killer, Kubernetes' OOMKilled.
	EventOOMKilled
	// EventXID is an NVIDIA driver XID line ("NVRM: Xid (PCI:…): 79, …").
	EventXID
	// EventHTTP5xx is an HTTP response with a 5xx status in an access log
	// or in a log record's attributes.
	EventHTTP5xx
	// EventGPUFellOffBus is a GPU that has fallen off the bus (also XID 79).
	EventGPUFellOffBus
	// EventSystemOOM is the kernel's OOM killer acting for the whole host
	// ("Out of memory: Killed process", kubelet's "System OOM
	// encountered"), not for one container's memory limit ("Memory cgroup
	// out of memory"): memory pressure on the node. Also oom_killed.
	EventSystemOOM

	numEvents
)

var eventNames = [numEvents]string{
	"nccl_timeout", "nccl_error", "cuda_error", "cuda_oom", "oom_killed", "xid", "http_5xx", "gpu_fell_off_bus", "system_oom",
}

// String returns the event's name as in the event label.
func (e Event) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return "unknown"
}

// AllEvents returns every event, in label order.
func AllEvents() []Event {
	out := make([]Event, numEvents)
	for i := range out {
		out[i] = Event(i)
	}
	return out
}

// Events is a set of events.
type Events uint16

// Has reports whether e is in the set.
func (s Events) Has(e Event) bool { return s&(1<<e) != 0 }

// Add puts e in the set.
func (s *Events) Add(e Event) { *s |= 1 << e }

// Del takes e out of the set.
func (s *Events) Del(e Event) { *s &^= 1 << e }

// Empty reports whether the set has no event.
func (s Events) Empty() bool { return s == 0 }

// String lists the events' names, comma-separated, in label order.
func (s Events) String() string {
	var b strings.Builder
	for e := range numEvents {
		if s.Has(e) {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(e.String())
		}
	}
	return b.String()
}

// Match is what one log line or record says.
type Match struct {
	// Events are the events found; a record counts once per event.
	Events Events
	// XID is the XID code when Events has EventXID.
	XID int
	// PCI is the GPU's PCI address of the XID line, lower-case as the
	// driver writes it ("0000:3b:00"), when Events has EventXID.
	PCI string
}

// merge adds o's events (and XID) to m.
func (m *Match) merge(o Match) {
	if o.Events.Has(EventXID) && !m.Events.Has(EventXID) {
		m.XID, m.PCI = o.XID, o.PCI
	}
	m.Events |= o.Events
	m.normalise()
}

// normalise drops the events that a more specific one in the set
// replaces: a CUDA OOM is not also a CUDA error, an NCCL timeout not also
// an NCCL error.
func (m *Match) normalise() {
	if m.Events.Has(EventCUDAOOM) {
		m.Events.Del(EventCUDAError)
	}
	if m.Events.Has(EventNCCLTimeout) {
		m.Events.Del(EventNCCLError)
	}
}
