// Package client is the Go client of the cordon daemon's HTTP API. A
// *Client implements service.Service, the interface the in-process
// sandbox.Manager implements, so a harness switches between a local
// library and a shared daemon by changing the line that makes the Service:
//
//	var svc service.Service = sandbox.NewManager(sandbox.Options{})   // in-process
//	var svc service.Service = client.New(endpoint)                    // through the daemon
//
// Ids are the daemon's (globally unique, opaque); errors carry the API's
// code and unwrap to package service's sentinels (errors.Is(err,
// service.ErrNotFound) holds for both; sandbox.ErrNotFound is the same
// error), plus ErrStale for ids from a previous daemon and ErrUnavailable
// when no daemon answers.
//
// It speaks package api's types on the wire and imports neither package
// sandbox nor anything that links libseccomp: it builds with CGO_ENABLED=0
// and on any OS.
//
// It owns talking to one endpoint (a Unix socket, or loopback TCP with a
// bearer token) and nothing else: finding or starting the daemon is package
// daemon's job. It never logs the token.
package client
