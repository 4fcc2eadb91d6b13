// Package server is the cordon daemon's HTTP API: it serves a
// service.Service (in the daemon, a sandbox.Manager) as JSON over HTTP/1.1,
// with server-sent event streams for a process's events and a session's
// exec decisions. Every body is one of package api's types; the library's
// values are converted at this edge (internal/apiconv). It imports the
// Service interface, not its implementation, so it builds without cgo.
//
// It owns the routes (documented in openapi.yaml, which a test checks
// against the mux), the mapping between the library's ids and the API's
// (every id embeds the daemon's instance id, so an id from a previous daemon
// is answered "stale", never confused with a new one), the error body and
// statuses, and the access rules every request passes first: any Origin
// header and any Host other than localhost, 127.0.0.1, [::1] or the socket
// are refused (DNS rebinding); on TCP a bearer token is compared in constant
// time; on a Unix socket the peer's uid (SO_PEERCRED) must be the daemon's,
// and the peer must not run inside a cordon sandbox (below a cordon init:
// the landlock tier cannot hide the socket).
//
// It must never listen, write files or start processes itself: where it
// listens, the discovery file and the daemon's life belong to package daemon.
package server
