// Package bwrap builds bubblewrap command lines from a sandbox Spec and finds
// the bwrap binary.
//
// It only produces argv slices; it never starts bwrap and never builds a
// shell string. The runner owns process management.
package bwrap
