package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
	}
	fmt.Fprintf(os.Stderr, "unknown test child mode %q\n", mode)
	return 2
}

// child is a re-exec'd test binary in its own process group.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  *os.File
	lines  chan string
	exited chan struct{}
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startChild re-execs the test binary in mode; the first extra file is fd
// 3. Cleanup SIGKILLs its process group and reaps it.
func startChild(t *testing.T, mode string, env []string, extra ...*os.File) *child {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	errR, errW, err := os.Pipe()
	require.NoError(t, err)
	raceOpts := os.Getenv("GORACE")
	if raceOpts != "" {
		raceOpts += " "
	}
	c := &child{t: t, stdin: inW, lines: make(chan string, 64), exited: make(chan struct{}), stderr: &lockedBuffer{}}
	c.cmd = &exec.Cmd{
		Path: exe,
		Args: []string{exe, "-test.run=^$"},
		// atexit_sleep_ms: a race-enabled child would sleep 1s on exit.
		Env:         append(append(os.Environ(), childEnv+"="+mode, "GORACE="+raceOpts+"atexit_sleep_ms=0"), env...),
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		ExtraFiles:  extra,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	// Pdeathsig follows the thread that forks: hold that thread for the
	// child's life. Otherwise a goroutine that later locks it (the
	// supervisor's tracer) ends it on exit, and the kernel kills the child.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	err = <-started
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		t.Fatalf("starting child %s: %v", mode, err)
	}
	go func() {
		defer close(c.lines)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	go func() {
		defer errR.Close()
		_, _ = io.Copy(c.stderr, errR)
	}()
	t.Cleanup(func() {
		_ = unix.Kill(-c.cmd.Process.Pid, unix.SIGKILL)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("child %d not reaped 10s after SIGKILL", c.cmd.Process.Pid)
		}
		c.stdin.Close()
		if t.Failed() {
			if s := c.stderr.String(); s != "" {
				t.Logf("child %s stderr:\n%s", mode, s)
			}
		}
	})
	return c
}

// nextJSON decodes the child's next stdout line into v, failing after d.
func (c *child) nextJSON(d time.Duration, v any) {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child %d closed stdout; stderr:\n%s", c.cmd.Process.Pid, c.stderr.String())
		}
		if err := json.Unmarshal([]byte(l), v); err != nil {
			c.t.Fatalf("child %d said %q: %v", c.cmd.Process.Pid, l, err)
		}
	case <-time.After(d):
		c.t.Fatalf("no answer from child %d within %v; stderr:\n%s", c.cmd.Process.Pid, d, c.stderr.String())
	}
}

func report(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}

// sendFrameChild sends one frame over fd 3 and waits for stdin to close.
func sendFrameChild() int {
	conn, err := newFrameConn(os.NewFile(3, "control"))
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
