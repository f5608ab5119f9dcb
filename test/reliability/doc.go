// Package reliability probes `vigil serve`, the real binary, with the
// requests real clients make and the bad ones hostile or broken clients
// make: a browser and a Grafana with direct access (an Origin header, a
// CORS preflight), a remote-read client, Remote-Write senders that repeat a
// timestamp or send a body under the wrong protobuf content type. Each
// test names the finding of issue 17 it guards.
//
// The package has no code outside its tests.
package reliability
