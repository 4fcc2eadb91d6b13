package client

import (
	"context"
	"errors"
	"iter"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decisionStreamer is what both the Manager and the Client offer beyond
// sandbox.Service.
type decisionStreamer interface {
	Decisions(ctx context.Context, session string, after uint64) iter.Seq2[sandbox.Event, error]
}

// One harness, two Services: the scenario is written against
// sandbox.Service only, and gives the same observable results in process
// and through the daemon.
func TestSameScenarioLibraryAndDaemon(t *testing.T) {
	t.Run("library", func(t *testing.T) {
		var svc sandbox.Service = newManager(t)
		scenario(t, svc)
	})
	t.Run("daemon", func(t *testing.T) {
		c, _ := serve(t, newManager(t))
		var svc sandbox.Service = c // the one line a harness changes
		scenario(t, svc)
	})
}

func scenario(t *testing.T, svc sandbox.Service) {
	ctx := testCtx(t, 60*time.Second)

	// A throwaway exec: byte-exact output, the command's exit code.
	res, err := svc.Exec(ctx, sandbox.ExecRequest{
		Script: `printf '\377\000bin'; head -c 3 >&2; exit 3`, Stdin: []byte("in\x00"),
	})
	require.NoError(t, err)
	assert.Equal(t, []byte("\xff\x00bin"), res.Stdout)
	assert.Equal(t, []byte("in\x00"), res.Stderr)
	assert.Equal(t, 3, res.ExitCode)

	// A session with a policy; its name is unique.
	info, err := svc.CreateSession(ctx, sandbox.SessionSpec{
		Name: "scenario", Carry: true, Net: "none",
		Policy: "rules:\n  - deny: git push\n    message: open a pull request instead\n",
	})
	require.NoError(t, err)
	assert.Equal(t, sandbox.SessionRunning, info.State)
	_, err = svc.CreateSession(ctx, sandbox.SessionSpec{Name: "scenario"})
	assert.ErrorIs(t, err, sandbox.ErrExists)
	got, err := svc.GetSession(ctx, info.ID)
	require.NoError(t, err)
	assert.Equal(t, "scenario", got.Name)

	// Carry mode, a denial as a result, a timeout.
	_, err = svc.Exec(ctx, sandbox.ExecRequest{Session: info.ID, Script: "mkdir -p /tmp/w && cd /tmp/w && export STAGE=two"})
	require.NoError(t, err)
	res, err = svc.Exec(ctx, sandbox.ExecRequest{Session: info.ID, Script: "echo $PWD $STAGE; git push origin main"})
	require.NoError(t, err)
	assert.Equal(t, "/tmp/w two\n", string(res.Stdout))
	assert.Equal(t, "/tmp/w", res.Cwd)
	require.Len(t, res.Decisions, 1)
	assert.Equal(t, "deny", res.Decisions[0].Decision)
	assert.Equal(t, `deny "git push": open a pull request instead`, res.Decisions[0].Rule)
	assert.Equal(t, 126, res.ExitCode)
	res, err = svc.Exec(ctx, sandbox.ExecRequest{Session: info.ID, Argv: []string{"sleep", "30"},
		Timeout: sandbox.Duration(200 * time.Millisecond), KillGrace: sandbox.Duration(time.Second)})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Equal(t, 124, res.ShellCode())

	// A started process with a stdin pipe, its events, its exit.
	p, err := svc.Start(ctx, sandbox.StartRequest{Session: info.ID, Script: "cat; echo done >&2; exit 5", Stdin: sandbox.StdinPipe})
	require.NoError(t, err)
	assert.Equal(t, info.ID, p.Session)
	require.NoError(t, svc.WriteStdin(ctx, p.Session, p.ID, []byte("hello\n")))
	require.NoError(t, svc.CloseStdin(ctx, p.Session, p.ID))
	var stdout, stderr strings.Builder
	var last sandbox.Event
	for ev, err := range svc.Events(ctx, p.Session, p.ID, 0) {
		require.NoError(t, err)
		switch ev.Kind {
		case sandbox.EventStdout:
			stdout.Write(ev.Data)
		case sandbox.EventStderr:
			stderr.Write(ev.Data)
		}
		assert.Greater(t, ev.Seq, last.Seq, "cursors increase")
		last = ev
	}
	assert.Equal(t, "hello\n", stdout.String())
	assert.Equal(t, "done\n", stderr.String())
	require.Equal(t, sandbox.EventExit, last.Kind)
	assert.Equal(t, 5, last.Exit.ExitCode)
	exit, err := svc.Wait(ctx, p.Session, p.ID)
	require.NoError(t, err)
	assert.Equal(t, 5, exit.ExitCode)
	// Resuming after the last cursor yields nothing and ends.
	n := 0
	for _, err := range svc.Events(ctx, p.Session, p.ID, last.Seq) {
		require.NoError(t, err)
		n++
	}
	assert.Zero(t, n)

	// Signals and tree kill.
	q, err := svc.Start(ctx, sandbox.StartRequest{Session: info.ID, Script: "trap 'echo usr1' USR1; echo up; while :; do sleep 0.05; done"})
	require.NoError(t, err)
	waitFor(t, svc, q, "up")
	require.NoError(t, svc.Signal(ctx, q.Session, q.ID, syscall.SIGUSR1, sandbox.ScopeProcess))
	waitFor(t, svc, q, "usr1")
	list, err := svc.ListProcesses(ctx, info.ID)
	require.NoError(t, err)
	assert.Len(t, list, 2)
	exit, err = svc.Kill(ctx, q.Session, q.ID, 100*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, exit.KillRequested)
	assert.Equal(t, int(syscall.SIGTERM), exit.Signal)
	err = svc.Signal(ctx, q.Session, q.ID, syscall.SIGTERM, sandbox.ScopeTree)
	assert.ErrorIs(t, err, sandbox.ErrExited)
	err = svc.WriteStdin(ctx, q.Session, q.ID, []byte("x"))
	assert.ErrorIs(t, err, sandbox.ErrNoStdin)

	// The session's decisions.
	if ds, ok := svc.(decisionStreamer); assert.True(t, ok, "both stream decisions") {
		var argv []string
		dctx, cancel := context.WithCancel(ctx)
		for ev, err := range ds.Decisions(dctx, info.ID, 0) {
			require.NoError(t, err)
			argv = ev.Decision.Argv
			break
		}
		cancel()
		assert.Equal(t, []string{"git", "push", "origin", "main"}, argv)
	}

	// Unknown ids, a closed session.
	_, err = svc.GetProcess(ctx, info.ID, "nope")
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
	require.NoError(t, svc.CloseSession(ctx, info.ID))
	_, err = svc.GetSession(ctx, info.ID)
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = svc.Start(ctx, sandbox.StartRequest{Session: info.ID, Argv: []string{"true"}})
	assert.True(t, errors.Is(err, sandbox.ErrNotFound), "%v", err)
	sessions, err := svc.ListSessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, sessions)
}

// waitFor reads p's stdout from the start until it contains want.
func waitFor(t *testing.T, svc sandbox.Service, p sandbox.ProcessInfo, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	for ev, err := range svc.Events(ctx, p.Session, p.ID, 0) {
		require.NoError(t, err, "waiting for %q, got %q", want, out.String())
		if ev.Kind == sandbox.EventStdout {
			out.Write(ev.Data)
			if strings.Contains(out.String(), want) {
				return
			}
		}
	}
	t.Fatalf("%q never appeared; stdout %q", want, out.String())
}
