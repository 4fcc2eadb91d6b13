package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionNetworkAsk: a session whose policy has a network ask rule
// asks SessionSpec.Ask about each connection, with a net decision naming the
// host, the port and the process; the answer decides, and every connection
// is on the process's decisions.
func TestSessionNetworkAsk(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("curl"); err != nil {
		testcap.SkipOrFail(t, "curl not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s\n", r.URL.Path)
	}))
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	target := fmt.Sprintf("127.0.0.1:%d", port)
	m := newTestManager(t, nil)
	var mu sync.Mutex
	var asked []ExecDecision
	s := newTestSession(t, m, SessionSpec{
		Policy: fmt.Sprintf("network:\n  rules:\n    - ask: %q\n", target),
		Ask: func(_ context.Context, _ string, d ExecDecision) bool {
			mu.Lock()
			defer mu.Unlock()
			if d.Kind != "net" {
				return true
			}
			asked = append(asked, d)
			return strings.Contains(strings.Join(d.Argv, " "), "/yes")
		},
	})
	res := execIn(t, s, ExecRequest{Argv: []string{"sh", "-c",
		"unset no_proxy NO_PROXY; curl -sS -m 10 http://" + target + "/yes; curl -sS -m 10 -w ' code=%{http_code}' http://" + target + "/no"}})
	assert.Contains(t, string(res.Stdout), "hello /yes")
	assert.Contains(t, string(res.Stdout), "code=403")
	mu.Lock()
	require.Len(t, asked, 2)
	assert.Equal(t, "ask", asked[0].Decision)
	assert.Equal(t, "127.0.0.1", asked[0].Host)
	assert.Equal(t, int(port), asked[0].Port)
	assert.NotZero(t, asked[0].Pid)
	mu.Unlock()
	var allow, deny int
	for _, d := range res.Decisions {
		if d.Kind == "net" && d.Decision == "allow" {
			allow++
		}
		if d.Kind == "net" && d.Decision == "deny" {
			deny++
			assert.Contains(t, d.Rule, "ask")
		}
	}
	assert.Equal(t, 1, allow, "%+v", res.Decisions)
	assert.Equal(t, 1, deny, "%+v", res.Decisions)
}
