// Package scrape owns pulling metrics from targets: the `global`,
// `scrape_configs` and `scrape_config_files` sections of vigil.yaml, read
// with Prometheus's own configuration types (so a Prometheus scrape
// configuration works unchanged), and the Prometheus discovery and scrape
// managers that run them into a storage.AppendableV2. Static, file-based and
// Kubernetes discovery are compiled in.
//
// It does not store samples and does not receive pushes; see the store and
// remotewrite packages.
package scrape
