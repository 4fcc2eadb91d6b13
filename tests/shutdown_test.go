package tests

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var stderrMu sync.Mutex

func TestExitIsPrompt(t *testing.T) {
	requireSeccompNotify(t)
	r := cordon(t, "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Less(t, r.elapsed, 2*time.Second, "cordon exits promptly after the command (generous bound; see make bench for figures)")
}

func TestTeardownIsBoundedWhenSupervisorIsWedged(t *testing.T) {
	requireSeccompNotify(t)
	// After answering the command's own exec, the supervisor's next receive
	// never returns, as a kernel that never wakes a parked ioctl would. The
	// background exec is left waiting; the command exits; cordon must still
	// exit within the 2 s bound (plus scheduling slack).
	// bash waits with builtins only (any exec would wedge too), long enough
	// for the background exec to be waiting on the supervisor.
	r := cordon(t, "--debug-wedge-supervisor", "1", "--", "bash", "-c",
		`/bin/true & s=$SECONDS; while [ $((SECONDS-s)) -lt 1 ]; do :; done; exit 0`)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.GreaterOrEqual(t, r.elapsed, 2*time.Second, "the wedge must be real: teardown waited for the 2 s bound")
	assert.Less(t, r.elapsed, 6*time.Second, "teardown is bounded (1 s of command, 2 s bound, a race-built binary's start-up on a loaded machine)")
	requireNoLeftovers(t)
}

func TestFailClosedWhenSupervisorIsGone(t *testing.T) {
	requireSeccompNotify(t)
	// The supervisor closes its listener after the first decision, as if it
	// had died. Every later exec in the sandbox must fail.
	r := cordon(t, "--debug-drop-supervisor", "1", "--", "sh", "-c", "/bin/echo should-not-run; echo rc=$?")
	assert.NotContains(t, r.stdout, "should-not-run")
	assert.Contains(t, r.stdout, "rc=126")
	assert.Contains(t, r.stderr, "Function not implemented", "the kernel answers ENOSYS without a listener")
}

func TestSandboxDiesWithCordon(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	s := startCordon(t, "--rw", dir, "--", "sh", "-c",
		`echo ready; while :; do /bin/true && echo tick >> `+filepath.Join(dir, "ticks")+`; done`)
	s.waitLine(t, "ready")
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.done
	requireNoLeftovers(t)
	assertNoProcess(t, "echo tick >>")
	// Nothing in the sandbox runs on: the tick file stops growing.
	size := func() int64 {
		st, err := os.Stat(filepath.Join(dir, "ticks"))
		require.NoError(t, err)
		return st.Size()
	}
	before := size()
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, before, size())
}

func TestNoPlumbingReachesTheCommand(t *testing.T) {
	requireSeccompNotify(t)
	// File descriptors: the command has exactly what a plain run has.
	fdScript := `for f in /proc/self/fd/*; do n=${f##*/}; [ "$n" -le 2 ] && echo $n; l=$(readlink $f) && [ "$n" -gt 2 ] && echo "extra:$n:$l"; done; true`
	r := cordon(t, "--", "bash", "-c", fdScript)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "extra:", "only stdin, stdout and stderr reach the command (the glob's own dir fd aside)")
	// Environment: exactly the caller's, less cordon's own CORDON_*.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CORDON_") {
			env = append(env, kv)
		}
	}
	env = append(env, raceEnv, "TEST_MARKER=1")
	in := runCordon(t, runOpts{env: []string{"TEST_MARKER=1", "CORDON_TEST_MARKER=1"}}, "--", "env", "-0")
	require.Equal(t, 0, in.code, in.stderr)
	got := strings.Split(strings.TrimRight(in.stdout, "\x00"), "\x00")
	assert.ElementsMatch(t, env, got, "the command's environment is the caller's less CORDON_*, nothing added")
}
