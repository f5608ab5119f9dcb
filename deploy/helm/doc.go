// Package helm holds Vigil's Helm chart (deploy/helm/vigil) embedded in the
// binary, for `vigil manifests` to render without a copy on disk. It owns
// the chart's files and nothing else: loading and rendering them with
// Helm's engine is internal/manifests' job.
package helm
