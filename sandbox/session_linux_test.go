package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Sessions: process-edge-cases.md 22-26.

// Edge 22: cd and export persist across Exec in carry mode; a directory
// outside the sandbox's view is not kept.
func TestCarryMode(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	home := m.opts.Dir
	require.NoError(t, os.Mkdir(filepath.Join(home, "sub"), 0o755))
	s := newTestSession(t, m, SessionSpec{Carry: true})
	run := func(script string) ExecResult {
		t.Helper()
		return execIn(t, s, ExecRequest{Script: script})
	}

	res := run("cd sub && export FOO=bar && NOTEXPORTED=x")
	assert.Equal(t, filepath.Join(home, "sub"), res.Cwd)
	assert.Equal(t, filepath.Join(home, "sub")+"\nbar\n[]\n", string(run("pwd; echo $FOO; echo \"[$NOTEXPORTED]\"").Stdout))
	assert.Equal(t, filepath.Join(home, "sub"), s.Info().Cwd)

	t.Run("values keep every byte", func(t *testing.T) {
		run(`export Q="it's a \"quote\"" NL="a
b" BIN="$(printf '\377\001x')" DOLLAR='$HOME \ back'`)
		res := run(`printf '%s|%s|%s|%s' "$Q" "$NL" "$BIN" "$DOLLAR"`)
		assert.Equal(t, "it's a \"quote\"|a\nb|\xff\x01x|$HOME \\ back", string(res.Stdout))
	})
	t.Run("unset is carried", func(t *testing.T) {
		run("unset FOO")
		assert.Equal(t, "[]\n", string(run(`echo "[$FOO]"`).Stdout))
	})
	t.Run("a script that exits carries its state and its code", func(t *testing.T) {
		res := run("cd /; export E=1; exit 3")
		assert.Equal(t, 3, res.ExitCode)
		assert.Equal(t, "/", res.Cwd)
		assert.Equal(t, "/\n1\n", string(run("pwd; echo $E").Stdout))
		run("cd " + home)
	})
	t.Run("argv commands run in the carried state", func(t *testing.T) {
		run("cd sub; export A=argv")
		res := execIn(t, s, ExecRequest{Argv: []string{"sh", "-c", "pwd; echo $A"}})
		assert.Equal(t, filepath.Join(home, "sub")+"\nargv\n", string(res.Stdout))
		res = execIn(t, s, ExecRequest{Argv: []string{"pwd"}, Dir: ".."})
		assert.Equal(t, home+"\n", string(res.Stdout), "a relative Dir is relative to the carried one")
	})
	t.Run("a request's own dir and env apply to that command only", func(t *testing.T) {
		run("cd " + home + "; export KEEP=session")
		res := execIn(t, s, ExecRequest{Script: "pwd; echo $KEEP $ONLY", Dir: "/", Env: []string{"KEEP=request", "ONLY=once"}})
		assert.Equal(t, "/\nrequest once\n", string(res.Stdout))
		assert.Equal(t, home+"\nsession []\n", string(run(`pwd; echo $KEEP "[$ONLY]"`).Stdout))
		// What the command itself changes is kept.
		execIn(t, s, ExecRequest{Script: "cd sub; export KEEP=changed", Env: []string{"KEEP=request"}})
		assert.Equal(t, filepath.Join(home, "sub")+"\nchanged\n", string(run("pwd; echo $KEEP").Stdout))
	})
	t.Run("a directory only the sandbox has is kept", func(t *testing.T) {
		// /tmp is private to the sandbox: the host has no such directory.
		res := run("mkdir -p /tmp/only-inside && cd /tmp/only-inside")
		assert.Equal(t, "/tmp/only-inside", res.Cwd)
		_, err := os.Stat("/tmp/only-inside")
		require.ErrorIs(t, err, os.ErrNotExist)
		assert.Equal(t, "/tmp/only-inside\n", string(run("pwd").Stdout))
	})
	t.Run("a removed directory is not kept", func(t *testing.T) {
		run("cd " + home)
		res := run("mkdir gone && cd gone && rmdir ../gone")
		assert.Equal(t, home, res.Cwd)
		assert.Equal(t, home+"\n", string(run("pwd").Stdout))
	})
	t.Run("a path through a magic link is not kept", func(t *testing.T) {
		run("cd " + home)
		// pwd -P resolves the link, so this leaves a physical path; the
		// check itself refuses what resolves through /proc magic links.
		assert.False(t, s.inView("/proc/1/root"+home))
		assert.False(t, s.inView("/proc/self/cwd"))
		assert.False(t, s.inView("relative/dir"))
		assert.False(t, s.inView(home+"/../"+filepath.Base(home)))
		assert.False(t, s.inView("(unreachable)/x"))
		assert.False(t, s.inView(filepath.Join(home, "no-such-dir")))
		assert.True(t, s.inView(home))
	})
	t.Run("a killed script changes nothing", func(t *testing.T) {
		run("cd " + home)
		res := execIn(t, s, ExecRequest{Script: "cd /; export K=1; sleep 3221", Timeout: Duration(200 * time.Millisecond)})
		assert.True(t, res.TimedOut)
		assert.Equal(t, home+"\n[]\n", string(run(`pwd; echo "[$K]"`).Stdout))
	})

	t.Run("without carry mode nothing persists", func(t *testing.T) {
		s := newTestSession(t, m, SessionSpec{})
		execIn(t, s, ExecRequest{Script: "cd /; export FOO=bar"})
		res := execIn(t, s, ExecRequest{Script: `pwd; echo "[$FOO]"`})
		assert.Equal(t, home+"\n[]\n", string(res.Stdout))
		assert.Empty(t, res.Cwd)
	})
}

// Edge 23: concurrent Exec in one carry-mode session is refused with
// ErrBusy, never mixed; without carry mode, Execs run side by side.
func TestCarryModeBusy(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{Carry: true})
	slow := make(chan ExecResult, 1)
	go func() {
		res, err := s.Exec(context.Background(), ExecRequest{Script: "echo slow; export WHO=slow; sleep 0.51"})
		assert.NoError(t, err)
		slow <- res
	}()
	eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "0.51")) == 1 }, "the slow exec did not start")
	_, err := s.Exec(testCtx(t, 5*time.Second), ExecRequest{Script: "export WHO=fast"})
	assert.ErrorIs(t, err, ErrBusy)
	_, err = m.Exec(testCtx(t, 5*time.Second), ExecRequest{Session: s.ID(), Argv: []string{"true"}})
	assert.ErrorIs(t, err, ErrBusy)
	res := <-slow
	assert.Equal(t, "slow\n", string(res.Stdout))
	assert.Equal(t, "slow\n", string(execIn(t, s, ExecRequest{Script: "echo $WHO"}).Stdout))

	t.Run("without carry mode", func(t *testing.T) {
		s := newTestSession(t, m, SessionSpec{})
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.Exec(testCtx(t, 10*time.Second), ExecRequest{Script: "sleep 0.2; echo $N", Env: []string{"N=" + string(rune('a'+i))}})
				assert.NoError(t, err)
				assert.Equal(t, string(rune('a'+i))+"\n", string(res.Stdout))
			}()
		}
		wg.Wait()
	})
}

// Edge 24: a started process copies the carried state and writes nothing
// back.
func TestStartedProcessWritesNoState(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	home := m.opts.Dir
	require.NoError(t, os.Mkdir(filepath.Join(home, "sub"), 0o755))
	s := newTestSession(t, m, SessionSpec{Carry: true})
	execIn(t, s, ExecRequest{Script: "cd sub; export Y=2"})

	p := start(t, s, StartRequest{Script: "pwd; echo $Y; cd /; export Y=3 X=1"})
	_, err := p.Wait(testCtx(t, 5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, "sub")+"\n2\n", stdoutOf(collect(t, p, 0)), "the state was not copied")
	res := execIn(t, s, ExecRequest{Script: `pwd; echo $Y "[$X]"`})
	assert.Equal(t, filepath.Join(home, "sub")+"\n2 []\n", string(res.Stdout), "a started process wrote state back")
}

// Edge 25: closing a session kills its processes (and what they left
// behind), records their exits, and leaves nothing on the host.
func TestCloseKillsEverything(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	plain := start(t, s, StartRequest{Argv: []string{"sleep", "3251"}})
	stubborn := start(t, s, StartRequest{Script: "trap '' TERM; echo ready; sleep 3252"})
	detached := start(t, s, StartRequest{Script: "setsid -f sleep 3253; exit 0"})
	waitOutput(t, stubborn, "ready")
	_, err := detached.Wait(testCtx(t, 5*time.Second))
	require.NoError(t, err)
	eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "325")) == 3 }, "sleeps did not start")
	pids := []int{s.sb.BwrapPid(), int(s.initPid.Load())}
	for _, h := range sessionTree(s) {
		pids = append(pids, h.pid)
	}

	t0 := time.Now()
	require.NoError(t, m.CloseSession(testCtx(t, 10*time.Second), s.ID()))
	assert.Less(t, time.Since(t0), 3*time.Second)
	for _, p := range []*Process{plain, stubborn} {
		exit, err := p.Wait(testCtx(t, time.Second))
		require.NoError(t, err)
		assert.Equal(t, int(unix.SIGKILL), exit.Signal, "%s", p.ID())
		assert.True(t, exit.KillRequested)
		assert.False(t, exit.Lost, "the real status was recorded")
	}
	for _, pid := range pids {
		assert.False(t, alive(pid), "pid %d (%s) survived Close", pid, cmdline(pid))
	}
	_, err = m.GetSession(testCtx(t, time.Second), s.ID())
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Exec(testCtx(t, time.Second), ExecRequest{Script: "true"})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.Start(testCtx(t, time.Second), StartRequest{Script: "true"})
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, s.Close(testCtx(t, time.Second)), "Close is idempotent")
}

// Edge 26: concurrent creates with the same name: exactly one session, and
// the others start nothing.
func TestConcurrentCreateSameName(t *testing.T) {
	// Not parallel: it counts this process's bwrap children.
	m := newTestManager(t, nil)
	before := bwrapChildren()
	const n = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []*Session
	var errs []error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := m.NewSession(testCtx(t, 10*time.Second), SessionSpec{Name: "shared"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			won = append(won, s)
		}()
	}
	wg.Wait()
	require.Len(t, won, 1)
	for _, err := range errs {
		assert.ErrorIs(t, err, ErrExists)
	}
	assert.Len(t, bwrapChildren(), len(before)+1, "the losers started sandboxes")
	list, err := m.ListSessions(testCtx(t, time.Second))
	require.NoError(t, err)
	assert.Len(t, list, 1)
	assert.Equal(t, "shared", list[0].Name)

	require.NoError(t, won[0].Close(testCtx(t, 5*time.Second)))
	assert.Len(t, bwrapChildren(), len(before))
	// The name is free again.
	s := newTestSession(t, m, SessionSpec{Name: "shared"})
	require.NoError(t, s.Close(testCtx(t, 5*time.Second)))
}

// bwrapChildren lists this process's bwrap children.
func bwrapChildren() []int {
	var out []int
	for _, c := range proc.Children(os.Getpid()) {
		if st, err := proc.ReadStat(c); err == nil && st.State != 'Z' && strings.Contains(cmdline(c), "bwrap") {
			out = append(out, c)
		}
	}
	return out
}

// Sessions leave no descriptor and no process behind.
func TestNoLeaks(t *testing.T) {
	requireSandbox(t)
	countFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(ents)
	}
	work := func(m *Manager) {
		s := newTestSession(t, m, SessionSpec{Carry: true})
		execIn(t, s, ExecRequest{Script: "cd /; echo x; sleep 3261 &"})
		p := start(t, s, StartRequest{Script: "sleep 3262", Stdin: StdinPipe})
		q := start(t, s, StartRequest{Script: "exit 1"})
		_, err := q.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
		_, err = p.Kill(testCtx(t, 5*time.Second), 0)
		require.NoError(t, err)
		start(t, s, StartRequest{Script: "sleep 3263"})
		res, err := m.Exec(testCtx(t, 10*time.Second), ExecRequest{Script: "echo throwaway"})
		require.NoError(t, err)
		require.Equal(t, "throwaway\n", string(res.Stdout))
	}
	m := NewManager(Options{Env: testEnv, Dir: t.TempDir(), DrainTimeout: 100 * time.Millisecond})
	work(m) // warm up what the runtime opens once
	require.NoError(t, m.Close(context.Background()))
	fds, kids := countFDs(), len(bwrapChildren())

	m = NewManager(Options{Env: testEnv, Dir: t.TempDir(), DrainTimeout: 100 * time.Millisecond})
	for range 3 {
		work(m)
	}
	require.NoError(t, m.Close(context.Background()))
	eventually(t, 2*time.Second, func() bool { return countFDs() <= fds }, "descriptors leaked: %d before, %d after", fds, countFDs())
	assert.Len(t, bwrapChildren(), kids)
	_, err := m.NewSession(context.Background(), SessionSpec{})
	assert.True(t, errors.Is(err, ErrClosed))
}
