package client

import (
	"bytes"
	"context"
	"iter"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/internal/apiconv"
	"github.com/cordon-sandbox/cordon/service"
)

// Health asks the daemon who it is; it is how liveness is decided.
func (c *Client) Health(ctx context.Context) (api.Health, error) {
	var h api.Health
	err := c.call(ctx, "GET", api.PathHealth, nil, &h)
	return h, err
}

// Shutdown asks the daemon to stop; it closes its sessions and removes its
// files before it exits.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.call(ctx, "POST", api.PathShutdown, nil, nil)
}

// CreateSession implements service.Service. spec.Ask cannot travel: a
// session made through the daemon denies what its policy says to ask
// about.
func (c *Client) CreateSession(ctx context.Context, spec service.SessionSpec) (service.SessionInfo, error) {
	var out api.Session
	if err := c.call(ctx, "POST", api.PathSessions, apiconv.APISessionRequest(spec), &out); err != nil {
		return service.SessionInfo{}, err
	}
	return apiconv.SessionInfo(out), nil
}

// GetSession implements service.Service; session is an id or a name.
func (c *Client) GetSession(ctx context.Context, session string) (service.SessionInfo, error) {
	var out api.Session
	if err := c.call(ctx, "GET", "/v1/sessions/"+esc(session), nil, &out); err != nil {
		return service.SessionInfo{}, err
	}
	return apiconv.SessionInfo(out), nil
}

// ListSessions implements service.Service.
func (c *Client) ListSessions(ctx context.Context) ([]service.SessionInfo, error) {
	var out api.Sessions
	if err := c.call(ctx, "GET", api.PathSessions, nil, &out); err != nil {
		return nil, err
	}
	list := make([]service.SessionInfo, len(out.Sessions))
	for i, s := range out.Sessions {
		list[i] = apiconv.SessionInfo(s)
	}
	return list, nil
}

// CloseSession implements service.Service.
func (c *Client) CloseSession(ctx context.Context, session string) error {
	return c.call(ctx, "DELETE", "/v1/sessions/"+esc(session), nil, nil)
}

// Exec implements service.Service. Output travels as base64, byte for
// byte. Cancelling ctx closes the connection, and the daemon kills the
// command's tree.
func (c *Client) Exec(ctx context.Context, req service.ExecRequest) (service.ExecResult, error) {
	if req.Output != nil || req.OnDecision != nil {
		return c.execStream(ctx, req)
	}
	var out api.ExecResult
	if err := c.call(ctx, "POST", api.PathExec, apiconv.APIExecRequest(req), &out); err != nil {
		return service.ExecResult{}, err
	}
	return apiconv.ExecResult(out)
}

// AnswerAsk answers a session's pending ask (the AskID of an "ask"
// decision on its stream).
func (c *Client) AnswerAsk(ctx context.Context, session, ask string, a service.AskAnswer) error {
	return c.call(ctx, "POST", "/v1/sessions/"+esc(session)+"/asks/"+esc(ask), api.AskAnswer{Allow: a.Allow, Remember: a.Remember}, nil)
}

// Start implements service.Service.
func (c *Client) Start(ctx context.Context, req service.StartRequest) (service.ProcessInfo, error) {
	var out api.Process
	if err := c.call(ctx, "POST", api.PathProcesses, apiconv.APIStartRequest(req), &out); err != nil {
		return service.ProcessInfo{}, err
	}
	return apiconv.ProcessInfo(out), nil
}

// GetProcess implements service.Service. The daemon's process ids are
// unique across sessions: session is not needed and not checked.
func (c *Client) GetProcess(ctx context.Context, _, process string) (service.ProcessInfo, error) {
	var out api.Process
	if err := c.call(ctx, "GET", "/v1/processes/"+esc(process), nil, &out); err != nil {
		return service.ProcessInfo{}, err
	}
	return apiconv.ProcessInfo(out), nil
}

// ListProcesses implements service.Service; an empty session lists every
// session's processes.
func (c *Client) ListProcesses(ctx context.Context, session string) ([]service.ProcessInfo, error) {
	path := api.PathProcesses
	if session != "" {
		path += "?session_id=" + url.QueryEscape(session)
	}
	var out api.Processes
	if err := c.call(ctx, "GET", path, nil, &out); err != nil {
		return nil, err
	}
	ps := make([]service.ProcessInfo, len(out.Processes))
	for i, p := range out.Processes {
		ps[i] = apiconv.ProcessInfo(p)
	}
	return ps, nil
}

// Events implements service.Service over a followed event stream.
func (c *Client) Events(ctx context.Context, _, process string, after uint64) iter.Seq2[service.Event, error] {
	return c.stream(ctx, "/v1/processes/"+esc(process)+"/events?follow=1&after="+strconv.FormatUint(after, 10), true)
}

// Decisions yields a session's exec decisions after the cursor and ends
// when the session ends (see service.Manager.Decisions).
func (c *Client) Decisions(ctx context.Context, session string, after uint64) iter.Seq2[service.Event, error] {
	return c.stream(ctx, "/v1/sessions/"+esc(session)+"/decisions?follow=1&after="+strconv.FormatUint(after, 10), false)
}

// Wait implements service.Service.
func (c *Client) Wait(ctx context.Context, _, process string) (service.ExitInfo, error) {
	var out api.Exit
	if err := c.call(ctx, "POST", "/v1/processes/"+esc(process)+"/wait", nil, &out); err != nil {
		return service.ExitInfo{}, err
	}
	return apiconv.ExitInfo(out), nil
}

// Signal implements service.Service.
func (c *Client) Signal(ctx context.Context, _, process string, sig syscall.Signal, scope service.Scope) error {
	req := api.SignalRequest{Signal: api.Signal(strconv.Itoa(int(sig))), Scope: string(scope)}
	return c.call(ctx, "POST", "/v1/processes/"+esc(process)+"/signal", req, nil)
}

// Kill implements service.Service.
func (c *Client) Kill(ctx context.Context, _, process string, grace time.Duration) (service.ExitInfo, error) {
	ms := grace.Milliseconds()
	if grace > 0 && ms == 0 {
		ms = 1
	}
	var out api.Exit
	if err := c.call(ctx, "POST", "/v1/processes/"+esc(process)+"/kill", api.KillRequest{GraceMs: &ms}, &out); err != nil {
		return service.ExitInfo{}, err
	}
	return apiconv.ExitInfo(out), nil
}

// WriteStdin implements service.Service.
func (c *Client) WriteStdin(ctx context.Context, _, process string, data []byte) error {
	return c.call(ctx, "POST", "/v1/processes/"+esc(process)+"/stdin", bytes.NewReader(data), nil)
}

// CloseStdin implements service.Service.
func (c *Client) CloseStdin(ctx context.Context, _, process string) error {
	return c.call(ctx, "POST", "/v1/processes/"+esc(process)+"/stdin?close=1", bytes.NewReader(nil), nil)
}

// History yields a process's events after the cursor that have happened so
// far, and ends (it does not wait for new ones).
func (c *Client) History(ctx context.Context, process string, after uint64) iter.Seq2[service.Event, error] {
	return c.stream(ctx, "/v1/processes/"+esc(process)+"/events?after="+strconv.FormatUint(after, 10), false)
}
