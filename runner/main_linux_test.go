package runner

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testchild"
)

// childEnv selects what a re-exec'd test binary plays instead of running
// the tests. Reaping with wait4(-1) and becoming a subreaper change the
// whole process, so they happen in such a child, never in the test process.
const childEnv = "CORDON_RUNNER_TEST_CHILD"

// TestMain dispatches the sandbox init (as cordon's main does) and the
// test child modes before the tests run.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == InitArg {
		code := InitMain()
		// Not os.Exit: under -race it sleeps a second in the race runtime's
		// exit hook (the init's environment is empty, so GORACE cannot turn
		// that off), which IsolationNone's teardown would wait for. Data
		// races are still reported on the init's stderr when they happen,
		// and TestRun fails on such a report.
		syscall.Exit(code)
	}
	if mode, ok := os.LookupEnv(childEnv); ok {
		os.Unsetenv(childEnv)
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

func childMain(mode string) int {
	switch mode {
	case "send-frame":
		return sendFrameChild()
	case "subreaper":
		return subreaperChild()
	case "reap":
		return reapChild()
	case "kill-refused":
		return killRefusedChild()
	}
	fmt.Fprintf(os.Stderr, "unknown test child mode %q\n", mode)
	return 2
}

// child is a re-exec'd test binary (internal/testchild).
type child = testchild.Child

// startChild re-execs the test binary in mode; the first extra file is fd
// 3. Cleanup SIGKILLs its process group and reaps it.
func startChild(t *testing.T, mode string, env []string, extra ...*os.File) *child {
	t.Helper()
	return testchild.Start(t, childEnv, mode, nil, env, extra...)
}

func report(v any) { testchild.Report(v) }

// sendFrameChild sends one frame over fd 3 and waits for stdin to close.
func sendFrameChild() int {
	conn, err := newInitConn(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := conn.send(initMsg{Kind: msgStarted, Message: "from the child"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
