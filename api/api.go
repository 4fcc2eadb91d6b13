package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Route paths. Path parameters are written as in net/http patterns.
const (
	PathHealth        = "/v1/health"
	PathSessions      = "/v1/sessions"
	PathSession       = "/v1/sessions/{id}"
	PathDecisions     = "/v1/sessions/{id}/decisions"
	PathAsk           = "/v1/sessions/{id}/asks/{ask}"
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
	// EventResult is the event that ends a streamed POST /v1/exec
	// (?stream=1): its data is the ExecResult. The stdout and stderr
	// events before it are Events; an "error" event (an Error) ends a
	// stream that failed after output was sent.
	EventResult = "result"
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
	Dir string   `json:"dir,omitempty"`
	RW  []string `json:"rw,omitempty"`
	RO  []string `json:"ro,omitempty"`
	Net string   `json:"net,omitempty"`
	// Isolation is auto (default), bwrap, landlock or none.
	Isolation string `json:"isolation,omitempty"`
	Env       Env    `json:"env,omitempty"`
	Policy    string `json:"policy,omitempty"`
	Carry     bool   `json:"carry,omitempty"`
	// AskTimeoutMs holds execs and connections the policy asks about for
	// up to this long, for a client to answer (POST .../asks/{ask}); 0
	// denies them at once.
	AskTimeoutMs int64 `json:"ask_timeout_ms,omitempty"`
	// IdleTimeoutMs closes the session after this long without a command
	// running in it; 0 never.
	IdleTimeoutMs int64 `json:"idle_timeout_ms,omitempty"`
	// ReportAllowed adds allowed execs to decisions and events.
	ReportAllowed bool `json:"report_allowed,omitempty"`
}

// Session is a session as the API shows it.
type Session struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	Carry     bool      `json:"carry,omitempty"`
	// Cwd is the carried working directory (carry mode).
	Cwd string `json:"cwd,omitempty"`
	// Processes counts the started processes still on record.
	Processes int `json:"processes"`
	// Error says why a lost session was lost.
	Error string `json:"error,omitempty"`
	// LastDecision is the cursor of the session's newest exec decision.
	LastDecision uint64 `json:"last_decision"`
}

// Sessions is the body of GET /v1/sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// ExecDecision is one exec decided by a session's policy.
type ExecDecision struct {
	Time time.Time `json:"time"`
	// Decision is "allow" or "deny"; "ask" while the exec waits for an
	// answer (the final decision follows as its own event).
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
	// when known (session-wide decision streams; empty in exec results).
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
	// AskID is set on a pending ask (decision "ask" in a session with
	// ask_timeout_ms): answer it with POST /v1/sessions/{id}/asks/{ask_id}
	// before AskDeadline, or it is denied.
	AskID       string     `json:"ask_id,omitempty"`
	AskDeadline *time.Time `json:"ask_deadline,omitempty"`
}

// AskAnswer is the body of POST /v1/sessions/{id}/asks/{ask}.
type AskAnswer struct {
	Allow bool `json:"allow"`
	// Remember applies the answer to the session's later asks about the
	// same argv (exec) or host and port (net).
	Remember bool `json:"remember,omitempty"`
}

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

// ExecRequest is the body of POST /v1/exec. Exactly one of Argv and Script
// is set.
type ExecRequest struct {
	Argv   []string `json:"argv,omitempty"`
	Script string   `json:"script,omitempty"`
	// Shell is the shell that runs Script: "sh" (default) or "bash".
	Shell string `json:"shell,omitempty"`
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

// ExecResult is the body POST /v1/exec answers with. In text encoding
// Stdout and Stderr are set (bytes that are not UTF-8 become U+FFFD and
// the *_lossy flag says so); in base64 encoding StdoutB64 and StderrB64.
type ExecResult struct {
	Exit
	Stdout          *string        `json:"stdout,omitempty"`
	Stderr          *string        `json:"stderr,omitempty"`
	StdoutB64       *string        `json:"stdout_b64,omitempty"`
	StderrB64       *string        `json:"stderr_b64,omitempty"`
	StdoutLossy     bool           `json:"stdout_lossy,omitempty"`
	StderrLossy     bool           `json:"stderr_lossy,omitempty"`
	StdoutTruncated bool           `json:"stdout_truncated"`
	StderrTruncated bool           `json:"stderr_truncated"`
	Decisions       []ExecDecision `json:"decisions"`
	// Cwd is the session's carried working directory after the command.
	Cwd string `json:"cwd,omitempty"`
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
	Seq      uint64        `json:"seq"`
	Time     time.Time     `json:"time"`
	Kind     string        `json:"kind"`
	Text     *string       `json:"text,omitempty"`
	DataB64  *string       `json:"data_b64,omitempty"`
	Decision *ExecDecision `json:"decision,omitempty"`
	Exit     *Exit         `json:"exit,omitempty"`
	// Dropped counts the events lost to the retention buffer (kind
	// "truncated").
	Dropped uint64 `json:"dropped,omitempty"`
}

// Shutdown is the body POST /v1/shutdown answers with.
type Shutdown struct {
	ShuttingDown bool `json:"shutting_down"`
}
