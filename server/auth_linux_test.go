package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTCPAccessRules(t *testing.T) {
	s := New(Options{Service: stubService{}, Transport: api.TransportTCP, Token: "s3cret-token"})
	tests := []struct {
		name   string
		host   string
		header map[string]string
		status int
		code   string
	}{
		{"token", "127.0.0.1:4000", map[string]string{"Authorization": "Bearer s3cret-token"}, 200, ""},
		{"token, lower-case scheme", "localhost", map[string]string{"Authorization": "bearer s3cret-token"}, 200, ""},
		{"ipv6 loopback", "[::1]:4000", map[string]string{"Authorization": "Bearer s3cret-token"}, 200, ""},
		{"no token", "127.0.0.1:4000", nil, 401, api.CodeUnauthorized},
		{"wrong token", "127.0.0.1:4000", map[string]string{"Authorization": "Bearer s3cret-tokeN"}, 401, api.CodeUnauthorized},
		{"token prefix", "127.0.0.1:4000", map[string]string{"Authorization": "Bearer s3cret"}, 401, api.CodeUnauthorized},
		{"basic auth", "127.0.0.1:4000", map[string]string{"Authorization": "Basic czNjcmV0LXRva2Vu"}, 401, api.CodeUnauthorized},
		{"origin, even with the token", "127.0.0.1:4000", map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "http://127.0.0.1:4000"}, 403, api.CodeForbidden},
		{"empty origin", "127.0.0.1:4000", map[string]string{"Authorization": "Bearer s3cret-token", "Origin": ""}, 403, api.CodeForbidden},
		{"rebound name", "attacker.example:4000", map[string]string{"Authorization": "Bearer s3cret-token"}, 403, api.CodeForbidden},
		{"loopback lookalike", "127.0.0.1.nip.io", map[string]string{"Authorization": "Bearer s3cret-token"}, 403, api.CodeForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", api.PathHealth, nil)
			req.Host = tc.host
			for k, v := range tc.header {
				req.Header[k] = []string{v}
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			assert.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.code != "" {
				var e api.Error
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
				assert.Equal(t, tc.code, e.Code)
			}
			if tc.status == 401 {
				assert.Contains(t, rec.Header().Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
}

// serveUnix serves s on a Unix socket with the peer-credential hook, as
// the daemon does, and returns a client for it.
func serveUnix(t *testing.T, s *Server, sock string) *http.Client {
	t.Helper()
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	hs := &http.Server{Handler: s.Handler(), ConnContext: ConnContext, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
}

func TestUnixPeerUID(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	get := func(t *testing.T, c *http.Client, host string) (int, api.Error) {
		req, err := http.NewRequest("GET", "http://"+host+api.PathHealth, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var e api.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	t.Run("same uid, no token needed", func(t *testing.T) {
		c := serveUnix(t, New(Options{Service: stubService{}, Transport: api.TransportUnix, Socket: sock, UID: -1}), sock)
		code, _ := get(t, c, "localhost")
		assert.Equal(t, 200, code)
		code, e := get(t, c, "evil.example")
		assert.Equal(t, 403, code, "the Host rule holds on the socket too")
		assert.Equal(t, api.CodeForbidden, e.Code)
	})
	t.Run("another uid is refused", func(t *testing.T) {
		sock2 := filepath.Join(t.TempDir(), "d.sock")
		// The kernel reports this process's uid; the server serves another.
		c := serveUnix(t, New(Options{Service: stubService{}, Transport: api.TransportUnix, Socket: sock2, UID: os.Geteuid() + 4242}), sock2)
		code, e := get(t, c, "localhost")
		assert.Equal(t, 403, code)
		assert.Contains(t, e.Message, "may not use this daemon")
	})
}

func TestUnmatchedRoutes(t *testing.T) {
	s := New(Options{Service: stubService{}, Transport: api.TransportTCP, Token: "t"})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/nope", 404},
		{"DELETE", "/v1/health", 405},
		{"GET", "/v1/exec", 405},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Host = "localhost"
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		assert.Equal(t, tc.status, rec.Code, "%s %s", tc.method, tc.path)
		var e api.Error
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "errors are JSON")
	}
}

func TestIDs(t *testing.T) {
	x := ids{inst: "1a2b3c4d"}
	sid := x.session("s-0123")
	assert.Equal(t, "s-0123.1a2b3c4d", sid)
	lib, ok, err := x.parseSession(sid)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "s-0123", lib)

	_, ok, err = x.parseSession("my-session")
	assert.False(t, ok, "a name is not an id")
	assert.NoError(t, err)

	_, _, err = x.parseSession("s-0123.ffffffff")
	assert.ErrorIs(t, err, ErrStale)

	pid := x.process("s-0123", "p-9")
	sess, proc, err := x.parseProcess(pid)
	require.NoError(t, err)
	assert.Equal(t, []string{"s-0123", "p-9"}, []string{sess, proc})

	_, _, err = ids{inst: "00000000"}.parseProcess(pid)
	var stale *StaleError
	require.ErrorAs(t, err, &stale)
	assert.Contains(t, err.Error(), "previous daemon instance")
	status, code := classify(err)
	assert.Equal(t, 409, status)
	assert.Equal(t, api.CodeStale, code)

	for _, bad := range []string{"", "p-9", "p-9.s-0123", "p-9.s-0123.xyz", ".s.1a2b3c4d"} {
		_, _, err := x.parseProcess(bad)
		status, _ := classify(err)
		assert.Equal(t, 404, status, "%q", bad)
	}
}

// Every peer the access rules refuse gets the refusal alone: the request's
// handler never runs. A red team's: a peer in another namespace, or one
// whose namespaces could not be read because it had exited (a sandbox
// process that connected, then exited before the daemon accepted, leaving
// the socket to its parent), got the 403 and then the handler's own
// response, so a process inside a landlock-tier sandbox ran a denied command
// outside any sandbox through POST /v1/exec. Each refused peer here reaches
// a handler that would answer 200.
func TestRefusedPeersNeverReachTheHandler(t *testing.T) {
	uid := os.Geteuid()
	s := New(Options{Service: stubService{}, Transport: api.TransportUnix, UID: uid})
	for _, tc := range []struct {
		name string
		p    peer
	}{
		{"credentials unreadable", peer{uid: -1, err: errors.New("getsockopt failed")}},
		{"another user", peer{uid: uid + 4242}},
		{"another namespace, or gone before its namespaces were read", peer{uid: uid, foreign: errors.New("reading the mnt namespace of the client (pid 1234): no such file or directory")}},
		{"inside a sandbox", peer{uid: uid, sandboxed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", api.PathHealth, nil)
			req.Host = "localhost"
			req = req.WithContext(context.WithValue(req.Context(), peerKey{}, tc.p))
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			assert.Equal(t, http.StatusForbidden, rec.Code)
			var e api.Error
			require.NoError(t, json.NewDecoder(bytes.NewReader(rec.Body.Bytes())).Decode(&e), rec.Body.String())
			assert.Equal(t, api.CodeForbidden, e.Code)
			dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
			var first, second json.RawMessage
			require.NoError(t, dec.Decode(&first))
			assert.Error(t, dec.Decode(&second), "a second body after the refusal: the handler ran: %s", rec.Body.String())
		})
	}
	// The control: the same request from an accepted peer is answered.
	req := httptest.NewRequest("GET", api.PathHealth, nil)
	req.Host = "localhost"
	req = req.WithContext(context.WithValue(req.Context(), peerKey{}, peer{uid: uid}))
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}
