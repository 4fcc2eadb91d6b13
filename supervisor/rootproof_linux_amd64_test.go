package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// foreignAfterCheck makes every caller's root foreign from the end of the
// check of an exec of argv (as FormatArgv writes it) on: the sandbox view's
// root directory is swapped for an identity no directory has, as if the
// caller had moved to another root between the check and what follows it.
// Nothing in a sandbox can do that (see sandboxView); the proofs that
// follow the check must catch it anyway. Call it before the supervisor
// starts: the hook is read on its goroutine.
func foreignAfterCheck(t *testing.T, argv string) {
	t.Helper()
	testHookChecked = func(s *Supervisor, d *Verdict) {
		if FormatArgv(d.Exec.Argv) != argv {
			return
		}
		s.sandbox.rootMu.Lock()
		s.sandbox.root = [2]uint64{^uint64(0), ^uint64(0)}
		s.sandbox.rootMu.Unlock()
	}
	t.Cleanup(func() { testHookChecked = nil })
}

// foreignVerdict returns the refusal for argv whose reason is the foreign
// root, failing the test when there is none.
func foreignVerdict(t *testing.T, r *running, argv string) Verdict {
	t.Helper()
	for _, d := range r.all() {
		if FormatArgv(d.Exec.Argv) == argv && d.Reason == reasonForeign {
			return d
		}
	}
	var got []string
	for _, d := range r.all() {
		got = append(got, FormatArgv(d.Exec.Argv)+" errno="+d.Errno.Error()+" reason="+d.Reason)
	}
	t.Fatalf("no refusal of %q for a foreign root; decisions: %q", argv, got)
	return Verdict{}
}

// TestForeignRootKilledAtExecEvent: an exec that will be verified at its
// exec event is checked in the sandbox's held root with no proof of the
// caller's root, which the event proves before it decides anything. A
// caller whose root is foreign by then is killed there, before one
// instruction of its new image runs, with the foreign-root denial; the
// file it named is allowed by the policy and unchanged, so without the
// event's proof (or with the fast path ahead of it) it would run.
func TestForeignRootKilledAtExecEvent(t *testing.T) {
	requireSeccompNotify(t)
	testcap.RequirePtrace(t)
	c, fd := startExecClient(t)
	foreignAfterCheck(t, "/bin/true after")
	r := startSupervisor(t, fd, denyFalse(t), Options{})
	if r.s.sandbox.heldRoot() < 0 {
		testcap.SkipOrFail(t, "the kernel reports no unique mount ids (Linux 6.8+): every check proves the root itself")
	}
	assertExit(t, 0, run(t, c, "/bin/true", "before"), "an exec before the swap")
	res := run(t, c, "/bin/true", "after")
	if assert.NotNil(t, res.Exit, "the exec was refused at the check (errno %v), not at its exec event", unix.Errno(res.Errno)) {
		assert.Equal(t, -1, *res.Exit, "the caller must die of a signal at its exec event")
	}
	d := foreignVerdict(t, r, "/bin/true after")
	assert.True(t, d.Refused())
	assert.True(t, strings.HasPrefix(d.DenialLine(), "cordon: denied: /bin/true after"), d.DenialLine())
	assert.Contains(t, d.DenialLine(), "mount namespace or root of its own")
}

// TestForeignRootRefusedWithoutExecEvent: every way an exec can be let run
// without an exec event proves the caller's root before the answer: strict
// mode (at the check), and a caller ptrace cannot attach to (Yama, or
// already traced by a tracer outside the sandbox: nothing inside may call
// ptrace, so the failed attach is a test hook), which auto mode sends down
// strict mode's path.
func TestForeignRootRefusedWithoutExecEvent(t *testing.T) {
	requireSeccompNotify(t)
	testcap.RequirePtrace(t)

	t.Run("strict mode", func(t *testing.T) {
		c, fd := startExecClient(t)
		r := startSupervisor(t, fd, denyFalse(t), Options{Verify: VerifyStrict})
		// With no tracer, the check proves the root itself: swap before it.
		r.s.sandbox.init()
		r.s.sandbox.rootMu.Lock()
		r.s.sandbox.root = [2]uint64{^uint64(0), ^uint64(0)}
		r.s.sandbox.rootMu.Unlock()
		assertErrno(t, unix.EPERM, run(t, c, "/bin/true", "x"), "exec from a foreign root")
		d := foreignVerdict(t, r, "/bin/true x")
		assert.Equal(t, unix.EPERM, d.Errno)
		assert.True(t, strings.HasPrefix(d.DenialLine(), "cordon: denied: /bin/true x"), d.DenialLine())
	})

	// An ask is proven before the person is asked: nobody is asked about
	// an exec whose caller the exec event would kill.
	t.Run("ask", func(t *testing.T) {
		pol, err := policy.Compile(policy.Config{
			Default: policy.Allow,
			Rules:   []policy.Rule{{Decision: policy.Ask, Pattern: "true"}},
		})
		require.NoError(t, err)
		c, fd := startExecClient(t)
		asked := 0 // written by Run's goroutine, read after Run returned
		r := startSupervisor(t, fd, pol, Options{Ask: func(*Verdict) bool { asked++; return true }})
		if r.s.sandbox.heldRoot() < 0 {
			testcap.SkipOrFail(t, "the kernel reports no unique mount ids (Linux 6.8+): every check proves the root itself")
		}
		// The check resolves in the held root whatever the view's
		// identity says; only the proofs read it.
		r.s.sandbox.rootMu.Lock()
		r.s.sandbox.root = [2]uint64{^uint64(0), ^uint64(0)}
		r.s.sandbox.rootMu.Unlock()
		assertErrno(t, unix.EPERM, run(t, c, "/bin/true", "x"), "asked exec from a foreign root")
		d := foreignVerdict(t, r, "/bin/true x")
		assert.Equal(t, unix.EPERM, d.Errno)
		r.s.Shutdown()
		require.NoError(t, r.stopped(t, time.Second))
		assert.Zero(t, asked, "the person was asked about a caller with a foreign root")
	})

	// The exec of /bin/true comes from a shell (its own memory, one
	// thread: strict mode's memory proof passes), and its path is made to
	// pass strict mode's read-only proof (a test fake: this host's root is
	// writable), so only the root proof stands between it and running.
	t.Run("no attach", func(t *testing.T) {
		c, fd := startExecClient(t)
		foreignAfterCheck(t, "/bin/true x")
		swap := testHookChecked
		testHookChecked = func(s *Supervisor, d *Verdict) {
			s.immutables.paths = map[string]bool{"/bin/true": true}
			swap(s, d)
		}
		testHookNoAttach = func(d *Verdict) bool { return argv0(d.Exec.Argv) == "/bin/true" }
		t.Cleanup(func() { testHookNoAttach = nil })
		r := startSupervisor(t, fd, denyFalse(t), Options{})
		res := run(t, c, "/bin/sh", "-c", "exec /bin/true x")
		if assert.NotNil(t, res.Exit, "the shell ran") {
			assert.NotEqual(t, 0, *res.Exit, "/bin/true ran from a foreign root")
		}
		d := foreignVerdict(t, r, "/bin/true x")
		assert.Equal(t, unix.EPERM, d.Errno)
		assert.True(t, strings.HasPrefix(d.DenialLine(), "cordon: denied: /bin/true x"), d.DenialLine())
	})
}
