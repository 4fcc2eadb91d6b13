package sandbox

import (
	"fmt"
	"syscall"

	"github.com/cordon-sandbox/cordon/service"
)

// The library's request, result and event types, its errors and the
// Service interface are defined in package service, which builds without
// cgo and on any OS (the daemon's Go client implements Service too). These
// aliases keep them under this package's names: sandbox.ExecRequest and
// service.ExecRequest are the same type.

// Service is the transport-neutral surface of sessions and processes;
// Manager implements it.
type Service = service.Service

type (
	SessionSpec  = service.SessionSpec
	SessionState = service.SessionState
	SessionInfo  = service.SessionInfo
	ExecRequest  = service.ExecRequest
	ExecResult   = service.ExecResult
	StdinMode    = service.StdinMode
	StartRequest = service.StartRequest
	ProcessState = service.ProcessState
	ProcessInfo  = service.ProcessInfo
	ExitInfo     = service.ExitInfo
	EventKind    = service.EventKind
	Event        = service.Event
	ExecDecision = service.ExecDecision
	AskAnswer    = service.AskAnswer
	Scope        = service.Scope
	Duration     = service.Duration
)

const (
	SessionRunning = service.SessionRunning
	SessionClosed  = service.SessionClosed
	SessionLost    = service.SessionLost

	StdinNone = service.StdinNone
	StdinPipe = service.StdinPipe

	ProcessStarting = service.ProcessStarting
	ProcessRunning  = service.ProcessRunning
	ProcessExited   = service.ProcessExited

	EventStdout    = service.EventStdout
	EventStderr    = service.EventStderr
	EventDecision  = service.EventDecision
	EventExit      = service.EventExit
	EventTruncated = service.EventTruncated

	ScopeTree    = service.ScopeTree
	ScopeProcess = service.ScopeProcess
)

// Errors callers branch on, with errors.Is (see package service).
var (
	ErrNotFound      = service.ErrNotFound
	ErrExists        = service.ErrExists
	ErrBusy          = service.ErrBusy
	ErrClosed        = service.ErrClosed
	ErrSessionLost   = service.ErrSessionLost
	ErrExited        = service.ErrExited
	ErrInvalidSignal = service.ErrInvalidSignal
	ErrNoStdin       = service.ErrNoStdin
	ErrInvalid       = service.ErrInvalid
)

// ParseSignal reads a signal as a number or a name (see
// service.ParseSignal).
func ParseSignal(s string) (syscall.Signal, error) { return service.ParseSignal(s) }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func checkSignal(sig syscall.Signal) error { return service.CheckSignal(sig) }
