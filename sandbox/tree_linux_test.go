package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Process trees: process-edge-cases.md 1-14.

// Edge 1: `sleep 300 & exit 0`. The leader's exit is reported once the
// output is drained or the drain bound passes; the orphan is counted; Exec
// removes it, and for a started process Kill, the timeout and Close each do.
func TestOrphanOfExitedLeader(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})

	t.Run("exec returns within the drain bound and removes the orphan", func(t *testing.T) {
		t0 := time.Now()
		res := execIn(t, s, ExecRequest{Script: "sleep 3001 & exit 0"})
		took := time.Since(t0)
		assert.Equal(t, 0, res.ExitCode)
		assert.Equal(t, 1, res.Orphans)
		assert.Less(t, took, 2*time.Second, "the orphan holds stdout: Exec must stop at the drain bound")
		assert.Empty(t, withMarker(s, "3001"), "the orphan outlived Exec")
	})

	t.Run("kill after the exit removes it and keeps the exit code", func(t *testing.T) {
		p := start(t, s, StartRequest{Script: "sleep 3002 & exit 0"})
		exit, err := p.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
		assert.Equal(t, 0, exit.ExitCode)
		assert.Equal(t, 1, exit.Orphans)
		require.Len(t, withMarker(s, "3002"), 1, "the orphan runs on after the leader's exit")
		killed, err := p.Kill(testCtx(t, 10*time.Second), time.Second)
		require.NoError(t, err)
		assert.Equal(t, exit, killed, "the kill keeps the real exit")
		assert.False(t, killed.KillRequested, "kill_requested says the kill came before the exit")
		assert.Empty(t, withMarker(s, "3002"))
	})

	t.Run("the timeout removes it", func(t *testing.T) {
		p := start(t, s, StartRequest{Script: "sleep 3003 & exit 0", Timeout: Duration(500 * time.Millisecond)})
		exit, err := p.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
		assert.Equal(t, 0, exit.ExitCode)
		assert.False(t, exit.TimedOut, "the leader exited before the timeout")
		require.Len(t, withMarker(s, "3003"), 1)
		eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "3003")) == 0 }, "the timeout did not remove the orphan")
	})

	t.Run("closing the session removes it", func(t *testing.T) {
		s2 := newTestSession(t, m, SessionSpec{})
		p := start(t, s2, StartRequest{Script: "sleep 3004 & exit 0"})
		_, err := p.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
		pids := withMarker(s2, "3004")
		require.Len(t, pids, 1)
		require.NoError(t, s2.Close(testCtx(t, 10*time.Second)))
		assert.False(t, alive(pids[0]), "the orphan survived Close")
	})
}

// Edge 2: a grandchild holds stdout after the leader exits, with and
// without setsid: no hang, bounded by the drain timeout.
func TestGrandchildHoldsStdout(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	tests := []struct {
		name, script string
	}{
		{"plain", "sh -c 'sleep 3011; echo late' & echo early"},
		{"setsid", "setsid sh -c 'sleep 3012; echo late' & echo early"},
		{"setsid -f, stderr too", "setsid -f sh -c 'sleep 3013; echo late >&2' ; echo early"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			res := execIn(t, s, ExecRequest{Script: tc.script})
			assert.Less(t, time.Since(t0), 2*time.Second)
			assert.Equal(t, "early\n", string(res.Stdout))
			assert.Equal(t, 0, res.ExitCode)
			assert.GreaterOrEqual(t, res.Orphans, 1)

			t0 = time.Now()
			p := start(t, s, StartRequest{Script: tc.script})
			evs := collect(t, p, 0)
			assert.Less(t, time.Since(t0), 2*time.Second)
			assert.Equal(t, "early\n", stdoutOf(evs))
			_, err := p.Kill(testCtx(t, 10*time.Second), 0)
			require.NoError(t, err)
		})
	}
	assert.Empty(t, withMarker(s, "301"))
}

// Edge 3: in a 3-level tree the leaves die, not only the wrappers.
func TestThreeLevelTreeLeavesDie(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: `
		sh -c '
			sh -c "echo leaf=\$\$; exec sleep 3021" &
			sh -c "echo leaf=\$\$; exec sleep 3022" &
			wait' &
		echo leaf=$$
		wait`})
	// The three leaves: two sleeps two levels down and the leader itself.
	var leaves []int
	eventually(t, 5*time.Second, func() bool {
		evs, _, _ := p.log.read(0)
		leaves = leaves[:0]
		for _, m := range regexp.MustCompile(`leaf=(\d+)`).FindAllStringSubmatch(stdoutOf(evs), -1) {
			n, _ := strconv.Atoi(m[1])
			leaves = append(leaves, n)
		}
		return len(leaves) == 3 && len(withMarker(s, "302")) == 2
	}, "three leaves did not start")
	var hosts []int
	for _, ns := range leaves {
		h := hostPidOf(s, ns)
		require.NotZero(t, h, "leaf %d not found on the host", ns)
		hosts = append(hosts, h)
	}
	exit, err := p.Kill(testCtx(t, 10*time.Second), time.Second)
	require.NoError(t, err)
	assert.Equal(t, int(unix.SIGTERM), exit.Signal)
	for _, h := range hosts {
		assert.False(t, alive(h), "leaf %d survived", h)
	}
}

// Edge 4: escapees (setsid -f, nohup, double fork, setsid + double fork)
// still belong to the process that started them and die with it, and only
// with it.
func TestEscapeesBelongToTheirProcess(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	tests := []struct {
		name, escape, marker string
		leaderExits          bool
	}{
		{"setsid -f", "setsid -f sleep 3031", "3031", false},
		{"nohup", "nohup sleep 3032 >/dev/null 2>&1 &", "3032", false},
		{"double fork", "( sleep 3033 & )", "3033", false},
		{"setsid in a double fork", "( setsid sleep 3034 & )", "3034", false},
		{"leader exits after detaching", "( setsid sleep 3035 & )", "3035", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := func(tail string) string {
				if tc.leaderExits {
					tail = "exit 0"
				}
				return tc.escape + "\necho detached\n" + tail
			}
			// A bystander that detaches the same way must survive.
			bystander := start(t, s, StartRequest{Script: script("sleep 3039")})
			p := start(t, s, StartRequest{Script: script("sleep 3038")})
			waitOutput(t, p, "detached")
			waitOutput(t, bystander, "detached")
			marker := tc.marker
			eventually(t, 5*time.Second, func() bool { return len(withMarker(s, marker)) == 2 }, "escapees did not start")
			// The escapee was re-parented to the process's shim, not to
			// the init.
			for _, h := range withMarker(s, marker) {
				st, err := proc.ReadStat(h)
				require.NoError(t, err)
				assert.NotEqual(t, int(s.initPid.Load()), st.PPid, "escapee %d re-parented to the init", h)
			}
			_, err := p.Kill(testCtx(t, 10*time.Second), 500*time.Millisecond)
			require.NoError(t, err)
			assert.Len(t, withMarker(s, marker), 1, "exactly the bystander's escapee is left")
			_, err = bystander.Kill(testCtx(t, 10*time.Second), 500*time.Millisecond)
			require.NoError(t, err)
			assert.Empty(t, withMarker(s, marker))
		})
	}
}

// Edge 5: `trap ” TERM`: the grace is honoured, then SIGKILL; the exit
// says signal 9 and kill_requested.
func TestKillHonoursGraceThenSIGKILL(t *testing.T) {
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: "trap '' TERM; echo ready; sleep 3041"})
	waitOutput(t, p, "ready")
	const grace = 400 * time.Millisecond
	t0 := time.Now()
	exit, err := p.Kill(testCtx(t, 10*time.Second), grace)
	took := time.Since(t0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, took, grace, "SIGKILL came before the grace ended")
	assert.Less(t, took, grace+time.Second)
	assert.Equal(t, int(unix.SIGKILL), exit.Signal)
	assert.Equal(t, 137, exit.ExitCode)
	assert.True(t, exit.KillRequested)
	assert.False(t, exit.TimedOut)
	assert.Empty(t, withMarker(s, "3041"))
}

// Edge 6: a process that keeps forking during the grace, and a fork storm
// during the kill: the kill still ends in bounded time with the tree gone.
func TestKillWhileForking(t *testing.T) {
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	tests := []struct {
		name   string
		script string
		grace  time.Duration
	}{
		{
			name:   "forks TERM-ignoring children during the grace",
			script: "trap '' TERM; echo ready; while :; do sleep 3051 & sleep 0.02; done",
			grace:  300 * time.Millisecond,
		},
		{
			// 64 shells, each forking subshells as fast as it can: the
			// tree changes under every walk.
			name:   "fork storm",
			script: "f() { if [ $1 -gt 0 ]; then f $(($1-1)) & f $(($1-1)) & fi; while :; do ( : ); done; }; echo ready; f 5",
			grace:  0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, s, StartRequest{Script: tc.script})
			waitOutput(t, p, "ready")
			time.Sleep(300 * time.Millisecond)
			t0 := time.Now()
			exit, err := p.Kill(testCtx(t, 20*time.Second), tc.grace)
			require.NoError(t, err)
			assert.Less(t, time.Since(t0), tc.grace+killBound, "kill did not finish in bounded time")
			assert.Equal(t, int(unix.SIGKILL), exit.Signal)
			select {
			case <-p.goneCh:
			default:
				t.Fatal("the tree is not empty after Kill returned")
			}
			assert.Empty(t, withMarker(s, "3051"))
		})
	}
}

// Edge 7: a stopped tree gets SIGCONT after SIGTERM, so it dies gracefully
// (its TERM trap runs) long before the grace ends.
func TestKillStoppedTreeGracefully(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done"})
	waitOutput(t, p, "ready")
	require.NoError(t, p.Signal(testCtx(t, time.Second), unix.SIGSTOP, ScopeTree))
	eventually(t, 2*time.Second, func() bool {
		for _, h := range sessionTree(s) {
			if h.state == 'T' {
				return true
			}
		}
		return false
	}, "the tree did not stop")
	t0 := time.Now()
	exit, err := p.Kill(testCtx(t, 10*time.Second), 5*time.Second)
	require.NoError(t, err)
	assert.Less(t, time.Since(t0), 2*time.Second, "waited for the grace: no SIGCONT?")
	assert.Equal(t, 3, exit.ExitCode, "the TERM trap did not run")
	assert.Contains(t, stdoutOf(collect(t, p, 0)), "got-term")
}

// Edge 8: zombies count as dead, and none accumulates in the sandbox (the
// shims and the init reap) or on the host.
func TestZombies(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})

	// The leader execs into a program that never reaps: its child becomes
	// a zombie the tree walk must not count.
	p := start(t, s, StartRequest{Script: "sleep 0.01 & exec sleep 3061"})
	eventually(t, 5*time.Second, func() bool {
		for _, c := range proc.Children(hostPidOf(s, mustLeaderNs(t, p))) {
			if st, err := proc.ReadStat(c); err == nil && st.State == 'Z' {
				return true
			}
		}
		return false
	}, "no zombie appeared")
	ms := p.members()
	assert.Len(t, ms, 1, "the zombie counted as a member")
	signalMembers(ms)
	_, err := p.Kill(testCtx(t, 10*time.Second), time.Second)
	require.NoError(t, err)

	// Many short processes, with orphans that exit on their own.
	for i := 0; i < 20; i++ {
		execIn(t, s, ExecRequest{Script: "(sleep 0.01 &) ; sleep 0.01 & exit 0"})
		p := start(t, s, StartRequest{Script: "(true &) ; exit 0"})
		_, err := p.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
	}
	eventually(t, 5*time.Second, func() bool {
		for _, c := range proc.Children(int(s.initPid.Load())) {
			if st, err := proc.ReadStat(c); err == nil && st.State == 'Z' {
				return false
			}
		}
		return true
	}, "zombies accumulate under the init")
	// Other tests run in parallel: a child of this process that exited a
	// moment ago is a zombie until its waiter reaps it. None may stay one.
	eventually(t, 5*time.Second, func() bool {
		for _, c := range proc.Children(unix.Getpid()) {
			if st, err := proc.ReadStat(c); err == nil && st.State == 'Z' {
				return false
			}
		}
		return true
	}, "a zombie child of the host process stays unreaped")
}

func mustLeaderNs(t testing.TB, p *Process) int {
	t.Helper()
	<-p.startedCh
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NotNil(t, p.leader)
	for _, h := range sessionTree(p.sess) {
		if h.pid == p.leaderHost {
			return h.nsPid
		}
	}
	t.Fatal("leader not found")
	return 0
}

// Edge 9: a kill racing the natural exit: the real status wins, there is
// exactly one exit event, Wait and Kill agree; a kill after the exit is
// idempotent and keeps the code; a signal never reaches a reused pid.
func TestKillRacingExit(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})

	natural := 0
	for i := 0; i < 20; i++ {
		p := start(t, s, StartRequest{Script: "exit 5"})
		if i%2 == 1 {
			time.Sleep(time.Duration(i) * time.Millisecond)
		}
		killed, err := p.Kill(testCtx(t, 10*time.Second), 0)
		require.NoError(t, err)
		waited, err := p.Wait(testCtx(t, time.Second))
		require.NoError(t, err)
		assert.Equal(t, killed, waited)
		if killed.Signal == 0 {
			natural++
			assert.Equal(t, 5, killed.ExitCode, "the real exit code wins")
		} else {
			assert.Equal(t, int(unix.SIGKILL), killed.Signal)
		}
		exits := 0
		for _, ev := range collect(t, p, 0) {
			if ev.Kind == EventExit {
				exits++
				assert.Equal(t, killed, *ev.Exit)
			}
		}
		assert.Equal(t, 1, exits, "exactly one exit event")
	}
	t.Logf("%d of 20 exits won the race", natural)

	t.Run("kill after exit", func(t *testing.T) {
		p := start(t, s, StartRequest{Script: "exit 5"})
		exit, err := p.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
		for range 3 {
			again, err := p.Kill(testCtx(t, 5*time.Second), time.Second)
			require.NoError(t, err)
			assert.Equal(t, exit, again)
		}
		assert.Equal(t, 5, exit.ExitCode)
		assert.False(t, exit.KillRequested)
		assert.ErrorIs(t, p.Signal(testCtx(t, time.Second), unix.SIGTERM, ScopeProcess), ErrExited)
		assert.ErrorIs(t, p.Signal(testCtx(t, time.Second), unix.SIGTERM, ScopeTree), ErrExited)
	})

	t.Run("a pidfd never reaches a reused pid", func(t *testing.T) {
		// Signals go through pidfds: once the process is reaped, the
		// kernel answers ESRCH for its pidfd, whoever has the pid now.
		cmd := exec.Command("sleep", "30")
		require.NoError(t, cmd.Start())
		fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		require.NoError(t, err)
		pf := newPidFD(fd)
		defer pf.close()
		require.True(t, pf.alive())
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		assert.False(t, pf.alive())
		assert.ErrorIs(t, pf.signal(unix.SIGKILL), unix.ESRCH)
		assert.Zero(t, pf.hostPid())
		// A walk from a dead root finds nothing, whoever has its pid now.
		assert.Empty(t, walkTree(cmd.Process.Pid, pf))
	})
}

// Edge 10: N concurrent kills and a kill-all: one escalation, every caller
// sees the same final status.
func TestConcurrentKillsCoalesce(t *testing.T) {
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: "trap '' TERM; echo ready; sleep 3101"})
	waitOutput(t, p, "ready")
	const grace = 300 * time.Millisecond
	const n = 8
	var wg sync.WaitGroup
	exits := make([]ExitInfo, n)
	ops := make([]*killOp, n)
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops[i] = p.requestKill(grace, byUser)
			var err error
			exits[i], err = p.Kill(testCtx(t, 10*time.Second), grace)
			assert.NoError(t, err)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		assert.NoError(t, s.KillAll(testCtx(t, 10*time.Second), grace))
	}()
	wg.Wait()
	took := time.Since(t0)
	for i := range n {
		assert.Same(t, ops[0], ops[i], "a second escalation started")
		assert.Equal(t, exits[0], exits[i])
	}
	assert.Equal(t, int(unix.SIGKILL), exits[0].Signal)
	assert.True(t, exits[0].KillRequested)
	assert.Less(t, took, grace+time.Second)
}

// Edge 11: waiters and subscribers arriving after the exit get the retained
// exit; after the retention they get not-found.
func TestExitRetention(t *testing.T) {
	t.Parallel()
	const retention = 400 * time.Millisecond
	m := newTestManager(t, func(o *Options) { o.ExitRetention = retention })
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: "echo out; exit 4"})
	exit, err := p.Wait(testCtx(t, 5*time.Second))
	require.NoError(t, err)
	exitedAt := time.Now()

	late, err := m.Wait(testCtx(t, time.Second), s.ID(), p.ID())
	require.NoError(t, err)
	assert.Equal(t, exit, late)
	var kinds []EventKind
	for ev, err := range m.Events(testCtx(t, time.Second), s.ID(), p.ID(), 0) {
		require.NoError(t, err)
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, []EventKind{EventStdout, EventExit}, kinds)
	info, err := m.GetProcess(testCtx(t, time.Second), s.ID(), p.ID())
	require.NoError(t, err)
	assert.Equal(t, ProcessExited, info.State)
	require.NotNil(t, info.Exit)
	assert.Equal(t, 4, info.Exit.ExitCode)
	require.Less(t, time.Since(exitedAt), retention, "the checks above took longer than the retention")

	eventually(t, 5*time.Second, func() bool {
		_, err := m.GetProcess(context.Background(), s.ID(), p.ID())
		return errors.Is(err, ErrNotFound)
	}, "the record outlived its retention")
	_, err = m.Wait(testCtx(t, time.Second), s.ID(), p.ID())
	assert.ErrorIs(t, err, ErrNotFound)
	for _, err := range m.Events(testCtx(t, time.Second), s.ID(), p.ID(), 0) {
		assert.ErrorIs(t, err, ErrNotFound)
	}
	_, err = m.Kill(testCtx(t, time.Second), s.ID(), p.ID(), 0)
	assert.ErrorIs(t, err, ErrNotFound)
	list, err := m.ListProcesses(testCtx(t, time.Second), s.ID())
	require.NoError(t, err)
	assert.Empty(t, list)
}

// Edge 12: timeout: SIGTERM, grace, SIGKILL with exact timing, timed_out,
// shell code 124; also while an exec waits for a policy decision (ask).
func TestTimeout(t *testing.T) {
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	const timeout, grace = 300 * time.Millisecond, 300 * time.Millisecond
	tests := []struct {
		name     string
		script   string
		signal   syscall.Signal
		min, max time.Duration
	}{
		{"dies at SIGTERM", "sleep 3121", unix.SIGTERM, timeout, timeout + 400*time.Millisecond},
		{"ignores SIGTERM", "trap '' TERM; sleep 3122", unix.SIGKILL, timeout + grace, timeout + grace + 400*time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name+" (exec)", func(t *testing.T) {
			res := execIn(t, s, ExecRequest{Script: tc.script, Timeout: Duration(timeout), KillGrace: Duration(grace)})
			assert.True(t, res.TimedOut)
			assert.False(t, res.KillRequested)
			assert.Equal(t, int(tc.signal), res.Signal)
			assert.Equal(t, 124, res.ShellCode())
			assert.GreaterOrEqual(t, time.Duration(res.Duration), tc.min)
			assert.Less(t, time.Duration(res.Duration), tc.max)
		})
		t.Run(tc.name+" (start)", func(t *testing.T) {
			p := start(t, s, StartRequest{Script: tc.script, Timeout: Duration(timeout), KillGrace: Duration(grace)})
			exit, err := p.Wait(testCtx(t, 10*time.Second))
			require.NoError(t, err)
			assert.True(t, exit.TimedOut)
			assert.Equal(t, int(tc.signal), exit.Signal)
			assert.GreaterOrEqual(t, time.Duration(exit.Duration), tc.min)
			assert.Less(t, time.Duration(exit.Duration), tc.max)
		})
	}

	t.Run("while an exec waits for an ask", func(t *testing.T) {
		asked := make(chan error, 1)
		s := newTestSession(t, m, SessionSpec{
			Policy: "rules:\n  - ask: touch\n",
			Ask: func(ctx context.Context, _ string, _ ExecDecision) bool {
				<-ctx.Done()
				asked <- ctx.Err()
				return true
			},
		})
		res := execIn(t, s, ExecRequest{Script: "echo start; touch marker; echo after", Timeout: Duration(timeout), KillGrace: Duration(grace)})
		assert.True(t, res.TimedOut)
		assert.Equal(t, int(unix.SIGTERM), res.Signal)
		assert.Less(t, time.Duration(res.Duration), timeout+400*time.Millisecond, "the kill waited for the ask")
		assert.Equal(t, "start\n", string(res.Stdout))
		select {
		case err := <-asked:
			assert.ErrorIs(t, err, context.Canceled, "the ask was not told its caller died")
		case <-time.After(5 * time.Second):
			t.Fatal("the ask was never cancelled")
		}
		// The pending ask is recorded while the exec waits; the final
		// decision may come after Exec returned (its caller was dead).
		require.NotEmpty(t, res.Decisions)
		assert.Equal(t, "ask", res.Decisions[0].Decision)
		assert.True(t, res.Decisions[0].Asked)
		assert.Equal(t, []string{"touch", "marker"}, res.Decisions[0].Argv)
		assert.Equal(t, "ok\n", string(execIn(t, s, ExecRequest{Script: "echo ok"}).Stdout), "the supervisor did not carry on")
	})
}

// Edge 13: `exit 137` is distinguishable from a real SIGKILL.
func TestExit137IsNotSIGKILL(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	tests := []struct {
		name         string
		script       string
		code, signal int
	}{
		{"exit 137", "exit 137", 137, 0},
		{"SIGKILL", "kill -9 $$", 137, 9},
		{"exit 143", "exit 143", 143, 0},
		{"SIGTERM", "kill -TERM $$", 143, 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := execIn(t, s, ExecRequest{Script: tc.script})
			assert.Equal(t, tc.code, res.ExitCode)
			assert.Equal(t, tc.signal, res.Signal)
			p := start(t, s, StartRequest{Script: tc.script})
			exit, err := p.Wait(testCtx(t, 5*time.Second))
			require.NoError(t, err)
			assert.Equal(t, tc.code, exit.ExitCode)
			assert.Equal(t, tc.signal, exit.Signal)
		})
	}
}

// Edge 14: invalid signals are refused before anything is sent; signalling
// an exited process gives ErrExited; scopes reach the leader or the tree.
func TestSignal(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: `
		trap 'echo leader-usr1' USR1
		sh -c 'trap "echo child-usr1" USR1; echo child-ready; while :; do sleep 0.05; done' &
		echo leader-ready
		while :; do sleep 0.05; done`})
	waitOutput(t, p, "leader-ready")
	waitOutput(t, p, "child-ready")

	for _, sig := range []syscall.Signal{0, -1, 65, 1000} {
		err := p.Signal(testCtx(t, time.Second), sig, ScopeTree)
		assert.ErrorIs(t, err, ErrInvalidSignal, "signal %d", sig)
		assert.ErrorIs(t, m.Signal(testCtx(t, time.Second), s.ID(), p.ID(), sig, ScopeProcess), ErrInvalidSignal)
	}
	assert.ErrorIs(t, p.Signal(testCtx(t, time.Second), unix.SIGUSR1, "group"), ErrInvalid)
	assert.ErrorIs(t, m.Signal(testCtx(t, time.Second), s.ID(), "p-nosuch", unix.SIGUSR1, ScopeTree), ErrNotFound)
	assert.Equal(t, ProcessRunning, p.Info().State, "a refused signal reached the process")

	require.NoError(t, p.Signal(testCtx(t, time.Second), unix.SIGUSR1, ScopeProcess))
	waitOutput(t, p, "leader-usr1")
	time.Sleep(200 * time.Millisecond)
	evs, _, _ := p.log.read(0)
	assert.NotContains(t, stdoutOf(evs), "child-usr1", "a process-scoped signal reached the tree")
	require.NoError(t, p.Signal(testCtx(t, time.Second), unix.SIGUSR1, ScopeTree))
	waitOutput(t, p, "child-usr1")

	_, err := p.Kill(testCtx(t, 10*time.Second), time.Second)
	require.NoError(t, err)
	assert.ErrorIs(t, p.Signal(testCtx(t, time.Second), unix.SIGTERM, ScopeProcess), ErrExited)
	assert.ErrorIs(t, p.Signal(testCtx(t, time.Second), unix.SIGTERM, ScopeTree), ErrExited)
	assert.ErrorIs(t, p.Signal(testCtx(t, time.Second), 99, ScopeTree), ErrInvalidSignal, "validation comes first")
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want syscall.Signal
		err  bool
	}{
		{"TERM", unix.SIGTERM, false},
		{"SIGKILL", unix.SIGKILL, false},
		{"15", unix.SIGTERM, false},
		{"64", 64, false},
		{"0", 0, true},
		{"65", 0, true},
		{"-9", 0, true},
		{"NOPE", 0, true},
		{"", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSignal(tc.in)
			if tc.err {
				assert.ErrorIs(t, err, ErrInvalidSignal)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The workload runs as the same user as its shim. From Landlock ABI 6 it
// cannot signal it (the command's scope layer): the shim stays, and so does
// what it adopted. Below, the documented limit: it can kill it; the
// leader's exit is still reported with its real status (the init reaps it),
// Kill still reaches the leader and its own descendants, and what had
// already been re-parented to the shim goes to the init, where only closing
// the session reaches it.
func TestShimKilledByWorkload(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: "setsid -f sleep 3401; kill -9 $PPID 2>/dev/null && echo shim-killed || echo shim-kept; sleep 3402 & exec sleep 3403"})
	scoped := isolation.LandlockABI() >= 6
	if scoped {
		waitOutput(t, p, "shim-kept")
	} else {
		waitOutput(t, p, "shim-killed")
	}
	eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "340")) == 3 }, "sleeps did not start")
	if !scoped {
		for _, h := range withMarker(s, "3401") {
			st, err := proc.ReadStat(h)
			require.NoError(t, err)
			assert.Equal(t, int(s.initPid.Load()), st.PPid, "the escapee went to the init with the shim's death")
		}
	}
	exit, err := p.Kill(testCtx(t, 10*time.Second), 200*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, int(unix.SIGTERM), exit.Signal, "the real status, reported by the init")
	assert.False(t, exit.Lost)
	assert.Empty(t, withMarker(s, "3402"), "the leader's own descendants are reached")
	assert.Empty(t, withMarker(s, "3403"))
	escapee := withMarker(s, "3401")
	if scoped {
		assert.Empty(t, escapee, "the shim lives: its adopted escapee is in the tree Kill ends")
		return
	}
	require.Len(t, escapee, 1, "the limit: the escapee is out of the tree's reach")
	require.NoError(t, s.Close(testCtx(t, 5*time.Second)))
	assert.False(t, alive(escapee[0]), "closing the session ends it")
}
