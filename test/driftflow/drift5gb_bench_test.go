package driftflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-obs/vigil/internal/peertest"
)

// The 5 GB run: features, the shifted one, the memory limit.
const (
	bigFeatures = 10
	bigShifted  = 3
	bigMemLimit = "256MiB"
)

// BenchmarkDrift5GB runs `vigil drift --method psi` on a 5 GB baseline and
// a 5 GB current CSV of 10 features (one shifted by half a standard
// deviation) under GOMEMLIMIT=256MiB, and reports the wall time, rows/s
// (the rows of both files; PSI reads a baseline that overflows the exact
// store twice) and the peak RSS of the vigil process. The files are written
// to VIGIL_DRIFT_DIR (default: a temporary directory) and removed after;
// VIGIL_DRIFT_GB changes their size:
//
//	VIGIL_DRIFT_5GB=1 go test ./test/driftflow -run '^$' -bench Drift5GB -benchtime 1x -timeout 2h
func BenchmarkDrift5GB(b *testing.B) {
	if os.Getenv("VIGIL_DRIFT_5GB") != "1" {
		b.Skip("writes two 5 GB files: set VIGIL_DRIFT_5GB=1")
	}
	gb := 5.0
	if s := os.Getenv("VIGIL_DRIFT_GB"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			b.Fatalf("VIGIL_DRIFT_GB=%q is no positive number", s)
		}
		gb = v
	}
	bin := peertest.Vigil(b)
	dir := os.Getenv("VIGIL_DRIFT_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	size := int64(gb * (1 << 30))
	base, cur := filepath.Join(dir, "baseline-5gb.csv"), filepath.Join(dir, "current-5gb.csv")
	defer os.Remove(base)
	defer os.Remove(cur)
	began := time.Now()
	rows := writeBig(b, base, size, 1, 0) + writeBig(b, cur, size, 2, 0.5)
	b.Logf("wrote 2 × %.1f GB (%d rows) in %s; load average %s", gb, rows, time.Since(began).Round(time.Second), loadAverage())

	for b.Loop() {
		cmd := exec.Command(bin, "drift", "--baseline", base, "--current", cur, "--method", "psi", "--json")
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+bigMemLimit)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("vigil drift: %v\n%s", err, stderr.String())
		}
		wall := time.Since(start)
		checkBig(b, stdout.Bytes())
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(rows)/wall.Seconds(), "rows/s")
		if ru != nil {
			b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB") // Maxrss is in KiB on Linux
			b.ReportMetric(float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9, "cpu-s")
		}
		b.Logf("load average after the run: %s", loadAverage())
	}
}

// writeBig writes about size bytes of CSV: bigFeatures columns of N(0, 1)
// with four decimals, column bigShifted moved by shift. Values come from a
// table of formatted draws, so that writing 5 GB takes seconds, not
// minutes. It returns the rows written.
func writeBig(b *testing.B, path string, size int64, seed uint64, shift float64) int64 {
	b.Helper()
	rng := rand.New(rand.NewPCG(seed, 5))
	const tableSize = 1 << 16
	table := func(mu float64) [][]byte {
		t := make([][]byte, tableSize)
		for i := range t {
			t[i] = strconv.AppendFloat(nil, mu+rng.NormFloat64(), 'f', 4, 64)
		}
		return t
	}
	plain, moved := table(0), table(shift)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var head []string
	for j := range bigFeatures {
		head = append(head, fmt.Sprintf("f%d", j))
	}
	written, _ := w.WriteString(strings.Join(head, ",") + "\n")
	total := int64(written)
	var rows int64
	for total < size {
		for j := range bigFeatures {
			t := plain
			if j == bigShifted {
				t = moved
			}
			v := t[rng.Uint32()%tableSize]
			w.Write(v)
			total += int64(len(v)) + 1
			if j == bigFeatures-1 {
				w.WriteByte('\n')
			} else {
				w.WriteByte(',')
			}
		}
		rows++
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return rows
}

// checkBig requires the shifted feature, and only it, to have drifted.
func checkBig(b *testing.B, out []byte) {
	b.Helper()
	var rep struct {
		Features []driftResult `json:"features"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		b.Fatalf("vigil drift --json: %v\n%s", err, out)
	}
	if len(rep.Features) != bigFeatures {
		b.Fatalf("%d features, want %d", len(rep.Features), bigFeatures)
	}
	for _, r := range rep.Features {
		if want := r.Feature == fmt.Sprintf("f%d", bigShifted); r.Drift != want {
			b.Fatalf("feature %s: drift %v (psi %.4f), want %v", r.Feature, r.Drift, r.Score, want)
		}
	}
}

// loadAverage is the 1-, 5- and 15-minute load average (the machine may be
// shared).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
