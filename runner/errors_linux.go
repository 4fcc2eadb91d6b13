package runner

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/cordon-sandbox/cordon/service"
)

// ErrSetup marks cordon's own failures (bubblewrap missing or failing, the
// filter not loading): the command never started. The CLI exits 125. It is
// service.ErrSetup, so the daemon's client can return it without linking
// the runner.
var ErrSetup = service.ErrSetup

// SetupError is a setup failure with what the user can do about it.
type SetupError struct {
	Err error
	// Detail is what the failing component said (bubblewrap's stderr).
	Detail string
	// Hint says what to do about it, when cordon knows.
	Hint string
}

// hintDoctor is the hint for a failure of the host rather than the
// caller's input: what cordon doctor checks.
const hintDoctor = "run 'cordon doctor' to check this host"

func (e *SetupError) Error() string {
	msg := "sandbox setup failed: " + e.Err.Error()
	if d := strings.TrimSpace(e.Detail); d != "" {
		msg = fmt.Sprintf("sandbox setup failed: %s (%v)", d, e.Err)
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *SetupError) Unwrap() []error { return []error{ErrSetup, e.Err} }

// ExecError is a top-level command that could not be started: not found,
// not executable, or denied by policy.
type ExecError struct {
	Path  string
	Errno syscall.Errno
	// Denied is true when the policy refused the exec; the launcher
	// (launch.onDecision) has already printed the "cordon: denied:" line.
	Denied bool
}

func (e *ExecError) Error() string {
	switch {
	case e.Denied:
		return fmt.Sprintf("%s: denied by policy", e.Path)
	case e.Errno == syscall.ENOENT && !strings.Contains(e.Path, "/"):
		return fmt.Sprintf("%s: command not found", e.Path)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Errno)
}

// ExitCode is 127 for a missing command and 126 otherwise.
func (e *ExecError) ExitCode() int { return exitCodeForErrno(e.Errno) }
