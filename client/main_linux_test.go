package client

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/cordon-sandbox/cordon/server"
	"github.com/stretchr/testify/require"
)

// TestMain dispatches the sandbox's init: the test binary plays it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == runner.InitArg {
		syscall.Exit(runner.InitMain())
	}
	os.Exit(m.Run())
}

// requireSandbox skips (fails under CI=true) unless seccomp user
// notification and bubblewrap work here.
func requireSandbox(t testing.TB) {
	t.Helper()
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
}

func newManager(t testing.TB) *sandbox.Manager {
	t.Helper()
	requireSandbox(t)
	m := sandbox.NewManager(sandbox.Options{
		Env: []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp"}, Dir: t.TempDir(),
		KillGrace: 2 * time.Second, DrainTimeout: 200 * time.Millisecond,
		Exe: os.Getenv("CORDON_TEST_INIT"),
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

// serve serves svc on a Unix socket, as the daemon does, and returns a
// client for it.
func serve(t testing.TB, svc sandbox.Service) (*Client, *server.Server) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	srv := server.New(server.Options{Service: svc, Transport: api.TransportUnix, Socket: sock, UID: -1, Version: "test"})
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler(), ConnContext: server.ConnContext, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(l)
	c := New(Endpoint{Socket: sock})
	t.Cleanup(func() {
		c.Close()
		hs.Close()
	})
	return c, srv
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
