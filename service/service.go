package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"syscall"
	"time"
)

// Service is the transport-neutral surface of sessions and processes. The
// in-process implementation is sandbox.Manager; the daemon's HTTP client
// (client.Client) implements the same interface. Every method is safe for
// concurrent use.
type Service interface {
	// CreateSession starts a sandbox that lives until CloseSession.
	CreateSession(ctx context.Context, spec SessionSpec) (SessionInfo, error)
	GetSession(ctx context.Context, session string) (SessionInfo, error)
	ListSessions(ctx context.Context) ([]SessionInfo, error)
	// CloseSession kills everything in the session and removes it.
	CloseSession(ctx context.Context, session string) error

	// Exec runs one command to completion, in req.Session or, when that is
	// empty, in a throwaway sandbox.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// Start starts a process in a session and returns once it exists.
	Start(ctx context.Context, req StartRequest) (ProcessInfo, error)
	GetProcess(ctx context.Context, session, process string) (ProcessInfo, error)
	ListProcesses(ctx context.Context, session string) ([]ProcessInfo, error)
	// Events yields the process's events with a cursor greater than after,
	// waiting for new ones, and ends after the exit event.
	Events(ctx context.Context, session, process string, after uint64) iter.Seq2[Event, error]
	// Wait returns the process's exit once its leader has exited.
	Wait(ctx context.Context, session, process string) (ExitInfo, error)
	// Signal sends sig to the process's leader or to its whole tree. sig
	// is a Linux signal number (the sandbox runs on Linux): on another OS,
	// take it from ParseSignal, not from package syscall's constants.
	Signal(ctx context.Context, session, process string, sig syscall.Signal, scope Scope) error
	// Kill ends the process's tree: SIGTERM and SIGCONT, grace, SIGKILL.
	Kill(ctx context.Context, session, process string, grace time.Duration) (ExitInfo, error)
	// WriteStdin writes to a process started with StdinPipe.
	WriteStdin(ctx context.Context, session, process string, data []byte) error
	// CloseStdin closes the process's stdin: it reads EOF.
	CloseStdin(ctx context.Context, session, process string) error
}

// Errors callers branch on, with errors.Is.
var (
	// ErrNotFound: no such session or process, or its exit record has
	// expired (sandbox.Options.ExitRetention).
	ErrNotFound = errors.New("not found")
	// ErrExists: a session with this name exists.
	ErrExists = errors.New("a session with this name exists")
	// ErrBusy: a carry-mode session is already running an Exec; carried
	// state is never mixed between two commands.
	ErrBusy = errors.New("session busy: another exec is running in this carry-mode session")
	// ErrClosed: the session is closed or closing.
	ErrClosed = errors.New("session closed")
	// ErrSessionLost: the session's sandbox died (bubblewrap or the init
	// was killed); its processes were killed with it.
	ErrSessionLost = errors.New("session lost: its sandbox exited unexpectedly")
	// ErrExited: the process (or, for ScopeTree, every process of its tree)
	// has exited, so there is nothing to signal.
	ErrExited = errors.New("process has exited")
	// ErrInvalidSignal: the signal number is not one Linux delivers; nothing
	// was sent.
	ErrInvalidSignal = errors.New("invalid signal")
	// ErrNoStdin: the process was not started with StdinPipe.
	ErrNoStdin = errors.New("process has no stdin pipe")
	// ErrInvalid: the request is malformed (see the message).
	ErrInvalid = errors.New("invalid request")
	// ErrSetup marks cordon's own failures (bubblewrap missing or failing,
	// the filter not loading): the command never started. The CLI exits
	// 125. runner.ErrSetup is this error.
	ErrSetup = errors.New("sandbox setup failed")
)

// SessionSpec describes a session's sandbox.
type SessionSpec struct {
	// Name, when set, must be unique among open sessions (ErrExists).
	Name string `json:"name,omitempty"`
	// Dir is the working directory, bound writable at the same path.
	// Empty means sandbox.Options.Dir.
	Dir string `json:"dir,omitempty"`
	// RW and RO are extra paths bound read-write and read-only.
	RW []string `json:"rw,omitempty"`
	RO []string `json:"ro,omitempty"`
	// Net is "host" (default), "none" (loopback only) or "filter"
	// (loopback, and cordon's proxy deciding each connection by the
	// policy's network section). A policy with a network section is
	// filtered unless Net is "none".
	Net string `json:"net,omitempty"`
	// Isolation is the tier: "auto" (default: bwrap when it works here,
	// else landlock), "bwrap", "landlock" or "none" (exec policy only).
	Isolation string `json:"isolation,omitempty"`
	// Env is the processes' base environment ("KEY=value"); nil means
	// sandbox.Options.Env.
	Env []string `json:"env,omitempty"`
	// Policy is a policy document in cordon's format (YAML or JSON, see
	// package policy). Empty means allow, with the built-in deny list.
	Policy string `json:"policy,omitempty"`
	// Carry keeps the working directory and exported environment that a
	// script Exec leaves behind for the session's next Exec.
	Carry bool `json:"carry,omitempty"`
	// AskTimeout, when set and Ask is nil, holds an exec or connection
	// the policy asks about for up to this long, for a client to answer
	// (the "ask" decision on the session's stream carries an AskID; see
	// AnswerAsk); no answer in time denies. Zero denies at once.
	AskTimeout Duration `json:"ask_timeout,omitempty"`
	// IdleTimeout, when set, closes the session after this long without a
	// command running in it (an Exec, or a started process whose tree is
	// not gone).
	IdleTimeout Duration `json:"idle_timeout,omitempty"`
	// ReportAllowed adds allowed execs to the events and results; denied
	// and asked execs are always reported.
	ReportAllowed bool `json:"report_allowed,omitempty"`
	// Ask answers execs the policy says to ask about; nil denies them. It
	// runs while the exec waits (and every other exec of the session with
	// it); ctx is cancelled when the asking process dies or the session
	// closes. process is the id of the process that asked, or "" while it
	// is not known yet.
	Ask func(ctx context.Context, process string, d ExecDecision) bool `json:"-"`
}

// SessionState is where a session is in its life.
type SessionState string

const (
	SessionRunning SessionState = "running"
	SessionClosed  SessionState = "closed"
	// SessionLost: the sandbox died without being closed.
	SessionLost SessionState = "lost"
)

// SessionInfo describes a session.
type SessionInfo struct {
	ID        string       `json:"id"`
	Name      string       `json:"name,omitempty"`
	State     SessionState `json:"state"`
	CreatedAt time.Time    `json:"created_at"`
	Carry     bool         `json:"carry,omitempty"`
	// Cwd is the carried working directory (carry mode).
	Cwd string `json:"cwd,omitempty"`
	// Processes counts the started processes still on record.
	Processes int `json:"processes"`
	// Error says why a lost session was lost.
	Error string `json:"error,omitempty"`
	// LastDecision is the cursor of the session's newest exec decision
	// (see sandbox.Manager.Decisions).
	LastDecision uint64 `json:"last_decision"`
}

// ExecRequest is one command to run to completion. Exactly one of Argv and
// Script is set.
type ExecRequest struct {
	// Session runs the command in this session; empty means a throwaway
	// sandbox made from Sandbox (or the Manager's defaults).
	Session string       `json:"session,omitempty"`
	Sandbox *SessionSpec `json:"sandbox,omitempty"`
	// Argv is run as is (the program is looked up on PATH); Script is run
	// by sh -c.
	Argv   []string `json:"argv,omitempty"`
	Script string   `json:"script,omitempty"`
	// Shell runs Script with bash instead of sh ("bash"; empty or "sh" is
	// /bin/sh): agents write their commands for bash. In carry mode the
	// snapshot is taken by that shell too.
	Shell string `json:"shell,omitempty"`
	// Dir is the working directory: absolute, or relative to the session's
	// (carried) one.
	Dir string `json:"dir,omitempty"`
	// Env entries ("KEY=value") override the session's environment for
	// this command.
	Env []string `json:"env,omitempty"`
	// Stdin is the command's whole input; nil means /dev/null.
	Stdin []byte `json:"stdin,omitempty"`
	// Timeout ends the command's tree (SIGTERM, KillGrace, SIGKILL).
	Timeout   Duration `json:"timeout,omitempty"`
	KillGrace Duration `json:"kill_grace,omitempty"`
	// MaxOutput bounds the bytes kept of stdout and of stderr each; the
	// rest is read and dropped (Truncated). Zero means sandbox.Options.MaxOutput.
	MaxOutput int `json:"max_output,omitempty"`
	// Output, when set, is given the command's output as it is read
	// (kind EventStdout or EventStderr), before Exec returns; the result
	// holds it too, up to MaxOutput. Calls are serialised; data is valid
	// only during the call. None is made once Exec has returned.
	Output func(kind EventKind, data []byte) `json:"-"`
	// OnDecision, when set, is given each decision the result lists, as
	// it is made (a denial while the command still runs); serialised with
	// Output, none after Exec has returned.
	OnDecision func(ExecDecision) `json:"-"`
}

// ExecResult is how an Exec ended. The command's tree is gone when Exec
// returns: processes left behind by the command (Orphans) are killed.
type ExecResult struct {
	ExitInfo
	Stdout          []byte `json:"stdout"`
	Stderr          []byte `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	// Decisions lists the command's denied and asked execs (and allowed
	// ones with SessionSpec.ReportAllowed).
	Decisions []ExecDecision `json:"decisions,omitempty"`
	// Cwd is the session's carried working directory after the command
	// (carry mode).
	Cwd string `json:"cwd,omitempty"`
}

// StdinMode selects a started process's stdin.
type StdinMode string

const (
	// StdinNone gives the process /dev/null: reading gets EOF at once.
	StdinNone StdinMode = "none"
	// StdinPipe gives the process a pipe written with WriteStdin (or
	// Process.Stdin) and closed with CloseStdin.
	StdinPipe StdinMode = "pipe"
)

// StartRequest is a process to start in a session. Exactly one of Argv and
// Script is set.
type StartRequest struct {
	Session string    `json:"session"`
	Argv    []string  `json:"argv,omitempty"`
	Script  string    `json:"script,omitempty"`
	Dir     string    `json:"dir,omitempty"`
	Env     []string  `json:"env,omitempty"`
	Stdin   StdinMode `json:"stdin,omitempty"`
	// Timeout, when set, ends the process's tree after this long, even if
	// only processes it left behind are still running.
	Timeout   Duration `json:"timeout,omitempty"`
	KillGrace Duration `json:"kill_grace,omitempty"`
}

// ProcessState is where a process is in its life.
type ProcessState string

const (
	ProcessStarting ProcessState = "starting"
	ProcessRunning  ProcessState = "running"
	// ProcessExited: the leader has exited (Exit is set). Processes it left
	// behind may still run until they exit or are killed.
	ProcessExited ProcessState = "exited"
)

// ProcessInfo describes a started process.
type ProcessInfo struct {
	// ID is random; it is never a pid.
	ID        string       `json:"id"`
	Session   string       `json:"session"`
	Argv      []string     `json:"argv,omitempty"`
	Script    string       `json:"script,omitempty"`
	Dir       string       `json:"dir"`
	State     ProcessState `json:"state"`
	StartedAt time.Time    `json:"started_at"`
	Stdin     StdinMode    `json:"stdin"`
	// Exit is set once the leader has exited.
	Exit *ExitInfo `json:"exit,omitempty"`
	// LastEvent is the cursor of the newest event.
	LastEvent uint64 `json:"last_event"`
}

// ExitInfo is how a process ended. ExitCode follows the shell: the
// process's own code, or 128+N when signal N killed it, so `exit 137` and a
// real SIGKILL differ only, and always, in Signal.
type ExitInfo struct {
	ExitCode int `json:"exit_code"`
	// Signal is the signal that killed the leader, or 0.
	Signal int `json:"signal,omitempty"`
	// TimedOut: the timeout fired while the tree was running.
	TimedOut bool `json:"timed_out,omitempty"`
	// KillRequested: Kill (or Close) was asked for before the leader
	// exited. A kill after the exit keeps the real status and leaves this
	// false.
	KillRequested bool      `json:"kill_requested,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	ExitedAt      time.Time `json:"exited_at"`
	Duration      Duration  `json:"duration"`
	// Orphans counts the processes of the tree still running when the
	// leader had exited and its output was drained.
	Orphans int `json:"orphans,omitempty"`
	// Error is set when the program could not be started (not found: exit
	// code 127; denied by the policy or not executable: 126) or when the
	// status is not the kernel's (Lost).
	Error string `json:"error,omitempty"`
	// Denied: the policy refused the program itself.
	Denied bool `json:"denied,omitempty"`
	// Lost: the session ended under the process (closed or lost) before
	// its status was reported; Signal is SIGKILL, which is what the
	// namespace's end delivers.
	Lost bool `json:"lost,omitempty"`
}

// ShellCode is the exit code a command line reports for e: 124 when the
// timeout fired (as cordon run --timeout does), else ExitCode. The rule is
// internal/exitcode's (exitcode.TimedOut), stated here because service
// imports nothing of cordon.
func (e ExitInfo) ShellCode() int {
	if e.TimedOut {
		return 124
	}
	return e.ExitCode
}

// EventKind says what an Event carries.
type EventKind string

const (
	EventStdout   EventKind = "stdout"   // Data
	EventStderr   EventKind = "stderr"   // Data
	EventDecision EventKind = "decision" // Decision
	// EventExit is the last event of a process (Exit).
	EventExit EventKind = "exit"
	// EventTruncated stands for events dropped from the retention buffer
	// before the reader got them (Dropped of them, up to and including
	// Seq). Resuming after its Seq continues with the oldest retained one.
	EventTruncated EventKind = "truncated"
)

// Event is one thing that happened to a process. Seq is its cursor:
// strictly increasing, never reused.
type Event struct {
	Seq      uint64        `json:"seq"`
	Time     time.Time     `json:"time"`
	Kind     EventKind     `json:"kind"`
	Data     []byte        `json:"data,omitempty"`
	Decision *ExecDecision `json:"decision,omitempty"`
	Exit     *ExitInfo     `json:"exit,omitempty"`
	Dropped  uint64        `json:"dropped,omitempty"`
}

// ExecDecision is one exec decided by the session's policy.
type ExecDecision struct {
	Time time.Time `json:"time"`
	// Decision is "allow" or "deny"; "ask" while the exec waits for
	// SessionSpec.Ask (the final decision follows as its own event).
	Decision string `json:"decision"`
	// Asked: the policy said ask.
	Asked bool `json:"asked,omitempty"`
	// Rule is the deciding rule (deny "git push"), or "default allow".
	Rule string   `json:"rule"`
	Argv []string `json:"argv"`
	// Program is the executable's path in the sandbox.
	Program string `json:"program,omitempty"`
	// Pid is the caller's pid in the sandbox's pid namespace.
	Pid int `json:"pid,omitempty"`
	// Process is the id of the started process whose tree made the exec,
	// when known (session-wide decision streams; empty for Exec's).
	Process string `json:"process,omitempty"`
	// Kind is "exec" (also when empty: older servers); "net": a
	// connection decided by the network rules (--net filter), with Argv
	// and Pid naming the process that opened it, and the fields below;
	// or "file": a creation of a protected name refused (Argv is
	// create PATH).
	Kind string `json:"kind,omitempty"`
	// Host and Port are the destination asked for; Addr the address
	// connected to (net only).
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	Addr string `json:"addr,omitempty"`
	// BytesUp and BytesDown count what went each way, DurationMs how long
	// the connection lasted (net only; set once it ended).
	BytesUp    int64 `json:"bytes_up,omitempty"`
	BytesDown  int64 `json:"bytes_down,omitempty"`
	DurationMs int64 `json:"duration_ms,omitempty"`
	// AskID names a pending ask ("ask" decisions of a session with
	// AskTimeout): the id to answer it with.
	AskID string `json:"ask_id,omitempty"`
	// AskDeadline is when a pending ask is denied without an answer.
	AskDeadline time.Time `json:"ask_deadline,omitzero"`
}

// AskAnswer answers a pending ask. Remember applies the answer to every
// later ask of the session about the same argv (exec) or host and port
// (net).
type AskAnswer struct {
	Allow    bool `json:"allow"`
	Remember bool `json:"remember,omitempty"`
}

// Scope is what Signal reaches.
type Scope string

const (
	// ScopeTree: every live process of the tree, however it detached.
	ScopeTree Scope = "tree"
	// ScopeProcess: the leader only.
	ScopeProcess Scope = "process"
)

// Duration is a time.Duration that travels in JSON as a string ("1.5s");
// a bare number is read as seconds.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration: want a string such as \"1.5s\" or a number of seconds, got %s", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// ParseSignal reads a signal as a number ("15") or a name with or without
// the SIG prefix ("TERM", "SIGTERM"), and checks it is one Linux delivers.
// Names map to Linux's numbers on every OS.
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		sig := syscall.Signal(n)
		return sig, CheckSignal(sig)
	}
	name := s
	if len(name) < 3 || name[:3] != "SIG" {
		name = "SIG" + name
	}
	if n, ok := linuxSignals[name]; ok {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("%w: %q", ErrInvalidSignal, s)
}

// maxSignal is SIGRTMAX on Linux.
const maxSignal = 64

// CheckSignal returns ErrInvalidSignal (wrapped) unless sig is a signal
// number Linux delivers.
func CheckSignal(sig syscall.Signal) error {
	if sig < 1 || sig > maxSignal {
		return fmt.Errorf("%w: %d (want 1..%d)", ErrInvalidSignal, int(sig), maxSignal)
	}
	return nil
}

// linuxSignals are Linux's signal numbers (asm-generic, as on amd64 and
// arm64), written out rather than taken from package syscall so that a
// client on another OS sends the numbers the sandbox's kernel means.
// signals_linux_test.go checks them against package syscall.
var linuxSignals = map[string]int{
	"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
	"SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
	"SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGCONT": 18, "SIGSTOP": 19, "SIGTSTP": 20,
	"SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23, "SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26,
	"SIGPROF": 27, "SIGWINCH": 28, "SIGIO": 29, "SIGPWR": 30, "SIGSYS": 31,
}
