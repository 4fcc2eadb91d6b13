// Package apiconv converts between package service's types (the Go
// library's) and package api's (the daemon's JSON wire format). The server
// converts requests from the wire and results to it; the client the other
// way round. Each pair of conversions is here, side by side, so the two
// directions cannot drift apart.
//
// Functions named after an api type (APIExit) convert to the wire; those
// named after a service type (ExitInfo) convert from it. Ids are copied as
// they are: the server maps them. Like both packages it converts between,
// it builds without cgo and on any OS, and does no I/O.
package apiconv

import (
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/service"
)

// SessionSpec converts r.
func SessionSpec(r api.SessionRequest) service.SessionSpec {
	return service.SessionSpec{
		Name: r.Name, Dir: r.Dir, RW: r.RW, RO: r.RO, Net: r.Net, Isolation: r.Isolation, Env: r.Env,
		Policy: r.Policy, Carry: r.Carry, ReportAllowed: r.ReportAllowed,
		IdleTimeout: msDuration(r.IdleTimeoutMs), AskTimeout: msDuration(r.AskTimeoutMs),
	}
}

// APISessionRequest converts spec (Ask cannot travel).
func APISessionRequest(spec service.SessionSpec) api.SessionRequest {
	return api.SessionRequest{
		Name: spec.Name, Dir: spec.Dir, RW: spec.RW, RO: spec.RO, Net: spec.Net, Isolation: spec.Isolation, Env: spec.Env,
		Policy: spec.Policy, Carry: spec.Carry, ReportAllowed: spec.ReportAllowed,
		IdleTimeoutMs: durationMs(spec.IdleTimeout), AskTimeoutMs: durationMs(spec.AskTimeout),
	}
}

// APISession converts info.
func APISession(info service.SessionInfo) api.Session {
	return api.Session{
		ID: info.ID, Name: info.Name, State: string(info.State), CreatedAt: info.CreatedAt, Carry: info.Carry,
		Cwd: info.Cwd, Processes: info.Processes, Error: info.Error, LastDecision: info.LastDecision,
	}
}

// SessionInfo converts s back.
func SessionInfo(s api.Session) service.SessionInfo {
	return service.SessionInfo{
		ID: s.ID, Name: s.Name, State: service.SessionState(s.State), CreatedAt: s.CreatedAt, Carry: s.Carry,
		Cwd: s.Cwd, Processes: s.Processes, Error: s.Error, LastDecision: s.LastDecision,
	}
}

// APIDecision converts d.
func APIDecision(d service.ExecDecision) api.ExecDecision {
	return api.ExecDecision{
		Time: d.Time, Decision: d.Decision, Asked: d.Asked, Rule: d.Rule, Argv: d.Argv,
		Program: d.Program, Pid: d.Pid, Process: d.Process,
		Kind: d.Kind, Host: d.Host, Port: d.Port, Addr: d.Addr,
		BytesUp: d.BytesUp, BytesDown: d.BytesDown, DurationMs: d.DurationMs,
		AskID: d.AskID, AskDeadline: timePtr(d.AskDeadline),
	}
}

// Decision converts d back.
func Decision(d api.ExecDecision) service.ExecDecision {
	out := service.ExecDecision{
		Time: d.Time, Decision: d.Decision, Asked: d.Asked, Rule: d.Rule, Argv: d.Argv,
		Program: d.Program, Pid: d.Pid, Process: d.Process,
		Kind: d.Kind, Host: d.Host, Port: d.Port, Addr: d.Addr,
		BytesUp: d.BytesUp, BytesDown: d.BytesDown, DurationMs: d.DurationMs,
		AskID: d.AskID,
	}
	if d.AskDeadline != nil {
		out.AskDeadline = *d.AskDeadline
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// APIExit converts e.
func APIExit(e service.ExitInfo) api.Exit {
	return api.Exit{
		ExitCode: e.ExitCode, Signal: e.Signal, TimedOut: e.TimedOut, KillRequested: e.KillRequested,
		StartedAt: e.StartedAt, ExitedAt: e.ExitedAt, DurationMs: time.Duration(e.Duration).Milliseconds(),
		Orphans: e.Orphans, Error: e.Error, Denied: e.Denied, Lost: e.Lost,
	}
}

// ExitInfo converts e back. The duration is the exit time minus the start
// time (the wire carries milliseconds only).
func ExitInfo(e api.Exit) service.ExitInfo {
	d := e.ExitedAt.Sub(e.StartedAt)
	if e.ExitedAt.IsZero() || e.StartedAt.IsZero() {
		d = time.Duration(e.DurationMs) * time.Millisecond
	}
	return service.ExitInfo{
		ExitCode: e.ExitCode, Signal: e.Signal, TimedOut: e.TimedOut, KillRequested: e.KillRequested,
		StartedAt: e.StartedAt, ExitedAt: e.ExitedAt, Duration: service.Duration(d),
		Orphans: e.Orphans, Error: e.Error, Denied: e.Denied, Lost: e.Lost,
	}
}

// ExecRequest converts and checks r; the session id is copied as is.
// Errors wrap service.ErrInvalid.
func ExecRequest(r api.ExecRequest) (service.ExecRequest, error) {
	req := service.ExecRequest{
		Session: r.SessionID, Argv: r.Argv, Script: r.Script, Shell: r.Shell, Dir: r.Cwd, Env: r.Env,
		Timeout: msDuration(r.TimeoutMs), KillGrace: msDuration(r.KillGraceMs), MaxOutput: r.MaxOutput,
	}
	if r.Sandbox != nil {
		spec := SessionSpec(*r.Sandbox)
		req.Sandbox = &spec
	}
	switch {
	case r.Stdin != nil && r.StdinB64 != nil:
		return req, fmt.Errorf("%w: both stdin and stdin_b64", service.ErrInvalid)
	case r.Stdin != nil:
		req.Stdin = []byte(*r.Stdin)
	case r.StdinB64 != nil:
		b, err := base64.StdEncoding.DecodeString(*r.StdinB64)
		if err != nil {
			return req, fmt.Errorf("%w: stdin_b64: %v", service.ErrInvalid, err)
		}
		req.Stdin = b
	}
	if r.TimeoutMs < 0 || r.KillGraceMs < 0 || r.MaxOutput < 0 {
		return req, fmt.Errorf("%w: timeout_ms, kill_grace_ms and max_output must not be negative", service.ErrInvalid)
	}
	switch r.Encoding {
	case "", api.EncodingText, api.EncodingBase64:
	default:
		return req, fmt.Errorf("%w: encoding %q (want text or base64)", service.ErrInvalid, r.Encoding)
	}
	return req, nil
}

// APIExecRequest converts req for the wire, with bytes as base64.
func APIExecRequest(req service.ExecRequest) api.ExecRequest {
	r := api.ExecRequest{
		Argv: req.Argv, Script: req.Script, Shell: req.Shell, SessionID: req.Session, Cwd: req.Dir, Env: req.Env,
		TimeoutMs: durationMs(req.Timeout), KillGraceMs: durationMs(req.KillGrace), MaxOutput: req.MaxOutput,
		Encoding: api.EncodingBase64,
	}
	if req.Sandbox != nil {
		sr := APISessionRequest(*req.Sandbox)
		r.Sandbox = &sr
	}
	if req.Stdin != nil {
		s := base64.StdEncoding.EncodeToString(req.Stdin)
		r.StdinB64 = &s
	}
	return r
}

// APIExecResult converts res in the given encoding (api.EncodingText or
// api.EncodingBase64; empty is text). It is the one way an exec result
// becomes JSON: the daemon's answer and "cordon exec --json" alike.
func APIExecResult(res service.ExecResult, encoding string) api.ExecResult {
	out := api.ExecResult{
		Exit: APIExit(res.ExitInfo), StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		Decisions: make([]api.ExecDecision, len(res.Decisions)), Cwd: res.Cwd,
	}
	for i, d := range res.Decisions {
		out.Decisions[i] = APIDecision(d)
	}
	if encoding == api.EncodingBase64 {
		o, e := base64.StdEncoding.EncodeToString(res.Stdout), base64.StdEncoding.EncodeToString(res.Stderr)
		out.StdoutB64, out.StderrB64 = &o, &e
		return out
	}
	o, e := string(res.Stdout), string(res.Stderr)
	out.Stdout, out.Stderr = &o, &e
	out.StdoutLossy, out.StderrLossy = !utf8.Valid(res.Stdout), !utf8.Valid(res.Stderr)
	return out
}

// ExecResult converts r back (either encoding).
func ExecResult(r api.ExecResult) (service.ExecResult, error) {
	res := service.ExecResult{
		ExitInfo: ExitInfo(r.Exit), StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Cwd: r.Cwd,
	}
	for _, d := range r.Decisions {
		res.Decisions = append(res.Decisions, Decision(d))
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

// StartRequest converts and checks r; the session id is copied as is.
func StartRequest(r api.StartRequest) (service.StartRequest, error) {
	if r.TimeoutMs < 0 || r.KillGraceMs < 0 {
		return service.StartRequest{}, fmt.Errorf("%w: timeout_ms and kill_grace_ms must not be negative", service.ErrInvalid)
	}
	return service.StartRequest{
		Session: r.SessionID, Argv: r.Argv, Script: r.Script, Dir: r.Cwd, Env: r.Env,
		Stdin: service.StdinMode(r.Stdin), Timeout: msDuration(r.TimeoutMs), KillGrace: msDuration(r.KillGraceMs),
	}, nil
}

// APIStartRequest converts req for the wire.
func APIStartRequest(req service.StartRequest) api.StartRequest {
	return api.StartRequest{
		Argv: req.Argv, Script: req.Script, SessionID: req.Session, Cwd: req.Dir, Env: req.Env,
		Stdin: string(req.Stdin), TimeoutMs: durationMs(req.Timeout), KillGraceMs: durationMs(req.KillGrace),
	}
}

// APIProcess converts p.
func APIProcess(p service.ProcessInfo) api.Process {
	out := api.Process{
		ID: p.ID, SessionID: p.Session, Argv: p.Argv, Script: p.Script, Cwd: p.Dir, State: string(p.State),
		StartedAt: p.StartedAt, Stdin: string(p.Stdin), LastEvent: p.LastEvent,
	}
	if p.Exit != nil {
		e := APIExit(*p.Exit)
		out.Exit = &e
	}
	return out
}

// ProcessInfo converts p back.
func ProcessInfo(p api.Process) service.ProcessInfo {
	out := service.ProcessInfo{
		ID: p.ID, Session: p.SessionID, Argv: p.Argv, Script: p.Script, Dir: p.Cwd, State: service.ProcessState(p.State),
		StartedAt: p.StartedAt, Stdin: service.StdinMode(p.Stdin), LastEvent: p.LastEvent,
	}
	if p.Exit != nil {
		e := ExitInfo(*p.Exit)
		out.Exit = &e
	}
	return out
}

// APIEvent converts ev. Output is text when it is valid UTF-8, else base64.
func APIEvent(ev service.Event) api.Event {
	out := api.Event{Seq: ev.Seq, Time: ev.Time, Kind: string(ev.Kind), Dropped: ev.Dropped}
	if ev.Data != nil {
		if utf8.Valid(ev.Data) {
			s := string(ev.Data)
			out.Text = &s
		} else {
			s := base64.StdEncoding.EncodeToString(ev.Data)
			out.DataB64 = &s
		}
	}
	if ev.Decision != nil {
		d := APIDecision(*ev.Decision)
		out.Decision = &d
	}
	if ev.Exit != nil {
		e := APIExit(*ev.Exit)
		out.Exit = &e
	}
	return out
}

// Event converts e back.
func Event(e api.Event) (service.Event, error) {
	out := service.Event{Seq: e.Seq, Time: e.Time, Kind: service.EventKind(e.Kind), Dropped: e.Dropped}
	if e.Text != nil || e.DataB64 != nil {
		b, err := bytesOf(e.Text, e.DataB64)
		if err != nil {
			return out, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		out.Data = b
	}
	if e.Decision != nil {
		d := Decision(*e.Decision)
		out.Decision = &d
	}
	if e.Exit != nil {
		x := ExitInfo(*e.Exit)
		out.Exit = &x
	}
	return out, nil
}

func msDuration(ms int64) service.Duration {
	return service.Duration(time.Duration(ms) * time.Millisecond)
}

// durationMs rounds a positive duration up to a whole millisecond, so a
// sub-millisecond timeout is not lost.
func durationMs(d service.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((time.Duration(d) + time.Millisecond - 1) / time.Millisecond)
}
