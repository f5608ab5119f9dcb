// Package diagnosebench holds the benchmarks of the diagnosis engine
// (internal/diagnose) at cluster scale: the wall time and the peak resident
// memory of one diagnosis as the cluster grows (16 to 1,000 nodes of eight
// H100s) and as the window grows (15m to 3h), and, separately, the time to
// import the same data from an OpenMetrics dump (`vigil diagnose --input`).
//
// The data comes from the simulator (internal/sim) with a large training
// job whose NVLink degrades on one GPU, so that the engine does its full
// work; every measurement checks that the diagnosis still names that GPU's
// node first. Each cluster is simulated once into an embedded store and
// persisted as a block; each peak-memory figure comes from a fresh process
// (this test binary, run again) that opens the block and diagnoses once.
//
// The package has no code outside its tests; `make bench` runs it.
package diagnosebench
