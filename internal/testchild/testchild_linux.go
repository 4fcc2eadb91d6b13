// Package testchild runs a test binary again as a child playing a part
// (a filtered process, an init, a caller of exec), for tests of code that
// does what a test process must not do to itself: load a seccomp filter,
// become a subreaper, be traced. One harness for every package's tests.
package testchild

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Child is a re-exec'd test binary in a process group of its own. Its
// stdout is read a line at a time (Next), its stderr is kept for failures.
type Child struct {
	t      testing.TB
	mode   string
	Cmd    *exec.Cmd
	Stdin  *os.File
	Lines  chan string
	Exited chan struct{}
	Stderr *LockedBuffer
}

// LockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start re-execs the test binary with envName=mode in its environment (the
// package's TestMain dispatches on it), args after its own, env added, and
// extra as descriptors 3 and up. Cleanup SIGKILLs its process group and
// reaps it, and logs its stderr if the test failed.
func Start(t testing.TB, envName, mode string, args, env []string, extra ...*os.File) *Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("finding the test binary: %v", err)
	}
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatalf("pipe: %v", err)
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	c := &Child{t: t, mode: mode, Stdin: inW, Lines: make(chan string, 64), Exited: make(chan struct{}), Stderr: &LockedBuffer{}}
	c.Cmd = &exec.Cmd{
		Path:       exe,
		Args:       append([]string{exe, "-test.run=^$"}, args...),
		Env:        append(append(os.Environ(), envName+"="+mode, raceExitNoSleep()), env...),
		Stdin:      inR,
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: extra,
		// Pdeathsig: a test binary killed by its timeout takes its
		// children with it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	// Pdeathsig follows the thread that forks: hold that thread for the
	// child's life. Otherwise a goroutine that later locks it (the
	// supervisor's tracer) ends it on exit, and the kernel kills the child.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := c.Cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = c.Cmd.Wait()
		close(c.Exited)
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
		defer close(c.Lines)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			c.Lines <- sc.Text()
		}
	}()
	go func() {
		defer errR.Close()
		_, _ = io.Copy(c.Stderr, errR)
	}()
	t.Cleanup(func() {
		c.Kill()
		c.Stdin.Close()
		if t.Failed() {
			if s := c.Stderr.String(); s != "" {
				t.Logf("child %s stderr:\n%s", mode, s)
			}
		}
	})
	return c
}

// raceExitNoSleep keeps a race-enabled child from sleeping a second in its
// exit path (the race runtime's atexit_sleep_ms defaults to 1000).
func raceExitNoSleep() string {
	opts := os.Getenv("GORACE")
	if opts != "" {
		opts += " "
	}
	return "GORACE=" + opts + "atexit_sleep_ms=0"
}

// Kill SIGKILLs the child's process group and waits for the child.
func (c *Child) Kill() {
	_ = unix.Kill(-c.Cmd.Process.Pid, unix.SIGKILL)
	select {
	case <-c.Exited:
	case <-time.After(10 * time.Second):
		c.t.Errorf("child %d not reaped 10s after SIGKILL", c.Cmd.Process.Pid)
	}
}

// Pid is the child's pid.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Next returns the child's next stdout line, failing the test after d.
func (c *Child) Next(d time.Duration) string {
	c.t.Helper()
	select {
	case l, ok := <-c.Lines:
		if !ok {
			c.t.Fatalf("child %d closed stdout; stderr:\n%s", c.Pid(), c.Stderr.String())
		}
		return l
	case <-time.After(d):
		c.t.Fatalf("no answer from child %d within %v; stderr:\n%s", c.Pid(), d, c.Stderr.String())
	}
	return ""
}

// NextJSON decodes the child's next stdout line into v.
func (c *Child) NextJSON(d time.Duration, v any) {
	c.t.Helper()
	l := c.Next(d)
	if err := json.Unmarshal([]byte(l), v); err != nil {
		c.t.Fatalf("child %d said %q: %v", c.Pid(), l, err)
	}
}

// Send writes v to the child's stdin as one JSON line.
func (c *Child) Send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatalf("encoding for child %d: %v", c.Pid(), err)
	}
	if _, err := c.Stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to child %d: %v", c.Pid(), err)
	}
}

// Report writes v to stdout as one JSON line: what a child says to the test
// that started it.
func Report(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}
