package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests run the supervisor in the test process against a child that
// loaded the filter and handed over its listener: every exec the child
// makes is decided here, as the runner does for a sandbox.

const answerTimeout = 10 * time.Second

// startExecClient starts an exec-client child and returns it with the
// listener it sent (close-on-exec in this process).
func startExecClient(t *testing.T) (*child, int) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(pair[0])
	childEnd := os.NewFile(uintptr(pair[1]), "listener-socket")
	c := startChild(t, "exec-client", nil, nil, childEnd)
	childEnd.Close()

	var ready execResult
	c.NextJSON(answerTimeout, &ready)
	require.True(t, ready.Ready, "exec-client not ready: %s", ready.Error)
	require.NoError(t, unix.SetsockoptTimeval(pair[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10}))
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(pair[0], make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
	require.NoError(t, err, "receiving the listener")
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	fds, err := unix.ParseUnixRights(&msgs[0])
	require.NoError(t, err)
	require.Len(t, fds, 1)
	return c, fds[0]
}

// run asks the child to run argv and returns how it went.
func run(t *testing.T, c *child, argv ...string) execResult {
	t.Helper()
	c.Send(execRequest{Argv: argv})
	var r execResult
	c.NextJSON(answerTimeout, &r)
	require.Empty(t, r.Error, "exec-client running %q", argv)
	return r
}

func assertExit(t *testing.T, want int, r execResult, what string) {
	t.Helper()
	if assert.NotNil(t, r.Exit, "%s: exec failed with errno %d (%v)", what, r.Errno, syscall.Errno(r.Errno)) {
		assert.Equal(t, want, *r.Exit, "%s: exit code", what)
	}
}

func assertErrno(t *testing.T, want syscall.Errno, r execResult, what string) {
	t.Helper()
	assert.Nil(t, r.Exit, "%s: the exec should have failed", what)
	assert.Equal(t, want, syscall.Errno(r.Errno), "%s: errno %v, want %v", what, syscall.Errno(r.Errno), want)
}

// running is a Supervisor whose Run goroutine the test owns.
type running struct {
	s      *Supervisor
	runErr chan error

	mu        sync.Mutex
	decisions []Verdict // guarded by mu
}

// startSupervisor runs New(fd, pol, opts) in a goroutine, recording every
// decision; each setup, when given, runs on the supervisor before it does.
// Cleanup shuts it down and closes it, unless the test wedged it.
func startSupervisor(t *testing.T, fd int, pol *policy.Policy, opts Options, setup ...func(*Supervisor)) *running {
	t.Helper()
	r := &running{runErr: make(chan error, 1)}
	next := opts.OnDecision
	opts.OnDecision = func(d *Verdict) {
		r.mu.Lock()
		r.decisions = append(r.decisions, *d)
		r.mu.Unlock()
		if next != nil {
			next(d)
		}
	}
	s, err := New(fd, pol, opts)
	if err != nil {
		unix.Close(fd)
		t.Fatalf("New: %v", err)
	}
	r.s = s
	for _, f := range setup {
		f(s)
	}
	go func() { r.runErr <- s.Run() }()
	return r
}

// last returns the latest decision.
func (r *running) last(t *testing.T) Verdict {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.decisions, "no decision recorded")
	return r.decisions[len(r.decisions)-1]
}

func (r *running) all() []Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Verdict(nil), r.decisions...)
}

// stopped waits up to d for Run to return and returns its error.
func (r *running) stopped(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-r.s.Done():
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
	}
	select {
	case err := <-r.runErr:
		return err
	case <-time.After(time.Second):
		t.Fatal("Done closed but Run's result never arrived")
	}
	return nil
}

func denyFalse(t *testing.T) *policy.Policy {
	t.Helper()
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Deny, Pattern: "false", Source: "test"}},
	})
	require.NoError(t, err)
	return pol
}

func TestSupervisorDecidesExecs(t *testing.T) {
	requireSeccompNotify(t)
	listenersBefore := fdLinks(t, "seccomp notify")
	c, fd := startExecClient(t)
	r := startSupervisor(t, fd, denyFalse(t), Options{})

	t.Run("allowed", func(t *testing.T) {
		assertExit(t, 0, run(t, c, "/bin/true"), "/bin/true")
		d := r.last(t)
		assert.Equal(t, "execve", d.Syscall)
		assert.Equal(t, "x86_64", d.Arch)
		assert.Equal(t, []string{"/bin/true"}, d.Exec.Argv)
		assert.Equal(t, "/bin/true", d.Exec.Path)
		canonical, err := filepath.EvalSymlinks("/bin/true")
		require.NoError(t, err)
		assert.Equal(t, canonical, d.Exec.Resolved, "symlinks followed in the caller's root")
		assert.True(t, d.Exec.Known, "the file's identity is known")
		assert.Equal(t, policy.Allow, d.Result.Decision)
		assert.Zero(t, d.Errno)
		assert.False(t, d.Refused())
		assert.NotEqual(t, c.Pid(), d.Pid, "the exec comes from the child's child")
		assert.Positive(t, d.Pid)
	})

	t.Run("denied by rule", func(t *testing.T) {
		assertErrno(t, unix.EPERM, run(t, c, "/bin/false", "--flag", "two words"), "/bin/false")
		d := r.last(t)
		assert.True(t, d.Refused())
		assert.Equal(t, []string{"/bin/false", "--flag", "two words"}, d.Exec.Argv)
		if assert.NotNil(t, d.Result.Rule) {
			assert.Equal(t, "false", d.Result.Rule.Pattern)
			assert.Equal(t, "test", d.Result.Rule.Source)
		}
		assert.Equal(t, `cordon: denied: /bin/false --flag "two words" (rule: deny "false")`, d.DenialLine())
	})

	t.Run("missing program is ENOENT, not a denial", func(t *testing.T) {
		assertErrno(t, unix.ENOENT, run(t, c, "/nonexistent/prog"), "/nonexistent/prog")
		d := r.last(t)
		assert.Equal(t, unix.ENOENT, d.Errno)
		assert.False(t, d.Refused())
		assert.Nil(t, d.Result.Rule, "the policy is not asked about a file that does not exist")
	})

	t.Run("directory is EACCES, not a denial", func(t *testing.T) {
		assertErrno(t, unix.EACCES, run(t, c, "/usr"), "/usr")
		d := r.last(t)
		assert.Equal(t, unix.EACCES, d.Errno)
		assert.False(t, d.Refused())
	})

	t.Run("nested exec read from a C program's memory", func(t *testing.T) {
		before := len(r.all())
		res := run(t, c, "/bin/sh", "-c", "/bin/false 'a b' x; exit $?")
		if assert.NotNil(t, res.Exit) {
			assert.NotZero(t, *res.Exit, "sh must see its exec of /bin/false fail")
		}
		var nested []Verdict
		for _, d := range r.all()[before:] {
			if d.Exec.Path == "/bin/false" {
				nested = append(nested, d)
			}
		}
		require.NotEmpty(t, nested, "no decision for the shell's exec of /bin/false")
		assert.Equal(t, []string{"/bin/false", "a b", "x"}, nested[0].Exec.Argv)
		assert.True(t, nested[0].Refused())
	})

	// Shutdown makes Run return promptly, and is idempotent.
	r.s.Shutdown()
	assert.NoError(t, r.stopped(t, time.Second))
	r.s.Shutdown()
	assert.NoError(t, r.s.Close())
	assert.NoError(t, r.s.Close(), "Close is idempotent")
	assert.Equal(t, listenersBefore, fdLinks(t, "seccomp notify"), "Close leaves no listener open")

	// With the listener gone, the kernel fails every further exec: the
	// sandbox fails closed.
	assertErrno(t, unix.ENOSYS, run(t, c, "/bin/true"), "exec after Close")
}

func TestSupervisorAsk(t *testing.T) {
	requireSeccompNotify(t)
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Ask, Pattern: "true"}},
	})
	require.NoError(t, err)
	tests := []struct {
		name   string
		ask    func(*Verdict) bool
		wantOK bool
	}{
		{name: "no asker refuses", ask: nil, wantOK: false},
		{name: "asker says yes", ask: func(*Verdict) bool { return true }, wantOK: true},
		{name: "asker says no", ask: func(*Verdict) bool { return false }, wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, fd := startExecClient(t)
			var asked []string // written by Run's goroutine, read after Run returned
			var opts Options
			if tc.ask != nil {
				opts.Ask = func(d *Verdict) bool {
					asked = append(asked, FormatArgv(d.Exec.Argv))
					return tc.ask(d)
				}
			}
			r := startSupervisor(t, fd, pol, opts)
			res := run(t, c, "/bin/true", "ok")
			if tc.wantOK {
				assertExit(t, 0, res, "asked exec")
			} else {
				assertErrno(t, unix.EPERM, res, "asked exec")
			}
			r.s.Shutdown()
			require.NoError(t, r.stopped(t, time.Second))
			require.NoError(t, r.s.Close())
			if tc.ask != nil {
				assert.Equal(t, []string{"/bin/true ok"}, asked)
			}
		})
	}
}

// TestSupervisorReturnsWhenSandboxExits: when every task using the filter
// is gone the listener reports POLLHUP and Run returns nil by itself.
func TestSupervisorReturnsWhenSandboxExits(t *testing.T) {
	requireSeccompNotify(t)
	c, fd := startExecClient(t)
	r := startSupervisor(t, fd, denyFalse(t), Options{})
	t.Cleanup(func() { _ = r.s.Close() })
	assertExit(t, 0, run(t, c, "/bin/true"), "/bin/true")

	c.Stdin.Close() // the child exits
	select {
	case <-c.Exited:
	case <-time.After(answerTimeout):
		t.Fatal("exec-client did not exit after stdin closed")
	}
	assert.NoError(t, r.stopped(t, 2*time.Second), "Run after the sandbox exited")
}

// TestSupervisorWedgeAfter proves the WedgeAfter hook wedges for real:
// after one notification, Run never returns, and Shutdown cannot wake it.
// That is the case the runner's teardown bound exists for: it stops
// waiting for Done after teardownBound and leaves the supervisor behind.
func TestSupervisorWedgeAfter(t *testing.T) {
	requireSeccompNotify(t)
	c, fd := startExecClient(t)
	wedgedBefore := countWedged()
	r := startSupervisor(t, fd, denyFalse(t), Options{WedgeAfter: 1})

	assertExit(t, 0, run(t, c, "/bin/true"), "first exec, before the wedge")

	// The second exec is never answered.
	c.Send(execRequest{Argv: []string{"/bin/true"}})
	deadline := time.Now().Add(answerTimeout)
	for countWedged() <= wedgedBefore {
		require.True(t, time.Now().Before(deadline), "Run never reached the wedged receive")
		time.Sleep(10 * time.Millisecond)
	}

	r.s.Shutdown()
	select {
	case <-r.s.Done():
		t.Fatal("Done closed after Shutdown: the wedge is not real")
	case l := <-c.Lines:
		t.Fatalf("the wedged exec was answered: %s", l)
	case <-time.After(300 * time.Millisecond):
	}

	// Clean up: the child (and its exec, waiting in the kernel) dies; the
	// listener is closed under the wedged goroutine, which stays parked
	// forever, as it would in cordon until the process exits.
	c.Kill()
	assert.NoError(t, r.s.Close())
}

// countWedged counts goroutines parked in Run's loop (serve, on the tracer's
// thread or Run's own goroutine) inside the WedgeAfter hook.
// (The closure's symbol depends on inlining: wedgeAfter.func1 or
// New.wedgeAfter.func1.)
func countWedged() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("wedgeAfter.func1(")) && bytes.Contains(g, []byte("supervisor.(*Supervisor).serve(")) {
			count++
		}
	}
	return count
}

// TestSupervisorDropAfter: after DropAfter notifications the supervisor
// closes the listener and returns, and the next exec in the sandbox fails
// with ENOSYS instead of running unchecked.
func TestSupervisorDropAfter(t *testing.T) {
	requireSeccompNotify(t)
	c, fd := startExecClient(t)
	r := startSupervisor(t, fd, denyFalse(t), Options{DropAfter: 2})

	assertExit(t, 0, run(t, c, "/bin/true"), "first exec")
	select {
	case <-r.s.Done():
		t.Fatal("Run returned after 1 of 2 notifications")
	default:
	}
	assertErrno(t, unix.EPERM, run(t, c, "/bin/false"), "second exec, still decided")
	assert.NoError(t, r.stopped(t, time.Second), "Run after dropping the listener")
	assertErrno(t, unix.ENOSYS, run(t, c, "/bin/true"), "exec after the listener was dropped")
	assert.NoError(t, r.s.Close(), "Close after the drop")
}

// TestTracerReleasesHeldRoots: the root a tracee's check proved is held
// until its exec event (tracee.root) and released on every way out: a
// verified exec, an exec the kernel failed after it was allowed (the caller
// returns still attached and is let go at expiry), a denial (never
// attached). Nothing accumulates in the supervisor's process.
func TestTracerReleasesHeldRoots(t *testing.T) {
	requireSeccompNotify(t)
	testcap.RequirePtrace(t)
	c, fd := startExecClient(t)
	r := startSupervisor(t, fd, denyFalse(t), Options{})
	notELF := filepath.Join(t.TempDir(), "not-elf")
	require.NoError(t, os.WriteFile(notELF, []byte("\x7fnot an ELF, no #! line\n"), 0o755))

	assertExit(t, 0, run(t, c, "/bin/true"), "warm-up exec")
	steady := countFDs(t)
	for i := 0; i < 10; i++ {
		assertExit(t, 0, run(t, c, "/bin/true"), "allowed exec")
		assertErrno(t, unix.EPERM, run(t, c, "/bin/false"), "denied exec")
		assertErrno(t, unix.ENOEXEC, run(t, c, notELF), "allowed exec the kernel fails")
	}
	// The failed execs' callers are let go at expiry (execEventWait, then
	// a tick).
	deadline := time.Now().Add(5 * time.Second)
	for countFDs(t) > steady && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, steady, countFDs(t), "descriptors open in the supervisor's process after 30 execs, against after one")
	require.NotEmpty(t, r.all())
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}
