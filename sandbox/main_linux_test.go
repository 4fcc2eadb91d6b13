package sandbox

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/stretchr/testify/require"
)

// childEnv selects what a re-exec'd test binary plays instead of running
// the tests (see hostChildMain).
const childEnv = "CORDON_SANDBOX_TEST_CHILD"

// TestMain dispatches the sandbox's init (as cordon's main does): every
// session in these tests runs the test binary itself as its init.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == runner.InitArg {
		// Not os.Exit: under -race it sleeps a second in the race
		// runtime's exit hook (the init's environment is empty, so GORACE
		// cannot turn that off).
		syscall.Exit(runner.InitMain())
	}
	if mode, ok := os.LookupEnv(childEnv); ok {
		os.Unsetenv(childEnv)
		os.Exit(hostChildMain(mode))
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

var testEnv = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/tmp"}

// newTestManager returns a Manager with short timings for tests; Cleanup
// closes it and checks that it did so in bounded time.
func newTestManager(t testing.TB, tweak func(*Options)) *Manager {
	t.Helper()
	requireSandbox(t)
	o := Options{
		Env:          testEnv,
		Dir:          t.TempDir(),
		KillGrace:    2 * time.Second,
		DrainTimeout: 200 * time.Millisecond,
		// CORDON_TEST_INIT names another binary to play the init (a
		// built cordon, for measurements); by default the test binary does.
		Exe: os.Getenv("CORDON_TEST_INIT"),
	}
	if tweak != nil {
		tweak(&o)
	}
	m := NewManager(o)
	t.Cleanup(func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx))
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("closing the manager took %v", d)
		}
	})
	return m
}

func newTestSession(t testing.TB, m *Manager, spec SessionSpec) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := m.NewSession(ctx, spec)
	require.NoError(t, err)
	return s
}

// testCtx is a context bounded for one test step.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func hostChildMain(mode string) int {
	switch mode {
	case "host-dies":
		return hostDiesChild()
	}
	fmt.Fprintf(os.Stderr, "unknown test child mode %q\n", mode)
	return 2
}
