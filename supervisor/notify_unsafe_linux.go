package supervisor

// This is the only file of the package that imports unsafe; the seccomp
// structures and calls are package internal/seccomp's.

import "unsafe"

// unsafePointer is unsafe.Pointer, for the one ptrace call in the package
// that passes a buffer (PTRACE_GETSIGINFO).
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }
