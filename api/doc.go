// Package api defines the cordon daemon's HTTP wire format: the route
// paths, every request and response body, the error body and its codes,
// and the shapes of events, exits and exec decisions.
//
// It is shared by the daemon's handlers (package server), its Go client
// (package client) and "cordon exec --json", so they cannot drift apart,
// and it is what server/openapi.yaml documents. Text travels as UTF-8
// strings and bytes as base64 in fields named *_b64; durations as whole
// milliseconds in fields named *_ms. Ids are opaque strings.
//
// It is a leaf of plain types: it imports the standard library only
// (imports_test.go checks), never cordon's implementation, so a program
// that talks to the daemon builds without cgo and on any OS. Converting
// to and from the library's types is done at the edges
// (internal/apiconv, used by server and client). It must stay free of I/O:
// no sockets, no files, no processes.
package api
