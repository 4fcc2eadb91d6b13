// Package service is the transport-neutral surface of cordon's sessions and
// processes: the Service interface, the plain types its methods take and
// return, and the sentinel errors callers branch on with errors.Is.
//
// It exists so that code which only talks to a Service builds anywhere: the
// in-process implementation (sandbox.Manager) links the supervisor and
// libseccomp, while the daemon's Go client (package client) must build with
// CGO_ENABLED=0 and on any OS. Package sandbox re-exports every name here
// as an alias, so the Go library's API is unchanged; the daemon's JSON wire
// format is package api, a separate leaf.
//
// It must import nothing of cordon (only the standard library) and hold no
// behaviour beyond values: no I/O, no processes, nothing OS-specific.
// Signal numbers are Linux's on every OS, since the sandbox runs on Linux.
package service
