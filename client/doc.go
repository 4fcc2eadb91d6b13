// Package client is the Go client of the cordon daemon's HTTP API. A
// *Client implements sandbox.Service, the interface the in-process
// sandbox.Manager implements, so a harness switches between a local
// library and a shared daemon by changing the line that makes the Service:
//
//	var svc sandbox.Service = sandbox.NewManager(sandbox.Options{})   // in-process
//	var svc sandbox.Service = client.New(endpoint)                    // through the daemon
//
// Ids are the daemon's (globally unique, opaque); errors carry the API's
// code and unwrap to package sandbox's sentinels (errors.Is(err,
// sandbox.ErrNotFound) holds for both), plus ErrStale for ids from a
// previous daemon and ErrUnavailable when no daemon answers.
//
// It owns talking to one endpoint (a Unix socket, or loopback TCP with a
// bearer token) and nothing else: finding or starting the daemon is package
// daemon's job. It never logs the token.
package client
