package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/service"
)

// Errors callers branch on, besides package service's.
var (
	// ErrUnavailable: no daemon answers at the endpoint.
	ErrUnavailable = errors.New("the cordon daemon is not reachable")
	// ErrStale: the id is from a previous daemon instance; what it named
	// is gone.
	ErrStale = errors.New("stale id: from a previous daemon instance")
	// ErrUnauthorized: the bearer token is missing or wrong.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the daemon refused the connection (another user, a
	// bad Host or an Origin header).
	ErrForbidden = errors.New("forbidden")
)

// Error is an error the daemon answered with. It unwraps to the sentinel
// its code stands for.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel for e's code, or nil.
func (e *Error) Unwrap() error {
	switch e.Code {
	case api.CodeNotFound:
		return service.ErrNotFound
	case api.CodeExists:
		return service.ErrExists
	case api.CodeBusy:
		return service.ErrBusy
	case api.CodeClosed:
		return service.ErrClosed
	case api.CodeLost:
		return service.ErrSessionLost
	case api.CodeExited:
		return service.ErrExited
	case api.CodeNoStdin:
		return service.ErrNoStdin
	case api.CodeBadRequest:
		return service.ErrInvalid
	case api.CodeStale:
		return ErrStale
	case api.CodeUnauthorized:
		return ErrUnauthorized
	case api.CodeForbidden:
		return ErrForbidden
	case api.CodeSetup:
		return service.ErrSetup
	}
	return nil
}

// Endpoint is where a daemon listens: a Unix socket, or a loopback TCP
// address with its bearer token.
type Endpoint struct {
	Socket string `json:"socket,omitempty"`
	Addr   string `json:"addr,omitempty"`
	Token  string `json:"-"`
}

// String renders e as CORDON_HOST takes it (never with the token).
func (e Endpoint) String() string {
	if e.Socket != "" {
		return "unix://" + e.Socket
	}
	return "http://" + e.Addr
}

// ParseHost reads CORDON_HOST: unix:///path/to.sock (or a bare absolute
// path), http://127.0.0.1:PORT or tcp://127.0.0.1:PORT. The token is not
// part of it.
func ParseHost(s string) (Endpoint, error) {
	switch {
	case strings.HasPrefix(s, "/"):
		return Endpoint{Socket: s}, nil
	case strings.HasPrefix(s, "unix://"):
		p := strings.TrimPrefix(s, "unix://")
		if !strings.HasPrefix(p, "/") {
			return Endpoint{}, fmt.Errorf("host %q: want unix:///absolute/path", s)
		}
		return Endpoint{Socket: p}, nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "tcp") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return Endpoint{}, fmt.Errorf("host %q: want unix:///path, http://127.0.0.1:PORT or tcp://127.0.0.1:PORT", s)
	}
	if u.Port() == "" {
		return Endpoint{}, fmt.Errorf("host %q: no port", s)
	}
	return Endpoint{Addr: u.Host}, nil
}

// Client talks to one daemon. Its methods are safe for concurrent use.
type Client struct {
	ep   Endpoint
	hc   *http.Client
	base string
}

var _ service.Service = (*Client)(nil)

// New returns a client for ep. Requests are bounded by their contexts
// only: an exec or a wait may take as long as the command does.
func New(ep Endpoint) *Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	base := "http://localhost"
	if ep.Socket != "" {
		sock := ep.Socket
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", sock)
		}
	} else {
		tr.DialContext = dialer.DialContext
		base = "http://" + ep.Addr
	}
	return &Client{ep: ep, hc: &http.Client{Transport: tr}, base: base}
}

// Endpoint is where c connects.
func (c *Client) Endpoint() Endpoint { return c.ep }

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// request sends one request; body is JSON-encoded unless it is an
// io.Reader. A response with an error status becomes *Error.
func (c *Client) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/octet-stream"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd, ctype = bytes.NewReader(buf), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.ep.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.ep.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w at %s: %v", ErrUnavailable, c.ep, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := &Error{Status: resp.StatusCode}
		var body api.Error
		if json.Unmarshal(b, &body) == nil && body.Code != "" {
			e.Code, e.Message = body.Code, body.Message
		} else {
			e.Code, e.Message = "http_"+fmt.Sprint(resp.StatusCode), strings.TrimSpace(string(b))
		}
		return nil, e
	}
	return resp, nil
}

// call sends a request and decodes the JSON answer into out (when not nil).
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return nil
}

func esc(id string) string { return url.PathEscape(id) }
