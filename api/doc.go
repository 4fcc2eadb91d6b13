// Package api defines the cordon daemon's HTTP wire format: the route
// paths, every request and response body, the error body and its codes, and
// the conversions to and from package sandbox's types.
//
// It is shared by the daemon's handlers (package server) and its Go client
// (package client) so the two cannot drift apart, and it is what
// server/openapi.yaml documents. Text travels as UTF-8 strings and bytes as
// base64 in fields named *_b64. Ids are opaque strings: conversions here
// copy them as they are, and the server maps them.
//
// It must stay free of I/O: no sockets, no files, no processes.
package api
