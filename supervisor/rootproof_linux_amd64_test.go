package supervisor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// foreignAfterCheck makes every caller's root foreign from the check's end
// on: the sandbox view's root directory is swapped for an identity no
// directory has, as if the caller had moved to another root between the
// check and what follows it. Nothing in a sandbox can do that (see
// sandboxView); the proofs that follow the check must catch it anyway.
func foreignAfterCheck(t *testing.T) {
	t.Helper()
	testHookChecked = func(s *Supervisor) {
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
	r := startSupervisor(t, fd, denyFalse(t), Options{})
	if r.s.sandbox.heldRoot() < 0 {
		testcap.SkipOrFail(t, "the kernel reports no unique mount ids (Linux 6.8+): every check proves the root itself")
	}
	assertExit(t, 0, run(t, c, "/bin/true", "before"), "an exec before the swap")

	foreignAfterCheck(t)
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
// mode, and a caller ptrace cannot attach to (Yama, or already traced by
// a tracer outside the sandbox: nothing inside may call ptrace, so the
// failed attach is a test hook), which auto mode sends down strict mode's
// path. The foreign
// root is the refusal's reason: without the proof, strict mode would have
// refused for its own reasons (or let it run on a read-only root).
func TestForeignRootRefusedWithoutExecEvent(t *testing.T) {
	requireSeccompNotify(t)
	testcap.RequirePtrace(t)
	for _, tc := range []struct {
		name     string
		opts     Options
		noAttach bool
	}{
		{name: "strict mode", opts: Options{Verify: VerifyStrict}},
		{name: "no attach", opts: Options{}, noAttach: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fd := startExecClient(t)
			r := startSupervisor(t, fd, denyFalse(t), tc.opts)
			if tc.opts.Verify == VerifyStrict {
				// With no tracer, the check proves the root itself:
				// swap before it.
				r.s.sandbox.init()
				r.s.sandbox.rootMu.Lock()
				r.s.sandbox.root = [2]uint64{^uint64(0), ^uint64(0)}
				r.s.sandbox.rootMu.Unlock()
			} else {
				foreignAfterCheck(t)
			}
			if tc.noAttach {
				testHookAttach = func() error { return fmt.Errorf("%w: test", errAttach) }
				t.Cleanup(func() { testHookAttach = nil })
			}
			res := run(t, c, "/bin/true", "x")
			assertErrno(t, unix.EPERM, res, "exec from a foreign root")
			d := foreignVerdict(t, r, "/bin/true x")
			assert.Equal(t, unix.EPERM, d.Errno)
			assert.True(t, strings.HasPrefix(d.DenialLine(), "cordon: denied: /bin/true x"), d.DenialLine())
		})
	}
}
