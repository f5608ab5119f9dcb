// Package deploy holds Vigil's deployment files: the container image's
// Dockerfile, the Helm chart (deploy/helm, embedded by package
// deploy/helm), and examples for Argo CD, Flux and the OpenTelemetry
// Collector. It has no code; its tests check the files: the Dockerfile's
// `go build` line builds a static binary that runs, and the examples decode
// strictly and point at the chart.
package deploy
