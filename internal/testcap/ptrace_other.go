//go:build !linux

package testcap

import "errors"

// errNoPtrace: cordon traces with Linux's PTRACE_SEIZE only.
var errNoPtrace = errors.New("ptrace: cordon traces on Linux only")

func seizeChild() error { return errNoPtrace }
