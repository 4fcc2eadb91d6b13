package server

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/cordon-sandbox/cordon/api"
)

type peerKey struct{}

// peer is what the kernel says about a Unix-socket client.
type peer struct {
	uid, pid int
	// foreign says why the peer is not in the daemon's own pid and mount
	// namespaces (nil: it is): a process in a sandbox.
	foreign error
	// sandboxed: the peer runs inside a cordon sandbox (below a cordon
	// init). Such a peer could ask for a session under a policy of its
	// choosing; the bwrap tier hides the socket, the landlock tier cannot.
	sandboxed bool
	err       error
}

// allowed applies the access rules in order: Origin, Host, then the peer's
// uid (Unix socket) or the bearer token (TCP). It writes the refusal.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request) bool {
	if _, ok := r.Header["Origin"]; ok {
		writeError(w, http.StatusForbidden, api.CodeForbidden, "requests with an Origin header are refused: the API is not for web pages")
		return false
	}
	if !s.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, api.CodeForbidden, fmt.Sprintf("Host %q is refused (want localhost, 127.0.0.1 or [::1])", r.Host))
		return false
	}
	switch s.o.Transport {
	case api.TransportUnix:
		p, ok := r.Context().Value(peerKey{}).(peer)
		switch {
		case !ok:
			writeError(w, http.StatusForbidden, api.CodeForbidden, "the peer's credentials are unknown")
			return false
		case p.err != nil:
			writeError(w, http.StatusForbidden, api.CodeForbidden, "reading the peer's credentials: "+p.err.Error())
			return false
		case p.uid != s.o.UID:
			s.o.Logger.Warn("refused a connection from another user", "uid", p.uid, "pid", p.pid)
			writeError(w, http.StatusForbidden, api.CodeForbidden, fmt.Sprintf("uid %d may not use this daemon (it serves uid %d)", p.uid, s.o.UID))
			return false
		case p.foreign != nil:
			s.o.Logger.Warn("refused a connection from another namespace", "pid", p.pid, "err", p.foreign)
			writeError(w, http.StatusForbidden, api.CodeForbidden, "refused: "+p.foreign.Error()+"; run cordon from the host, outside any sandbox")
			return false
		case p.sandboxed:
			s.o.Logger.Warn("refused a connection from inside a cordon sandbox", "pid", p.pid)
			writeError(w, http.StatusForbidden, api.CodeForbidden, "processes inside a cordon sandbox may not use the daemon")
			return false
		}
	default:
		if !s.tokenOK(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cordon"`)
			writeError(w, http.StatusUnauthorized, api.CodeUnauthorized, "missing or wrong bearer token (it is in the daemon's daemon.json)")
			return false
		}
	}
	return true
}

// tokenOK compares the bearer token in constant time.
func (s *Server) tokenOK(header string) bool {
	const prefix = "Bearer "
	if s.o.Token == "" || len(header) < len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
		return false
	}
	got := strings.TrimSpace(header[len(prefix):])
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Token)) == 1
}

// hostAllowed accepts loopback names only (with any port), and on a Unix
// socket also the socket's path as some clients send it. A page on
// attacker.example whose name was rebound to 127.0.0.1 sends its own name.
func (s *Server) hostAllowed(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	switch strings.ToLower(name) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if s.o.Transport == api.TransportUnix && s.o.Socket != "" {
		if host == s.o.Socket || host == url.PathEscape(s.o.Socket) || host == url.QueryEscape(s.o.Socket) {
			return true
		}
	}
	return false
}
