//go:build cgo && netgo && osusergo

package main

// Built with the tags the Makefile gives (netgo and osusergo: the resolver
// and the user database in Go, so nothing of glibc's NSS is linked), cordon
// links statically, libseccomp included. A run starts two cordon processes,
// the host's and the sandbox's init, and neither then pays the dynamic
// loader: in the sandbox it resolves libc and libseccomp through bubblewrap's
// binds (BENCHMARKS.md, "issue 17: start-up, sixth round"). A plain
// `go build` or `go install` links dynamically; both behave the same.

// #cgo LDFLAGS: -static
import "C"
