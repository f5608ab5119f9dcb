package logsignals

import (
	"regexp"
	"strconv"
	"strings"
)

// The patterns. testdata/lines.txt has an example line of each and the
// near-misses they must not match. Every test is case-sensitive unless
// the expression says (?i): the messages come from code, not people.
// Cheap substring gates run first, so that a line that mentions none of
// NCCL, CUDA, memory, OOM, Xid, the bus or HTTP costs a few scans.
var (
	// reNCCLTimeoutPhrase is the generic "NCCL timeout" / "NCCL timed
	// out"; group 1 catches a setting ("NCCL timeout: 1800", "NCCL timeout
	// set to 30"), which is not an event.
	reNCCLTimeoutPhrase = regexp.MustCompile(`(?i)\bNCCL (?:timeout|timed out)\b((?:[ \t]*(?:[:=]|is|set to|to|of))?[ \t]*\d)?`)
	// reTimeoutWord is a timeout word in a ProcessGroupNCCL line.
	reTimeoutWord = regexp.MustCompile(`\b(?:Timeout|timeout|timed out)\b`)
	// reNCCLErrName is one of NCCL's ncclResult_t names.
	reNCCLErrName = regexp.MustCompile(`\bnccl(?:System|Internal|UnhandledCuda|Remote|InvalidUsage|InvalidArgument)Error\b`)
	// reCUDAErrName is a CUDA runtime error name (cudaErrorIllegalAddress)
	// or a driver API one (CUDA_ERROR_ILLEGAL_ADDRESS).
	reCUDAErrName = regexp.MustCompile(`\b(?:cudaError[A-Z][A-Za-z]*|CUDA_ERROR_[A-Z_]+)\b`)
	// reKilledProcess is the kernel OOM killer's kill line, one per
	// victim: "Out of memory: Killed process 4242 (python)", "Memory
	// cgroup out of memory: Killed process …", and older kernels'
	// "Killed process 4242 (python) total-vm:…".
	reKilledProcess = regexp.MustCompile(`\bKilled process \d+ \(`)
	// reOOMKill is "oom-kill"; group 1 catches the kernel's
	// "oom-kill:constraint=…" line, which accompanies a Killed process
	// line and is not counted again.
	reOOMKill = regexp.MustCompile(`\boom-kill\b(:constraint)?`)
	// reXID is the NVIDIA driver's XID line: "NVRM: Xid (PCI:0000:3b:00):
	// 79, …"; older drivers leave out "PCI:".
	reXID = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?)\): (\d{1,4})\b`)
)

// MatchText finds the events of one line (or one multi-line message) of
// log text.
func MatchText(s string) Match {
	var m Match
	matchNCCL(s, &m)
	matchCUDA(s, &m)
	matchOOM(s, &m)
	matchGPU(s, &m)
	matchAccessLog(s, &m)
	m.normalise()
	return m
}

func matchNCCL(s string, m *Match) {
	if !strings.Contains(s, "NCCL") && !strings.Contains(s, "nccl") && !strings.Contains(s, "unhandled system error") {
		return
	}
	if ncclTimeout(s) {
		m.Events.Add(EventNCCLTimeout)
		return
	}
	if ncclError(s) {
		m.Events.Add(EventNCCLError)
	}
}

// ncclTimeout reports a collective that timed out or a hung watchdog.
func ncclTimeout(s string) bool {
	switch {
	case strings.Contains(s, "Watchdog caught collective operation timeout"),
		strings.Contains(s, "Timeout at NCCL work"),
		strings.Contains(s, "watchdog got stuck"),
		strings.Contains(s, "Heartbeat monitor timed out"):
		return true
	}
	if i := strings.Index(s, "ProcessGroupNCCL"); i >= 0 {
		rest := s[i:]
		// Follow-up lines of an error or a timeout, and the settings
		// printed at start-up, say "timeout" without being one.
		followUp := strings.Contains(rest, "failed or timed out") ||
			strings.Contains(rest, "either an error or timeout") ||
			strings.Contains(rest, "initialization options")
		if !followUp && reTimeoutWord.MatchString(strings.ReplaceAll(rest, "Timeout(ms)", "")) {
			return true
		}
	}
	if !strings.Contains(s, "imeout") && !strings.Contains(s, "IMEOUT") && !strings.Contains(s, "imed out") && !strings.Contains(s, "IMED OUT") {
		return false
	}
	sm := reNCCLTimeoutPhrase.FindStringSubmatchIndex(s)
	return sm != nil && sm[2] < 0
}

// ncclError reports an NCCL failure.
func ncclError(s string) bool {
	return strings.Contains(s, "NCCL WARN") ||
		strings.Contains(s, "unhandled system error") ||
		strings.Contains(s, "NCCL communicator was aborted") ||
		strings.Contains(s, "remote process exited or there was a network error") ||
		containsWord(s, "NCCL error") ||
		strings.Contains(s, "nccl") && strings.Contains(s, "Error") && reNCCLErrName.MatchString(s)
}

func matchCUDA(s string, m *Match) {
	if !strings.Contains(s, "CUDA") && !strings.Contains(s, "cuda") &&
		!strings.Contains(s, "device-side assert") && !strings.Contains(s, "illegal memory access") &&
		!strings.Contains(s, "_STATUS_") && !strings.Contains(s, "OOM when allocating") {
		return
	}
	switch {
	case strings.Contains(s, "CUDA out of memory"),
		strings.Contains(s, "CUDA error: out of memory"),
		strings.Contains(s, "cudaErrorMemoryAllocation"),
		strings.Contains(s, "CUDA_ERROR_OUT_OF_MEMORY"),
		strings.Contains(s, "CUBLAS_STATUS_ALLOC_FAILED"),
		strings.Contains(s, "OOM when allocating") && strings.Contains(s, "GPU"):
		m.Events.Add(EventCUDAOOM)
	case strings.Contains(s, "CUDA error:"),
		strings.Contains(s, "device-side assert triggered"),
		strings.Contains(s, "illegal memory access was encountered"),
		strings.Contains(s, "unspecified launch failure"),
		strings.Contains(s, "CUDA driver error"),
		strings.Contains(s, "CUBLAS_STATUS_EXECUTION_FAILED"),
		strings.Contains(s, "CUBLAS_STATUS_INTERNAL_ERROR"),
		strings.Contains(s, "CUDNN_STATUS_EXECUTION_FAILED"),
		strings.Contains(s, "CUDNN_STATUS_INTERNAL_ERROR"),
		(strings.Contains(s, "cudaError") || strings.Contains(s, "CUDA_ERROR_")) && reCUDAErrName.MatchString(s):
		m.Events.Add(EventCUDAError)
	}
}

func matchOOM(s string, m *Match) {
	if !strings.Contains(s, "Killed process") && !strings.Contains(s, "OOM") && !strings.Contains(s, "oom-kill") {
		return
	}
	if reKilledProcess.MatchString(s) ||
		strings.Contains(s, "OOMKilled") ||
		strings.Contains(s, "System OOM encountered, victim process") {
		m.Events.Add(EventOOMKilled)
		if strings.Contains(s, "System OOM encountered") && !strings.Contains(s, "CONSTRAINT_MEMCG") ||
			strings.Contains(s, "Out of memory: Killed process") && !strings.Contains(s, "Memory cgroup") {
			m.Events.Add(EventSystemOOM)
		}
		return
	}
	if sm := reOOMKill.FindStringSubmatchIndex(s); sm != nil && sm[2] < 0 {
		m.Events.Add(EventOOMKilled)
	}
}

func matchGPU(s string, m *Match) {
	if strings.Contains(s, "NVRM: Xid (") {
		if sm := reXID.FindStringSubmatch(s); sm != nil {
			code, err := strconv.Atoi(sm[2])
			if err == nil && code > 0 {
				m.Events.Add(EventXID)
				m.XID, m.PCI = code, strings.ToLower(sm[1])
				if code == 79 {
					m.Events.Add(EventGPUFellOffBus)
				}
			}
		}
	}
	if strings.Contains(s, "fallen off the bus") {
		m.Events.Add(EventGPUFellOffBus)
	}
}

// matchAccessLog finds a quoted HTTP request line and the status after
// it, as the common and combined log formats, nginx, Envoy, uvicorn
// (vLLM, SGLang) and gunicorn write them:
// "METHOD target HTTP/1.1" 503.
func matchAccessLog(s string, m *Match) {
	for off := 0; ; {
		i := strings.Index(s[off:], "HTTP/")
		if i < 0 {
			return
		}
		i += off
		off = i + 5
		if code, ok := statusAfterRequestLine(s, i); ok {
			if code >= 500 {
				m.Events.Add(EventHTTP5xx)
			}
			return
		}
	}
}

// statusAfterRequestLine checks that the "HTTP/" at i ends a quoted
// request line and returns the status after it.
func statusAfterRequestLine(s string, i int) (int, bool) {
	j := i + 5
	for n := 0; n < 3 && j < len(s) && (isDigit(s[j]) || s[j] == '.'); n++ {
		j++
	}
	if j == i+5 || j+5 > len(s) || s[j] != '"' || s[j+1] != ' ' {
		return 0, false
	}
	code := s[j+2 : j+5]
	if !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) || code[0] < '1' || code[0] > '5' ||
		j+5 < len(s) && isWordChar(s[j+5]) {
		return 0, false
	}
	// The opening quote, then a method in capitals and a space.
	q := strings.LastIndexByte(s[:i], '"')
	if q < 0 {
		return 0, false
	}
	k := q + 1
	for k < i && 'A' <= s[k] && s[k] <= 'Z' {
		k++
	}
	if n := k - q - 1; n < 3 || n > 10 || s[k] != ' ' {
		return 0, false
	}
	return int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0'), true
}

// containsWord reports whether w occurs in s between word boundaries.
func containsWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(w)
		if (i == 0 || !isWordChar(s[i-1])) && (end == len(s) || !isWordChar(s[end])) {
			return true
		}
		off = i + 1
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordChar(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// mayMatch reports whether s holds any text a pattern needs, or a status
// field with a 5xx value: when it does not, nothing in it (a JSON
// object's fields included) can match. JSON that escapes plain letters
// (\u0041) is not seen through.
func mayMatch(s string) bool {
	for _, k := range gateWords {
		if strings.Contains(s, k) {
			return true
		}
	}
	return maybeStatus5xx(s)
}

// gateWords are the substrings the matchers' gates look for.
var gateWords = []string{
	"NCCL", "nccl", "unhandled system error",
	"CUDA", "cuda", "device-side assert", "illegal memory access", "_STATUS_", "OOM when allocating",
	"Killed process", "OOM", "oom-kill",
	"Xid", "off the bus",
	"HTTP/",
}

// maybeStatus5xx reports a JSON key that ends in "status", "status_code",
// "statusCode" or "response_code" followed by a value that starts with 5
// and two digits.
func maybeStatus5xx(s string) bool {
	for _, key := range []string{"status", "response_code"} {
		for off := 0; ; {
			i := strings.Index(s[off:], key)
			if i < 0 {
				break
			}
			off += i + len(key)
			j := off
			for j < len(s) && (s[j] == '_' || 'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z') {
				j++
			}
			if j >= len(s) || s[j] != '"' {
				continue
			}
			j = skipSpace(s, j+1)
			if j >= len(s) || s[j] != ':' {
				continue
			}
			j = skipSpace(s, j+1)
			if j < len(s) && s[j] == '"' {
				j++
			}
			if j+3 <= len(s) && s[j] == '5' && isDigit(s[j+1]) && isDigit(s[j+2]) {
				return true
			}
		}
	}
	return false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
