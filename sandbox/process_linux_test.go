package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A program that cannot start ends like a shell says it would, with a
// reason; a policy denial of the program itself is marked and shows up as
// the process's decision event.
func TestStartFailures(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{Policy: "rules:\n  - deny: git push\n    message: open a pull request\n"})
	tests := []struct {
		name    string
		req     StartRequest
		code    int
		errText string
		denied  bool
	}{
		{"not found", StartRequest{Argv: []string{"no-such-program"}}, 127, "command not found", false},
		{"no such path", StartRequest{Argv: []string{"/no/such/program"}}, 127, "no such file", false},
		{"not executable", StartRequest{Argv: []string{"/etc/passwd"}}, 126, "permission denied", false},
		{"denied", StartRequest{Argv: []string{"git", "push", "origin", "main"}}, 126, "denied by policy", true},
		{"bad directory", StartRequest{Argv: []string{"true"}, Dir: "/no/such/dir"}, 126, "chdir /no/such/dir", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, s, tc.req)
			evs := collect(t, p, 0)
			exit := evs[len(evs)-1].Exit
			require.NotNil(t, exit)
			assert.Equal(t, tc.code, exit.ExitCode)
			assert.Contains(t, exit.Error, tc.errText)
			assert.Equal(t, tc.denied, exit.Denied)
			if tc.denied {
				require.Equal(t, EventDecision, evs[0].Kind)
				assert.Equal(t, "deny", evs[0].Decision.Decision)
				assert.Equal(t, `deny "git push": open a pull request`, evs[0].Decision.Rule)
				assert.Equal(t, tc.req.Argv, evs[0].Decision.Argv)
			}
			res := execIn(t, s, ExecRequest{Argv: tc.req.Argv, Dir: tc.req.Dir})
			assert.Equal(t, tc.code, res.ExitCode)
			assert.Equal(t, tc.denied, res.Denied)
			assert.Equal(t, tc.denied, len(res.Decisions) == 1)
		})
	}
	for _, bad := range []StartRequest{{}, {Argv: []string{"x"}, Script: "y"}, {Script: "x", Stdin: "tty"}} {
		_, err := s.Start(testCtx(t, time.Second), bad)
		assert.ErrorIs(t, err, ErrInvalid)
	}
}

// Each denied exec is an event of the process that made it, at any depth,
// also when several processes run at once.
func TestDecisionsAreAttributed(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{Policy: "rules:\n  - deny: git push\n  - deny: cat /etc/shadow\n"})
	const n = 6
	procs := make([]*Process, n)
	for i := range n {
		// Depth: a subshell, a detached grandchild, a denied exec.
		procs[i] = start(t, s, StartRequest{Script: fmt.Sprintf("(setsid sh -c 'git push origin b%d' &) ; sleep 0.1; cat /etc/shadow; echo done", i)})
	}
	for i, p := range procs {
		evs := collect(t, p, 0)
		var argvs []string
		for _, ev := range evs {
			if ev.Kind == EventDecision {
				argvs = append(argvs, strings.Join(ev.Decision.Argv, " "))
				assert.Equal(t, "deny", ev.Decision.Decision)
			}
		}
		assert.ElementsMatch(t, []string{fmt.Sprintf("git push origin b%d", i), "cat /etc/shadow"}, argvs, "process %d", i)
	}

	t.Run("allowed execs when asked for", func(t *testing.T) {
		s := newTestSession(t, m, SessionSpec{ReportAllowed: true})
		res := execIn(t, s, ExecRequest{Script: "ls / >/dev/null; /bin/true"})
		var argvs []string
		for _, d := range res.Decisions {
			argvs = append(argvs, d.Argv[0])
			assert.Equal(t, "allow", d.Decision)
		}
		assert.Equal(t, []string{"/bin/sh", "ls", "/bin/true"}, argvs)
	})
}

// Exec without a session runs in a throwaway sandbox that is gone when it
// returns; the Service surface maps names and ids.
func TestServiceSurface(t *testing.T) {
	// Not parallel: it counts this process's bwrap children.
	m := newTestManager(t, nil)
	var svc Service = m
	ctx := testCtx(t, 30*time.Second)

	before := len(bwrapChildren())
	res, err := svc.Exec(ctx, ExecRequest{Script: "echo $X; exit 2", Env: []string{"X=throwaway"}, Sandbox: &SessionSpec{Net: "none"}})
	require.NoError(t, err)
	assert.Equal(t, "throwaway\n", string(res.Stdout))
	assert.Equal(t, 2, res.ExitCode)
	assert.Len(t, bwrapChildren(), before, "the throwaway sandbox is left")
	list, err := svc.ListSessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)

	info, err := svc.CreateSession(ctx, SessionSpec{Name: "svc"})
	require.NoError(t, err)
	assert.Equal(t, SessionRunning, info.State)
	assert.True(t, strings.HasPrefix(info.ID, "s-"))
	pi, err := svc.Start(ctx, StartRequest{Session: info.ID, Script: "echo hi; sleep 3301"})
	require.NoError(t, err)
	assert.Regexp(t, `^p-[0-9a-f]{16}$`, pi.ID, "ids are random, never pids")
	procs, err := svc.ListProcesses(ctx, info.ID)
	require.NoError(t, err)
	require.Len(t, procs, 1)
	assert.Equal(t, pi.ID, procs[0].ID)
	var got strings.Builder
	for ev, err := range svc.Events(ctx, info.ID, pi.ID, 0) {
		require.NoError(t, err)
		got.Write(ev.Data)
		if strings.Contains(got.String(), "hi") {
			break
		}
	}
	exit, err := svc.Kill(ctx, info.ID, pi.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, 9, exit.Signal)
	_, err = svc.Exec(ctx, ExecRequest{Session: "s-nosuch", Script: "true"})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = svc.CreateSession(ctx, SessionSpec{Policy: "rules: [[["})
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = svc.CreateSession(ctx, SessionSpec{Dir: "relative"})
	assert.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, svc.CloseSession(ctx, info.ID))
	_, err = svc.GetSession(ctx, info.ID)
	assert.ErrorIs(t, err, ErrNotFound)
}

// Exec's context: cancelling it kills the command's tree and returns what
// was read so far with the context's error.
func TestExecContextCancel(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var res ExecResult
	var err error
	go func() {
		defer wg.Done()
		res, err = s.Exec(ctx, ExecRequest{Script: "echo before; sleep 3311", KillGrace: Duration(time.Second)})
	}()
	eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "3311")) == 1 }, "exec did not start")
	cancel()
	wg.Wait()
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "before\n", string(res.Stdout))
	assert.True(t, res.KillRequested)
	assert.Empty(t, withMarker(s, "3311"))
}
