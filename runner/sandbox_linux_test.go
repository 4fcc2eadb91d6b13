package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// startTestSandbox starts a session-mode sandbox under a policy that denies
// "false"; Cleanup closes it.
func startTestSandbox(t *testing.T) *Sandbox {
	t.Helper()
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Deny, Pattern: "false", Source: "test"}},
	})
	require.NoError(t, err)
	sb, err := StartSandbox(context.Background(), SandboxOptions{Dir: t.TempDir(), Policy: pol, SearchPath: "/usr/bin:/bin"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

type spawned struct {
	events chan ChildEvent
	stdout *os.File
}

func spawnIn(t *testing.T, sb *Sandbox, id string, argv ...string) *spawned {
	t.Helper()
	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	t.Cleanup(func() { r.Close() })
	sp := &spawned{events: make(chan ChildEvent, 16), stdout: r}
	require.NoError(t, sb.Spawn(SpawnRequest{
		ID: id, Argv: argv, Env: []string{"PATH=/usr/bin:/bin"},
		Files: []*os.File{devnull, w, w}, Targets: []int{0, 1, 2},
		Events: func(ev ChildEvent) { sp.events <- ev },
	}))
	return sp
}

func (sp *spawned) next(t *testing.T) ChildEvent {
	t.Helper()
	select {
	case ev := <-sp.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no child event within 10s")
		return ChildEvent{}
	}
}

func TestSandboxSpawn(t *testing.T) {
	sb := startTestSandbox(t)

	t.Run("exit status and output", func(t *testing.T) {
		sp := spawnIn(t, sb, "a", "sh", "-c", "echo hello; exit 3")
		ev := sp.next(t)
		require.Equal(t, ChildStarted, ev.Kind)
		assert.Greater(t, ev.Pid, 1)
		unix.Close(ev.PidFD)
		unix.Close(ev.ShimPidFD)
		ev = sp.next(t)
		require.Equal(t, ChildExited, ev.Kind)
		assert.Equal(t, 3, ev.Status.ExitStatus())
		assert.Equal(t, ChildGone, sp.next(t).Kind)
		out, err := io.ReadAll(sp.stdout)
		require.NoError(t, err)
		assert.Equal(t, "hello\n", string(out))
	})

	t.Run("not found", func(t *testing.T) {
		sp := spawnIn(t, sb, "b", "no-such-program")
		ev := sp.next(t)
		require.Equal(t, ChildExecFailed, ev.Kind)
		assert.Equal(t, "lookup", ev.Op)
		assert.Equal(t, unix.ENOENT, ev.Errno)
		assert.Equal(t, ChildGone, sp.next(t).Kind)
	})

	t.Run("denied", func(t *testing.T) {
		sp := spawnIn(t, sb, "c", "false")
		ev := sp.next(t)
		require.Equal(t, ChildStarted, ev.Kind)
		unix.Close(ev.PidFD)
		unix.Close(ev.ShimPidFD)
		ev = sp.next(t)
		require.Equal(t, ChildExecFailed, ev.Kind)
		assert.Equal(t, "exec", ev.Op)
		assert.Equal(t, unix.EPERM, ev.Errno)
		assert.Equal(t, ChildExited, sp.next(t).Kind)
		assert.Equal(t, ChildGone, sp.next(t).Kind)
	})

	t.Run("signals are unblocked and not ignored in the child", func(t *testing.T) {
		// The shim blocks every signal and resets the Go runtime's
		// handlers; the leader must start with an empty mask and no
		// ignored signal.
		sp := spawnIn(t, sb, "e", "grep", "-E", "^(SigBlk|SigIgn):", "/proc/self/status")
		ev := sp.next(t)
		require.Equal(t, ChildStarted, ev.Kind)
		unix.Close(ev.PidFD)
		unix.Close(ev.ShimPidFD)
		out, err := io.ReadAll(sp.stdout)
		require.NoError(t, err)
		// Ignored dispositions are inherited across exec from whoever
		// started us (a CI harness may ignore some): the child may ignore
		// what this process inherited, and nothing more.
		inherited := sigIgnOf(t, "/proc/self/status")
		var blk, ign uint64
		_, err = fmt.Sscanf(string(out), "SigBlk:\t%x\nSigIgn:\t%x\n", &blk, &ign)
		require.NoError(t, err, "%q", out)
		assert.Zero(t, blk, "no signal blocked in the child")
		assert.Zero(t, ign&^inherited, "the child ignores %#x; inherited %#x", ign, inherited)
	})

	t.Run("the child sees only its own fds and is its own session", func(t *testing.T) {
		sp := spawnIn(t, sb, "d", "sh", "-c", "ls /proc/self/fd; echo sid=$(cut -d' ' -f6 /proc/self/stat) pid=$$")
		ev := sp.next(t)
		require.Equal(t, ChildStarted, ev.Kind)
		unix.Close(ev.PidFD)
		unix.Close(ev.ShimPidFD)
		out, err := io.ReadAll(sp.stdout)
		require.NoError(t, err)
		lines := strings.Fields(string(out))
		// 0, 1, 2 and the fd ls opened for the directory.
		assert.Equal(t, []string{"0", "1", "2", "3"}, lines[:4])
		require.Len(t, lines, 6)
		assert.Equal(t, "sid="+strconv.Itoa(ev.Pid), lines[4])
		assert.Equal(t, "pid="+strconv.Itoa(ev.Pid), lines[5])
	})
}

// sigIgnOf reads the SigIgn mask from a /proc/PID/status file.
func sigIgnOf(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no SigIgn in %s", path)
	return 0
}

// A sandbox whose init never answers is ended when the start's context is
// cancelled (cordon exec --no-daemon on SIGTERM), and one whose init dies
// fails at once with what it said: the host keeps no copy of the init's end
// of the control socket, so its EOF arrives.
func TestStartSandboxEnds(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	pol, err := policy.Compile(policy.Config{Default: policy.Allow})
	require.NoError(t, err)
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		check   func(t *testing.T, err error)
	}{
		{
			name: "init never answers: context cancelled", script: "exec sleep 60", timeout: 300 * time.Millisecond,
			check: func(t *testing.T, err error) { assert.ErrorIs(t, err, context.DeadlineExceeded) },
		},
		{
			name: "init dies", script: "echo 'init: cannot go on' >&2; exit 3", timeout: time.Minute,
			check: func(t *testing.T, err error) {
				var se *SetupError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, "sandbox setup failed: init: cannot go on (the sandbox exited before it was ready); "+hintDoctor, err.Error())
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := dir + "/init"
			require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755))
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			start := time.Now()
			sb, err := StartSandbox(ctx, SandboxOptions{Dir: dir, Policy: pol, Exe: exe})
			if sb != nil {
				_ = sb.Close()
			}
			require.Error(t, err)
			assert.Less(t, time.Since(start), 5*time.Second, "bounded, not a hang")
			tc.check(t, err)
		})
	}
}
