package supervisor

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSeizeDoesNotTrustAStaleEntry: an entry left in the tracer's table for
// a task that is gone must not vouch for another task that got its id (the
// fourth red team's exploit: such an exec was continued with no exec-event
// check). seize attaches for real unless the task is traced by us.
func TestSeizeDoesNotTrustAStaleEntry(t *testing.T) {
	testcap.RequirePtrace(t)
	runtime.LockOSThread() // ptrace requests come from the thread that attached
	defer runtime.UnlockOSThread()
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	tr := &tracer{tracees: map[int]*tracee{pid: {tid: pid}}} // stale: we never attached to pid
	require.NoError(t, tr.seize(attachReq{tid: pid}))
	st, err := proc.ReadStatus(pid)
	require.NoError(t, err)
	require.Equal(t, unix.Gettid(), st.TracerPid, "attached for real, by this thread")
	require.True(t, tracedByUs(pid))
	_ = unix.PtraceInterrupt(pid)
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WALL, nil)
	require.NoError(t, unix.PtraceDetach(pid))
}
