package peertest

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The benchmarks that run a server as its own process on a shared
// machine measure its CPU time: it tells the server's cost apart from the
// machine's other load, which moves wall-clock figures more than most
// changes do.

// clockTicks is USER_HZ, the unit of the CPU times in /proc (100 on Linux).
const clockTicks = 100

// CPUMeter measures the CPU a server, this process and everything else on
// the machine used over an interval.
type CPUMeter struct {
	pid                string
	server, self, busy time.Duration
	start              time.Time
}

// CPUUse is what a CPUMeter measured: the server's and this process's
// CPU time, the interval, and the share of the machine's CPU capacity that
// other processes took.
type CPUUse struct {
	Server, Client, Wall time.Duration
	Foreign              float64
}

// Cores is the server's CPU time per second of the interval.
func (u CPUUse) Cores() float64 { return u.Server.Seconds() / u.Wall.Seconds() }

// StartCPU starts measuring the process pid.
func StartCPU(pid int) (*CPUMeter, error) {
	m := &CPUMeter{pid: strconv.Itoa(pid), start: time.Now()}
	var err error
	if m.server, err = procCPU(m.pid); err != nil {
		return nil, err
	}
	if m.self, err = procCPU("self"); err != nil {
		return nil, err
	}
	if m.busy, err = machineBusy(); err != nil {
		return nil, err
	}
	return m, nil
}

// Stop returns what was used since StartCPU.
func (m *CPUMeter) Stop() (CPUUse, error) {
	wall := time.Since(m.start)
	server, err := procCPU(m.pid)
	if err != nil {
		return CPUUse{}, err
	}
	self, err := procCPU("self")
	if err != nil {
		return CPUUse{}, err
	}
	busy, err := machineBusy()
	if err != nil {
		return CPUUse{}, err
	}
	u := CPUUse{Server: server - m.server, Client: self - m.self, Wall: wall}
	other := busy - m.busy - u.Server - u.Client
	u.Foreign = max(0, float64(other)/(float64(wall)*float64(runtime.NumCPU())))
	return u, nil
}

// procCPU returns the CPU time (user and system) that process pid
// ("self" for this one) has used so far.
func procCPU(pid string) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ")".
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%s/stat", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/%s/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// machineBusy returns the CPU time all CPUs have spent busy (not idle and
// not waiting for I/O) since boot.
func machineBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var busy int64
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/stat: %w", err)
		}
		if i != 3 && i != 4 && i < 8 { // skip idle and iowait; guest time is in user already
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}
