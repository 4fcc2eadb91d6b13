// Package policy parses, compiles and evaluates cordon's exec rules.
//
// A Policy is compiled once and is then immutable and safe for concurrent use:
// the supervisor calls Decide for every execve/execveat it intercepts. The
// package is pure: it performs no system calls, starts no processes and reads
// no files of its own. Everything it needs to know about the executable being
// run (the resolved path, the file's identity) is passed in by the caller, so
// the package builds and is tested on any OS, without cgo.
package policy
