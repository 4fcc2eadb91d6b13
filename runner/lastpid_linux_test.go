package runner

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// hostLastPid is the last pid allocated in this process's pid namespace.
func hostLastPid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return n
}

// TestLastPidIsTheSandboxs: in bubblewrap's tier the supervisor's pid
// counter (Options.LastPid) is the sandbox's own, as a process in the
// sandbox reads it, not the host's. The host's counter is first moved well
// past anything the sandbox allocates, so that reading it (what the
// supervisor did before, whichever proc it read the file from) fails.
func TestLastPidIsTheSandboxs(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	pol, err := policy.Compile(policy.Config{Default: policy.Allow})
	require.NoError(t, err)
	sb, err := StartSandbox(context.Background(), SandboxOptions{Dir: t.TempDir(), Policy: pol,
		SearchPath: "/usr/bin:/bin", Isolation: IsolationBwrap})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	require.NotNil(t, sb.lastPid, "bubblewrap's tier asks the init")

	// The host's counter well above the sandbox's (it may have wrapped
	// to a small value).
	for i := 0; i < 2000 && hostLastPid(t) < 1000; i++ {
		require.NoError(t, exec.Command("/bin/true").Run())
	}
	host := hostLastPid(t)
	require.GreaterOrEqual(t, host, 1000)

	sp := spawnIn(t, sb, "cat", "cat", "/proc/sys/kernel/ns_last_pid")
	ev := sp.next(t)
	require.Equal(t, ChildStarted, ev.Kind)
	unix.Close(ev.PidFD)
	unix.Close(ev.ShimPidFD)
	out, err := io.ReadAll(sp.stdout)
	require.NoError(t, err)
	inside, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err, "cat printed %q", out)
	require.Equal(t, ChildExited, sp.next(t).Kind)
	require.Equal(t, ChildGone, sp.next(t).Kind)

	got, err := sb.lastPid.get()
	require.NoError(t, err)
	// cat's own pid is what it printed; nothing else was spawned since.
	assert.GreaterOrEqual(t, got, inside, "the sandbox's counter only grows")
	assert.LessOrEqual(t, got, inside+3, "the sandbox's counter, not another's")
	assert.Less(t, got, 100, "a sandbox that started a handful of processes")
	assert.Greater(t, host-got, 500, "not the host's counter (%d)", host)
	t.Logf("the sandbox's counter: %d (cat printed %d); the host's: %d", got, inside, host)

	// Asked again, the same: the answer is the counter now, not a
	// leftover.
	again, err := sb.lastPid.get()
	require.NoError(t, err)
	assert.Equal(t, got, again)

	// Once the sandbox is closed, no answer: an error, never a number.
	require.NoError(t, sb.Close())
	_, err = sb.lastPid.get()
	assert.Error(t, err)
}

// TestLastPidOnlyWithItsOwnNamespace: without bubblewrap the sandbox
// shares the host's pid namespace, whose counter the supervisor reads
// itself: no socket, and the init is not asked to serve one.
func TestLastPidOnlyWithItsOwnNamespace(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	pol, err := policy.Compile(policy.Config{Default: policy.Allow})
	require.NoError(t, err)
	sb, err := StartSandbox(context.Background(), SandboxOptions{Dir: t.TempDir(), Policy: pol,
		SearchPath: "/usr/bin:/bin", Isolation: IsolationNone})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	assert.Nil(t, sb.lastPid)
	sp := spawnIn(t, sb, "true", "true")
	ev := sp.next(t)
	require.Equal(t, ChildStarted, ev.Kind)
	unix.Close(ev.PidFD)
	unix.Close(ev.ShimPidFD)
	require.Equal(t, ChildExited, sp.next(t).Kind)
}
