package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/sandbox"
)

// Route paths. Path parameters are written as in net/http patterns.
const (
	PathHealth        = "/v1/health"
	PathSessions      = "/v1/sessions"
	PathSession       = "/v1/sessions/{id}"
	PathDecisions     = "/v1/sessions/{id}/decisions"
	PathExec          = "/v1/exec"
	PathProcesses     = "/v1/processes"
	PathProcess       = "/v1/processes/{id}"
	PathProcessEvents = "/v1/processes/{id}/events"
	PathProcessWait   = "/v1/processes/{id}/wait"
	PathProcessSignal = "/v1/processes/{id}/signal"
	PathProcessKill   = "/v1/processes/{id}/kill"
	PathProcessStdin  = "/v1/processes/{id}/stdin"
	PathShutdown      = "/v1/shutdown"
	PathOpenAPI       = "/v1/openapi.yaml"
)

const (
	// EventStreamType is the content type of server-sent event streams.
	EventStreamType = "text/event-stream"
	// Transports a daemon listens on (Health.Transport).
	TransportUnix = "unix"
	TransportTCP  = "tcp"
	// Output encodings of POST /v1/exec.
	EncodingText   = "text"
	EncodingBase64 = "base64"
	// DefaultKillGraceMs is POST /v1/processes/{id}/kill's default grace.
	DefaultKillGraceMs = 5000
)

// Health is the body of GET /v1/health.
type Health struct {
	Pid     int    `json:"pid"`
	Version string `json:"version"`
	// InstanceID is random per daemon start; every session and process id
	// the daemon hands out embeds it.
	InstanceID string    `json:"instance_id"`
	Transport  string    `json:"transport"`
	StartedAt  time.Time `json:"started_at"`
	Sessions   int       `json:"sessions"`
}

// Error is the body of every error response.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Error codes, with the HTTP status each is sent with.
const (
	CodeBadRequest   = "bad_request"        // 400: malformed or invalid request
	CodeUnauthorized = "unauthorized"       // 401: missing or wrong bearer token (TCP)
	CodeForbidden    = "forbidden"          // 403: Origin header, bad Host, another user's connection
	CodeNotFound     = "not_found"          // 404: no such session, process or route
	CodeMethod       = "method_not_allowed" // 405
	CodeStale        = "stale"              // 409: an id from a previous daemon instance
	CodeBusy         = "busy"               // 409: a carry-mode session is running an exec
	CodeExists       = "exists"             // 409: a session with this name exists
	CodeClosed       = "closed"             // 409: the session is closed or closing
	CodeLost         = "lost"               // 409: the session's sandbox died
	CodeExited       = "exited"             // 409: nothing left to signal
	CodeNoStdin      = "no_stdin"           // 409: the process has no stdin pipe, or it was closed
	CodeTooLarge     = "too_large"          // 413: request body over the limit
	CodeUnsupported  = "unsupported"        // 501: the service cannot do this
	CodeShutdown     = "shutting_down"      // 503: the daemon is stopping
	CodeSetup        = "setup_failed"       // 500: the sandbox could not be started
	CodeInternal     = "internal"           // 500: anything else
)

// Env is an environment: a JSON object {"KEY": "value"} or a list
// ["KEY=value"]. It marshals as a list.
type Env []string

// UnmarshalJSON reads either form; an object's keys are sorted.
func (e *Env) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*e = list
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("env: want an object of strings or a list of KEY=value strings")
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	*e = out
	return nil
}

// Signal is a signal as a name ("TERM", "SIGTERM") or a number (15).
type Signal string

// UnmarshalJSON accepts a string or a number.
func (s *Signal) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = Signal(str)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("signal: want a name such as \"TERM\" or a number")
	}
	*s = Signal(strconv.Itoa(n))
	return nil
}

// SessionRequest is the body of POST /v1/sessions, and the throwaway
// sandbox of an exec without a session.
type SessionRequest struct {
	Name string `json:"name,omitempty"`
	// Dir is the working directory, bound writable. Empty: "/" (nothing
	// writable but the sandbox's private /tmp).
	Dir    string   `json:"dir,omitempty"`
	RW     []string `json:"rw,omitempty"`
	RO     []string `json:"ro,omitempty"`
	Net    string   `json:"net,omitempty"`
	Env    Env      `json:"env,omitempty"`
	Policy string   `json:"policy,omitempty"`
	Carry  bool     `json:"carry,omitempty"`
	// ReportAllowed adds allowed execs to decisions and events.
	ReportAllowed bool `json:"report_allowed,omitempty"`
}

// Spec converts r.
func (r SessionRequest) Spec() sandbox.SessionSpec {
	return sandbox.SessionSpec{
		Name: r.Name, Dir: r.Dir, RW: r.RW, RO: r.RO, Net: r.Net, Env: r.Env,
		Policy: r.Policy, Carry: r.Carry, ReportAllowed: r.ReportAllowed,
	}
}

// SessionRequestOf converts spec (Ask cannot travel).
func SessionRequestOf(spec sandbox.SessionSpec) SessionRequest {
	return SessionRequest{
		Name: spec.Name, Dir: spec.Dir, RW: spec.RW, RO: spec.RO, Net: spec.Net, Env: spec.Env,
		Policy: spec.Policy, Carry: spec.Carry, ReportAllowed: spec.ReportAllowed,
	}
}

// Session is a session as the API shows it.
type Session = sandbox.SessionInfo

// Sessions is the body of GET /v1/sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// Decision is one exec decision.
type Decision = sandbox.Decision

// Exit is how a process ended.
type Exit struct {
	ExitCode      int       `json:"exit_code"`
	Signal        int       `json:"signal"`
	TimedOut      bool      `json:"timed_out"`
	KillRequested bool      `json:"kill_requested"`
	StartedAt     time.Time `json:"started_at"`
	ExitedAt      time.Time `json:"exited_at"`
	DurationMs    int64     `json:"duration_ms"`
	Orphans       int       `json:"orphans"`
	Error         string    `json:"error,omitempty"`
	Denied        bool      `json:"denied"`
	Lost          bool      `json:"lost"`
}

// ExitOf converts e.
func ExitOf(e sandbox.ExitInfo) Exit {
	return Exit{
		ExitCode: e.ExitCode, Signal: e.Signal, TimedOut: e.TimedOut, KillRequested: e.KillRequested,
		StartedAt: e.StartedAt, ExitedAt: e.ExitedAt, DurationMs: time.Duration(e.Duration).Milliseconds(),
		Orphans: e.Orphans, Error: e.Error, Denied: e.Denied, Lost: e.Lost,
	}
}

// Info converts e back. The duration is the exit time minus the start
// time (the wire carries milliseconds only).
func (e Exit) Info() sandbox.ExitInfo {
	d := e.ExitedAt.Sub(e.StartedAt)
	if e.ExitedAt.IsZero() || e.StartedAt.IsZero() {
		d = time.Duration(e.DurationMs) * time.Millisecond
	}
	return sandbox.ExitInfo{
		ExitCode: e.ExitCode, Signal: e.Signal, TimedOut: e.TimedOut, KillRequested: e.KillRequested,
		StartedAt: e.StartedAt, ExitedAt: e.ExitedAt, Duration: sandbox.Duration(d),
		Orphans: e.Orphans, Error: e.Error, Denied: e.Denied, Lost: e.Lost,
	}
}

// ExecRequest is the body of POST /v1/exec. Exactly one of Argv and Script
// is set.
type ExecRequest struct {
	Argv   []string `json:"argv,omitempty"`
	Script string   `json:"script,omitempty"`
	// SessionID is a session's id or name; empty runs the command in a
	// throwaway sandbox made from Sandbox.
	SessionID string          `json:"session_id,omitempty"`
	Sandbox   *SessionRequest `json:"sandbox,omitempty"`
	Cwd       string          `json:"cwd,omitempty"`
	Env       Env             `json:"env,omitempty"`
	// Stdin is the command's whole input as text, StdinB64 as bytes;
	// neither means /dev/null.
	Stdin       *string `json:"stdin,omitempty"`
	StdinB64    *string `json:"stdin_b64,omitempty"`
	TimeoutMs   int64   `json:"timeout_ms,omitempty"`
	KillGraceMs int64   `json:"kill_grace_ms,omitempty"`
	MaxOutput   int     `json:"max_output,omitempty"`
	// Encoding is "text" (default: stdout and stderr as UTF-8 strings) or
	// "base64" (stdout_b64 and stderr_b64, byte-exact). The query
	// parameter ?encoding= does the same.
	Encoding string `json:"encoding,omitempty"`
}

// Request converts r; the session id is copied as is.
func (r ExecRequest) Request() (sandbox.ExecRequest, error) {
	req := sandbox.ExecRequest{
		Session: r.SessionID, Argv: r.Argv, Script: r.Script, Dir: r.Cwd, Env: r.Env,
		Timeout: msDuration(r.TimeoutMs), KillGrace: msDuration(r.KillGraceMs), MaxOutput: r.MaxOutput,
	}
	if r.Sandbox != nil {
		spec := r.Sandbox.Spec()
		req.Sandbox = &spec
	}
	switch {
	case r.Stdin != nil && r.StdinB64 != nil:
		return req, fmt.Errorf("%w: both stdin and stdin_b64", sandbox.ErrInvalid)
	case r.Stdin != nil:
		req.Stdin = []byte(*r.Stdin)
	case r.StdinB64 != nil:
		b, err := base64.StdEncoding.DecodeString(*r.StdinB64)
		if err != nil {
			return req, fmt.Errorf("%w: stdin_b64: %v", sandbox.ErrInvalid, err)
		}
		req.Stdin = b
	}
	if r.TimeoutMs < 0 || r.KillGraceMs < 0 || r.MaxOutput < 0 {
		return req, fmt.Errorf("%w: timeout_ms, kill_grace_ms and max_output must not be negative", sandbox.ErrInvalid)
	}
	switch r.Encoding {
	case "", EncodingText, EncodingBase64:
	default:
		return req, fmt.Errorf("%w: encoding %q (want text or base64)", sandbox.ErrInvalid, r.Encoding)
	}
	return req, nil
}

// ExecRequestOf converts req for the wire, with bytes as base64.
func ExecRequestOf(req sandbox.ExecRequest) ExecRequest {
	r := ExecRequest{
		Argv: req.Argv, Script: req.Script, SessionID: req.Session, Cwd: req.Dir, Env: req.Env,
		TimeoutMs: durationMs(req.Timeout), KillGraceMs: durationMs(req.KillGrace), MaxOutput: req.MaxOutput,
		Encoding: EncodingBase64,
	}
	if req.Sandbox != nil {
		sr := SessionRequestOf(*req.Sandbox)
		r.Sandbox = &sr
	}
	if req.Stdin != nil {
		s := base64.StdEncoding.EncodeToString(req.Stdin)
		r.StdinB64 = &s
	}
	return r
}

// ExecResult is the body POST /v1/exec answers with. In text encoding
// Stdout and Stderr are set (bytes that are not UTF-8 become U+FFFD and
// the *_lossy flag says so); in base64 encoding StdoutB64 and StderrB64.
type ExecResult struct {
	Exit
	Stdout          *string    `json:"stdout,omitempty"`
	Stderr          *string    `json:"stderr,omitempty"`
	StdoutB64       *string    `json:"stdout_b64,omitempty"`
	StderrB64       *string    `json:"stderr_b64,omitempty"`
	StdoutLossy     bool       `json:"stdout_lossy,omitempty"`
	StderrLossy     bool       `json:"stderr_lossy,omitempty"`
	StdoutTruncated bool       `json:"stdout_truncated"`
	StderrTruncated bool       `json:"stderr_truncated"`
	Decisions       []Decision `json:"decisions"`
	// Cwd is the session's carried working directory after the command.
	Cwd string `json:"cwd,omitempty"`
}

// ExecResultOf converts res in the given encoding.
func ExecResultOf(res sandbox.ExecResult, encoding string) ExecResult {
	out := ExecResult{
		Exit: ExitOf(res.ExitInfo), StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		Decisions: res.Decisions, Cwd: res.Cwd,
	}
	if out.Decisions == nil {
		out.Decisions = []Decision{}
	}
	if encoding == EncodingBase64 {
		o, e := base64.StdEncoding.EncodeToString(res.Stdout), base64.StdEncoding.EncodeToString(res.Stderr)
		out.StdoutB64, out.StderrB64 = &o, &e
		return out
	}
	o, e := string(res.Stdout), string(res.Stderr)
	out.Stdout, out.Stderr = &o, &e
	out.StdoutLossy, out.StderrLossy = !utf8.Valid(res.Stdout), !utf8.Valid(res.Stderr)
	return out
}

// Result converts r back (either encoding).
func (r ExecResult) Result() (sandbox.ExecResult, error) {
	res := sandbox.ExecResult{
		ExitInfo: r.Exit.Info(), StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Decisions: r.Decisions, Cwd: r.Cwd,
	}
	if len(res.Decisions) == 0 {
		res.Decisions = nil
	}
	var err error
	if res.Stdout, err = bytesOf(r.Stdout, r.StdoutB64); err != nil {
		return res, fmt.Errorf("stdout: %w", err)
	}
	if res.Stderr, err = bytesOf(r.Stderr, r.StderrB64); err != nil {
		return res, fmt.Errorf("stderr: %w", err)
	}
	return res, nil
}

func bytesOf(text, b64 *string) ([]byte, error) {
	switch {
	case b64 != nil:
		return base64.StdEncoding.DecodeString(*b64)
	case text != nil:
		return []byte(*text), nil
	}
	return []byte{}, nil
}

// StartRequest is the body of POST /v1/processes. Exactly one of Argv and
// Script is set.
type StartRequest struct {
	Argv      []string `json:"argv,omitempty"`
	Script    string   `json:"script,omitempty"`
	SessionID string   `json:"session_id"`
	Cwd       string   `json:"cwd,omitempty"`
	Env       Env      `json:"env,omitempty"`
	// Stdin is "none" (default: /dev/null) or "pipe" (written with POST
	// /v1/processes/{id}/stdin).
	Stdin       string `json:"stdin,omitempty"`
	TimeoutMs   int64  `json:"timeout_ms,omitempty"`
	KillGraceMs int64  `json:"kill_grace_ms,omitempty"`
}

// Request converts r; the session id is copied as is.
func (r StartRequest) Request() (sandbox.StartRequest, error) {
	if r.TimeoutMs < 0 || r.KillGraceMs < 0 {
		return sandbox.StartRequest{}, fmt.Errorf("%w: timeout_ms and kill_grace_ms must not be negative", sandbox.ErrInvalid)
	}
	return sandbox.StartRequest{
		Session: r.SessionID, Argv: r.Argv, Script: r.Script, Dir: r.Cwd, Env: r.Env,
		Stdin: sandbox.StdinMode(r.Stdin), Timeout: msDuration(r.TimeoutMs), KillGrace: msDuration(r.KillGraceMs),
	}, nil
}

// StartRequestOf converts req for the wire.
func StartRequestOf(req sandbox.StartRequest) StartRequest {
	return StartRequest{
		Argv: req.Argv, Script: req.Script, SessionID: req.Session, Cwd: req.Dir, Env: req.Env,
		Stdin: string(req.Stdin), TimeoutMs: durationMs(req.Timeout), KillGraceMs: durationMs(req.KillGrace),
	}
}

// Process is a started process as the API shows it.
type Process struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Argv      []string  `json:"argv,omitempty"`
	Script    string    `json:"script,omitempty"`
	Cwd       string    `json:"cwd"`
	State     string    `json:"state"`
	StartedAt time.Time `json:"started_at"`
	Stdin     string    `json:"stdin"`
	Exit      *Exit     `json:"exit,omitempty"`
	// LastEvent is the cursor of the newest event.
	LastEvent uint64 `json:"last_event"`
}

// ProcessOf converts p; ids are copied as they are.
func ProcessOf(p sandbox.ProcessInfo) Process {
	out := Process{
		ID: p.ID, SessionID: p.Session, Argv: p.Argv, Script: p.Script, Cwd: p.Dir, State: string(p.State),
		StartedAt: p.StartedAt, Stdin: string(p.Stdin), LastEvent: p.LastEvent,
	}
	if p.Exit != nil {
		e := ExitOf(*p.Exit)
		out.Exit = &e
	}
	return out
}

// Info converts p back.
func (p Process) Info() sandbox.ProcessInfo {
	out := sandbox.ProcessInfo{
		ID: p.ID, Session: p.SessionID, Argv: p.Argv, Script: p.Script, Dir: p.Cwd, State: sandbox.ProcessState(p.State),
		StartedAt: p.StartedAt, Stdin: sandbox.StdinMode(p.Stdin), LastEvent: p.LastEvent,
	}
	if p.Exit != nil {
		e := p.Exit.Info()
		out.Exit = &e
	}
	return out
}

// Processes is the body of GET /v1/processes.
type Processes struct {
	Processes []Process `json:"processes"`
}

// SignalRequest is the body of POST /v1/processes/{id}/signal.
type SignalRequest struct {
	Signal Signal `json:"signal"`
	// Scope is "tree" (default: every process of the tree) or "process"
	// (the leader only).
	Scope string `json:"scope,omitempty"`
}

// KillRequest is the body of POST /v1/processes/{id}/kill. GraceMs is the
// time between SIGTERM and SIGKILL (default DefaultKillGraceMs; 0 sends
// SIGKILL at once).
type KillRequest struct {
	GraceMs *int64 `json:"grace_ms,omitempty"`
}

// Event is one event of a server-sent event stream (the data line; the
// event's id is Seq and its type Kind). Output is Text when it is valid
// UTF-8, else DataB64.
type Event struct {
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Text     *string   `json:"text,omitempty"`
	DataB64  *string   `json:"data_b64,omitempty"`
	Decision *Decision `json:"decision,omitempty"`
	Exit     *Exit     `json:"exit,omitempty"`
	// Dropped counts the events lost to the retention buffer (kind
	// "truncated").
	Dropped uint64 `json:"dropped,omitempty"`
}

// EventOf converts ev.
func EventOf(ev sandbox.Event) Event {
	out := Event{Seq: ev.Seq, Time: ev.Time, Kind: string(ev.Kind), Decision: ev.Decision, Dropped: ev.Dropped}
	if ev.Data != nil {
		if utf8.Valid(ev.Data) {
			s := string(ev.Data)
			out.Text = &s
		} else {
			s := base64.StdEncoding.EncodeToString(ev.Data)
			out.DataB64 = &s
		}
	}
	if ev.Exit != nil {
		e := ExitOf(*ev.Exit)
		out.Exit = &e
	}
	return out
}

// SandboxEvent converts e back.
func (e Event) SandboxEvent() (sandbox.Event, error) {
	out := sandbox.Event{Seq: e.Seq, Time: e.Time, Kind: sandbox.EventKind(e.Kind), Decision: e.Decision, Dropped: e.Dropped}
	if e.Text != nil || e.DataB64 != nil {
		b, err := bytesOf(e.Text, e.DataB64)
		if err != nil {
			return out, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		out.Data = b
	}
	if e.Exit != nil {
		x := e.Exit.Info()
		out.Exit = &x
	}
	return out, nil
}

// Shutdown is the body POST /v1/shutdown answers with.
type Shutdown struct {
	ShuttingDown bool `json:"shutting_down"`
}

func msDuration(ms int64) sandbox.Duration {
	return sandbox.Duration(time.Duration(ms) * time.Millisecond)
}

// durationMs rounds a positive duration up to a whole millisecond, so a
// sub-millisecond timeout is not lost.
func durationMs(d sandbox.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((time.Duration(d) + time.Millisecond - 1) / time.Millisecond)
}
