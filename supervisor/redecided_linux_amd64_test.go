package supervisor

import (
	"sync/atomic"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestChangedArgvAllowedIsReported: the caller's argv[1] is rewritten
// between the check and the kernel's copy (here by the test, through
// process_vm_writev, where a workload would use a second thread). The exec
// event reads the argv the kernel gave the image and decides it again:
// allowed, it runs, and OnDecision gets a record of the arguments that run
// (ReasonRedecided) besides the check's record of the ones it read, so the
// audit log never shows only what did not run; denied, it is killed.
func TestChangedArgvAllowedIsReported(t *testing.T) {
	requireSeccompNotify(t)
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Deny, Pattern: "test c", Source: "test"}},
	})
	require.NoError(t, err)
	var rewrite atomic.Value // string: what argv[1] becomes after the check
	rewrite.Store("")
	testHookChecked = func(s *Supervisor, d *Verdict) {
		to := rewrite.Load().(string)
		if to == "" || len(d.Exec.Argv) < 2 || d.Exec.Argv[1] != "a" {
			return
		}
		b := []byte(to)
		local := []unix.Iovec{{Base: &b[0]}}
		local[0].SetLen(len(b))
		remote := []unix.RemoteIovec{{Base: uintptr(s.mem.ptrs[1]), Len: len(b)}}
		_, err := unix.ProcessVMWritev(d.Pid, local, remote, 0)
		assert.NoError(t, err, "rewriting the caller's argv[1]")
	}
	t.Cleanup(func() { testHookChecked = nil })
	c, fd := startExecClient(t)
	r := startSupervisor(t, fd, pol, Options{})

	records := func(argv ...string) []Verdict {
		var out []Verdict
		for _, d := range r.all() {
			if equalArgv(d.Exec.Argv, argv) {
				out = append(out, d)
			}
		}
		return out
	}

	// Unchanged: one record, the check's.
	assertExit(t, 0, run(t, c, "/usr/bin/test", "a", "=", "a"), "test a = a")
	require.Len(t, records("/usr/bin/test", "a", "=", "a"), 1)

	// Changed to an allowed argv: it runs as changed (exit 1: b is not a),
	// and both records are there.
	rewrite.Store("b")
	assertExit(t, 1, run(t, c, "/usr/bin/test", "a", "=", "a"), "test a = a, run as test b = a")
	checked := records("/usr/bin/test", "a", "=", "a")
	require.Len(t, checked, 2, "the check's record")
	assert.Empty(t, checked[1].Reason)
	ran := records("/usr/bin/test", "b", "=", "a")
	if assert.Len(t, ran, 1, "no record of the arguments that ran") {
		d := ran[0]
		assert.Equal(t, ReasonRedecided, d.Reason)
		assert.Equal(t, policy.Allow, d.Result.Decision)
		assert.Zero(t, d.Errno)
		assert.False(t, d.Refused(), "an allowed exec prints no denial")
		assert.Equal(t, checked[1].Pid, d.Pid)
		assert.Equal(t, "execve", d.Syscall)
		assert.Equal(t, "x86_64", d.Arch)
	}

	// Changed to a denied argv: killed before it runs, reported as such.
	rewrite.Store("c")
	res := run(t, c, "/usr/bin/test", "a", "=", "a")
	if assert.NotNil(t, res.Exit, "the exec itself succeeds (the check allowed it)") {
		assert.Equal(t, -1, *res.Exit, "killed at the exec event")
	}
	killed := records("/usr/bin/test", "c", "=", "a")
	if assert.Len(t, killed, 1) {
		assert.Equal(t, ReasonChanged, killed[0].Reason)
		assert.True(t, killed[0].Refused())
	}
}
