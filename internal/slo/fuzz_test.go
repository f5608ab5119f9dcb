package slo

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no input makes Parse panic, and a spec Parse accepts always
// generates (every expression it builds parses as Prometheus 2.42's) and
// renders.
//
//	go test ./internal/slo -run '^$' -fuzz FuzzParse -fuzztime 60s -fuzzminimizetime 5s
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	seeds = append(seeds, filepath.Join("..", "..", "examples", "slo.yaml"))
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4096 {
			continue // the alias bomb: minimizing its mutations takes minutes
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if big(spec) {
			return // generation is linear but slow (PromQL parsing): keep execs fast
		}
		files, err := Files(spec)
		if err != nil {
			t.Fatalf("a valid spec does not generate: %v", err)
		}
		for _, file := range files {
			for _, format := range []Format{FormatPrometheus, FormatPrometheusRule} {
				if _, err := Render(file, format); err != nil {
					t.Fatalf("render %s: %v", file.Name, err)
				}
			}
		}
		_ = ValidateBuckets(spec, KnownBuckets())
	})
}

// big says whether a spec has more SLOs or sources than fuzzing should
// generate rules for.
func big(spec *Spec) bool {
	n := len(spec.SLOs)
	for i := range spec.SLOs {
		n += len(spec.SLOs[i].sources())
	}
	return n > 100
}
