package tenancybench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The CPU meter below mirrors test/ingestbench's: the server's CPU time
// tells its cost apart from the machine's other load, which on a shared
// machine moves wall-clock figures more than tenancy does.

// clockTicks is USER_HZ, the unit of the CPU times in /proc (100 on Linux).
const clockTicks = 100

// cpuMeter measures the CPU a server, this process and everything else on
// the machine used over an interval.
type cpuMeter struct {
	pid                string
	server, self, busy time.Duration
	start              time.Time
}

// cpuUse is what a cpuMeter measured: the server's and this process's CPU
// time, the interval, and the share of the machine's CPU capacity that
// other processes took.
type cpuUse struct {
	server, client, wall time.Duration
	foreign              float64
}

// cores is the server's CPU time per second of the interval.
func (u cpuUse) cores() float64 { return u.server.Seconds() / u.wall.Seconds() }

func startCPU(pid int) (*cpuMeter, error) {
	m := &cpuMeter{pid: strconv.Itoa(pid), start: time.Now()}
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

func (m *cpuMeter) stop() (cpuUse, error) {
	wall := time.Since(m.start)
	server, err := procCPU(m.pid)
	if err != nil {
		return cpuUse{}, err
	}
	self, err := procCPU("self")
	if err != nil {
		return cpuUse{}, err
	}
	busy, err := machineBusy()
	if err != nil {
		return cpuUse{}, err
	}
	u := cpuUse{server: server - m.server, client: self - m.self, wall: wall}
	other := busy - m.busy - u.server - u.client
	u.foreign = max(0, float64(other)/(float64(wall)*float64(runtime.NumCPU())))
	return u, nil
}

// procCPU returns the CPU time (user and system) that process pid
// ("self" for this one) has used so far.
func procCPU(pid string) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of %s: %w", pid, err)
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
		return 0, fmt.Errorf("read /proc/stat: %w", err)
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
