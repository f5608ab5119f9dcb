// Package page tests the page end to end: simulated scenarios streamed
// into the embedded store in accelerated time, the continuous evaluation
// (rules, symptoms, diagnosis, incidents) and Prometheus's notifier
// delivering to a real Alertmanager (Debian's 0.25), with amtool reading
// it back. It measures the time from a fault's onset to the first alert in
// Alertmanager whose rank-1 cause names it, and checks that one incident
// stays one alert through an Alertmanager restart and a Vigil restart.
package page
