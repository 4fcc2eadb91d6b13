package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// Kind names an agent.
type Kind string

const (
	Claude Kind = "claude"
	Codex  Kind = "codex"
	Gemini Kind = "gemini"
	Cursor Kind = "cursor"
)

// agentNames are the agents' names for messages.
var agentNames = map[Kind]string{Claude: "Claude Code", Codex: "Codex", Gemini: "Gemini CLI", Cursor: "Cursor"}

// Kinds are the agents cordon knows, in the order help lists them.
var Kinds = []Kind{Claude, Codex, Gemini, Cursor}

// ParseKind returns the agent named s.
func ParseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(s))
	if slices.Contains(Kinds, k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown agent %q: want claude, codex, gemini or cursor", s)
}

// Limits on what a hook reads. A payload or command past them is refused:
// a command line that long is not one a person reviews, and reading
// without a bound would let one tool call exhaust cordon.
const (
	MaxPayload = 4 << 20
	MaxCommand = 256 << 10
)

// ErrPayload marks a payload that cannot be read: not JSON, a field
// missing or of the wrong type, over a limit. The hook denies.
var ErrPayload = errors.New("hook payload")

// Call is one tool call an agent is about to make, as its hook payload
// describes it.
type Call struct {
	Agent Kind
	// Event is the hook event the payload names (PreToolUse, BeforeTool,
	// preToolUse, beforeShellExecution), "" when it names none.
	Event string
	// Session is the agent's session (conversation) id.
	Session string
	// Cwd is the agent's working directory for the call.
	Cwd string
	// Tool is the tool's name as the agent gives it.
	Tool string
	// Shell: the tool runs shell commands (Command is set). NoShell: the
	// tool is known to run none. Neither: an unknown tool.
	Shell, NoShell bool
	// Command is the shell command the tool would run.
	Command string
	// Dir is the directory the tool would run Command in, when the tool
	// takes one (Gemini's dir_path); "" means Cwd.
	Dir string
	// input is the tool's input object as given: an answer that rewrites
	// the command keeps its other fields (description, timeout...).
	input map[string]json.RawMessage
}

// The tools that run shell commands, and those known to run none, per
// agent. A tool in neither list is unknown: the hook cannot tell whether
// it runs commands, so it denies (fail closed) with a reason that says to
// match only the shell tool.
var (
	shellTools = map[Kind][]string{
		Claude: {"Bash"},
		Codex:  {"Bash", "shell", "local_shell", "exec_command", "shell_command", "container.exec"},
		Gemini: {"run_shell_command"},
		Cursor: {"Shell", "Terminal", "run_terminal_cmd"},
	}
	otherTools = map[Kind][]string{
		Claude: {"Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "Task", "TodoWrite", "NotebookEdit", "NotebookRead", "ExitPlanMode"},
		Codex:  {"apply_patch", "read_file", "list_dir", "grep_files", "view_image", "web_search", "update_plan"},
		Gemini: {"read_file", "read_many_files", "write_file", "replace", "glob", "search_file_content", "list_directory", "web_fetch", "google_web_search", "save_memory", "write_todos"},
		Cursor: {"Read", "Write", "Edit", "StrReplace", "Delete", "Grep", "Glob", "LS", "WebSearch", "WebFetch", "TodoWrite"},
	}
)

// Parse reads one hook payload of agent k. Every error wraps ErrPayload.
func Parse(k Kind, r io.Reader) (Call, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return Call{}, fmt.Errorf("%w: reading stdin: %v", ErrPayload, err)
	}
	if len(b) > MaxPayload {
		return Call{}, fmt.Errorf("%w: over %d bytes", ErrPayload, MaxPayload)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return Call{}, fmt.Errorf("%w: not a JSON object: %v", ErrPayload, err)
	}
	if raw == nil {
		return Call{}, fmt.Errorf("%w: not a JSON object", ErrPayload)
	}
	c := Call{Agent: k}
	str := func(m map[string]json.RawMessage, key string) (string, error) {
		v, ok := m[key]
		if !ok || string(v) == "null" {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%w: %s is not a string", ErrPayload, key)
		}
		return s, nil
	}
	fields := []struct {
		dst *string
		key string
	}{{&c.Event, "hook_event_name"}, {&c.Cwd, "cwd"}, {&c.Tool, "tool_name"}}
	sessionKey := "session_id"
	if k == Cursor {
		sessionKey = "conversation_id"
	}
	fields = append(fields, struct {
		dst *string
		key string
	}{&c.Session, sessionKey})
	for _, f := range fields {
		if *f.dst, err = str(raw, f.key); err != nil {
			return Call{}, err
		}
	}
	if v, ok := raw["tool_input"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &c.input); err != nil || c.input == nil {
			return Call{}, fmt.Errorf("%w: tool_input is not an object", ErrPayload)
		}
	}
	if k == Cursor && c.Event == "beforeShellExecution" {
		// The older event: the command and its directory at the top
		// level, no tool name.
		c.Tool, c.input = "Shell", map[string]json.RawMessage{"command": raw["command"]}
		if c.input["command"] == nil {
			delete(c.input, "command")
		}
	}
	if k == Cursor && c.Cwd == "" {
		var roots []string
		if v, ok := raw["workspace_roots"]; ok && json.Unmarshal(v, &roots) == nil && len(roots) > 0 {
			c.Cwd = roots[0]
		}
	}
	if c.Tool == "" {
		return Call{}, fmt.Errorf("%w: no tool_name", ErrPayload)
	}
	c.Shell = slices.Contains(shellTools[k], c.Tool)
	c.NoShell = slices.Contains(otherTools[k], c.Tool)
	if !c.Shell {
		return c, nil
	}
	if v, ok := c.input["command"]; ok && len(v) > 0 && v[0] == '[' {
		// Codex's older shell tool takes an argv.
		var argv []string
		if err := json.Unmarshal(v, &argv); err != nil {
			return Call{}, fmt.Errorf("%w: tool_input.command is neither a string nor a list of strings", ErrPayload)
		}
		c.Command = shellJoin(argv)
	} else if c.Command, err = str(c.input, "command"); err != nil {
		return Call{}, fmt.Errorf("%w (in tool_input)", err)
	}
	if c.Command == "" {
		return Call{}, fmt.Errorf("%w: tool_input.command is missing or empty", ErrPayload)
	}
	if len(c.Command) > MaxCommand {
		return Call{}, fmt.Errorf("%w: the command is %d bytes, over cordon's limit of %d", ErrPayload, len(c.Command), MaxCommand)
	}
	for _, key := range []string{"dir_path", "cwd", "workdir"} {
		if c.Dir, err = str(c.input, key); err != nil {
			return Call{}, fmt.Errorf("%w (in tool_input)", err)
		}
		if c.Dir != "" {
			break
		}
	}
	if c.Session == "" {
		return Call{}, fmt.Errorf("%w: no %s: cordon keys the agent's sandbox session by it", ErrPayload, sessionKey)
	}
	if c.Cwd == "" {
		return Call{}, fmt.Errorf("%w: no cwd: cordon finds the policy from it", ErrPayload)
	}
	if strings.ContainsRune(c.Command, 0) || strings.ContainsRune(c.Cwd, 0) || strings.ContainsRune(c.Dir, 0) {
		return Call{}, fmt.Errorf("%w: a NUL byte in the command or a directory, which no shell can carry", ErrPayload)
	}
	// A directory the tool names is honoured when it is not the agent's
	// own: the agent's directory is where the session starts, and after
	// that the directory the session's commands cd'd to is kept.
	if c.Dir != "" && !path.IsAbs(c.Dir) {
		c.Dir = path.Join(c.Cwd, c.Dir)
	}
	if path.Clean(c.Dir) == path.Clean(c.Cwd) {
		c.Dir = ""
	}
	return c, nil
}

// Verdict is what a hook answers.
type Verdict int

const (
	// Pass: no opinion; the agent goes on as without the hook (a tool
	// that runs no shell command).
	Pass Verdict = iota
	// Allow runs Answer.Command instead of the call's command.
	Allow
	// Ask hands the call to the agent's own approval prompt, with the
	// command rewritten as for Allow.
	Ask
	// Deny refuses the call; Reason is what the agent (the model) reads.
	Deny
)

// Answer is a hook's answer to a Call.
type Answer struct {
	Verdict Verdict
	Reason  string
	// Command replaces the call's command (Allow and Ask).
	Command string
	// Failed: the hook could not read or decide the call (a bad payload,
	// cordon's own failure); the answer is a deny that agents which take
	// one also get as exit code 2 with the reason on stderr.
	Failed bool
}

// Encoded is an answer as the hook process gives it: stdout, stderr and
// its exit code.
type Encoded struct {
	Stdout []byte
	Stderr string
	Code   int
}

// Encode writes a in agent k's format. c may be the zero Call when the
// payload could not be read.
//
//   - Claude Code and Codex: hookSpecificOutput with permissionDecision
//     (allow, ask, deny), permissionDecisionReason and updatedInput.
//     Codex (codex-rs/hooks output_parser.rs) takes only allow with
//     updatedInput, deny with a non-empty reason, or no decision: any
//     other shape is an invalid answer after which it runs the command
//     unchanged. So Ask is a deny for Codex, as for Gemini, and every
//     allow carries updatedInput.
//   - Gemini CLI: decision (allow, deny), reason, and
//     hookSpecificOutput.tool_input, which Gemini merges into the tool's
//     arguments. Gemini's hooks cannot ask: Ask is a deny whose reason
//     says so.
//   - Cursor: permission (allow, ask, deny), user_message, agent_message
//     and updated_input.
//
// A failure is a deny on stdout, the reason on stderr and exit code 2,
// which every one of these agents reads as "blocked" whatever it makes of
// stdout.
func (a Answer) Encode(k Kind, c Call) Encoded {
	var out any
	verdict := a.Verdict
	reason := a.Reason
	if verdict == Ask && (k == Gemini || k == Codex) {
		// Gemini's hooks have no ask. Codex reads permissionDecision
		// "ask" (and updatedInput without "allow") as an invalid answer
		// and then runs the command as it was, outside cordon: deny.
		verdict = Deny
		reason = fmt.Sprintf("cordon's policy asks for a person's approval, which %s's hooks cannot request: %s; "+
			"run the command yourself, or allow it in the policy (an allow rule in cordon.yaml, or --allow on the hook line)", agentNames[k], reason)
	}
	if verdict == Deny && strings.TrimSpace(reason) == "" {
		// Codex reads a deny without a reason as invalid, and runs the
		// command.
		reason = "denied by cordon"
	}
	var input map[string]any
	if verdict == Allow || verdict == Ask {
		input = map[string]any{}
		for key, v := range c.input {
			input[key] = v
		}
		input["command"] = a.Command
		if k == Gemini {
			// Gemini merges this into the arguments: only the command.
			input = map[string]any{"command": a.Command}
		}
	}
	switch k {
	case Claude, Codex:
		hso := map[string]any{"hookEventName": "PreToolUse"}
		switch verdict {
		case Allow:
			hso["permissionDecision"] = "allow"
		case Ask:
			hso["permissionDecision"] = "ask"
		case Deny:
			hso["permissionDecision"] = "deny"
		}
		if verdict != Pass {
			hso["permissionDecisionReason"] = reason
		}
		if input != nil {
			hso["updatedInput"] = input
		}
		if verdict == Pass {
			out = map[string]any{}
		} else {
			out = map[string]any{"hookSpecificOutput": hso}
		}
	case Gemini:
		m := map[string]any{}
		switch verdict {
		case Allow:
			m["decision"] = "allow"
			m["hookSpecificOutput"] = map[string]any{"tool_input": input}
		case Deny:
			m["decision"] = "deny"
			m["reason"] = reason
		}
		out = m
	case Cursor:
		m := map[string]any{}
		switch verdict {
		case Pass:
			// {}: no opinion. An explicit allow could skip Cursor's own
			// approval of a tool cordon knows nothing about.
		case Allow, Ask:
			m["permission"] = map[Verdict]string{Allow: "allow", Ask: "ask"}[verdict]
			m["updated_input"] = input
			if verdict == Ask {
				m["user_message"] = reason
			}
		case Deny:
			m["permission"] = "deny"
			m["user_message"] = reason
			m["agent_message"] = reason
		}
		out = m
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	e := Encoded{Stdout: buf.Bytes()}
	if a.Failed {
		e.Stderr = "cordon: denied: " + reason + "\n"
		e.Code = 2
	}
	return e
}

// shellJoin quotes argv for a POSIX shell.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = Quote(s)
	}
	return strings.Join(q, " ")
}

// Quote quotes s as one word for bash, zsh and every POSIX shell: single
// quotes, a single quote inside is closed, escaped and reopened. Nothing
// inside single quotes is expanded, newlines and tabs included. Not
// mvdan.cc/sh's syntax.Quote: for POSIX it refuses newlines and tabs
// (agents send multi-line commands), and for bash it writes $'...', which
// sh does not read. s must not hold a NUL byte (Parse refuses those).
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
