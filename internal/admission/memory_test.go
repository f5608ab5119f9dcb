package admission

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestMemoryBudget(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("AUTOMEMLIMIT", "") // restored after the test
	_ = os.Unsetenv("AUTOMEMLIMIT")
	mb := ResolveMemory(2 << 30)
	if mb.Bytes != 2<<30 || mb.Source != "config" {
		t.Fatalf("configured budget: %+v", mb)
	}
	if err := mb.Apply(); err != nil {
		t.Fatal(err)
	}
	budget := float64(2 << 30)
	want := int64(budget * GoMemLimitRatio)
	if mb.GoMemLimit != want || debug.SetMemoryLimit(-1) != want || mb.GoMemLimitSource != "budget" {
		t.Fatalf("GOMEMLIMIT %d (%s), runtime %d, want %d", mb.GoMemLimit, mb.GoMemLimitSource, debug.SetMemoryLimit(-1), want)
	}
	// GOMEMLIMIT in the environment wins.
	t.Setenv("GOMEMLIMIT", "300MiB")
	debug.SetMemoryLimit(300 << 20)
	mb = ResolveMemory(2 << 30)
	if err := mb.Apply(); err != nil {
		t.Fatal(err)
	}
	if mb.GoMemLimit != 300<<20 || mb.GoMemLimitSource != "env" {
		t.Fatalf("with GOMEMLIMIT set: %+v", mb)
	}
	// No configured budget: the cgroup's, which this test cannot set;
	// whatever it finds is a positive limit or none.
	if mb := ResolveMemory(0); mb.Bytes < 0 || (mb.Bytes > 0) != (mb.Source == "cgroup") {
		t.Fatalf("from the cgroup: %+v", mb)
	}
}
