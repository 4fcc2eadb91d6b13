package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testchild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Supervisor under sessions: process-edge-cases.md 19-21.

// syncBuffer collects a logger's output while the test reads it.
type syncBuffer = testchild.LockedBuffer

// Edge 19: a process killed while its exec waits for a decision: the answer
// goes nowhere (SEND gives ENOENT) and the supervisor carries on.
func TestKilledWhileExecWaitsForDecision(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	m := newTestManager(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	tests := []struct {
		name string
		// ask blocks until told, or ignores its context and answers late.
		honoursCtx bool
	}{
		{"the ask is cancelled when its caller dies", true},
		{"the ask answers after its caller died", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asking := make(chan ExecDecision, 1)
			answered := make(chan error, 1)
			s := newTestSession(t, m, SessionSpec{
				Policy: "rules:\n  - ask: touch\n",
				Ask: func(ctx context.Context, process string, d ExecDecision) bool {
					asking <- d
					if tc.honoursCtx {
						<-ctx.Done()
						answered <- ctx.Err()
						return true
					}
					time.Sleep(500 * time.Millisecond)
					answered <- nil
					return true // too late: the caller is gone
				},
			})
			// In the session's writable directory: touch would succeed
			// if it ran.
			marker := filepath.Join(m.opts.Dir, "marker-"+newID(""))
			p := start(t, s, StartRequest{Argv: []string{"touch", marker}})
			var d ExecDecision
			select {
			case d = <-asking:
			case <-time.After(5 * time.Second):
				t.Fatal("the exec was never asked about")
			}
			assert.Equal(t, []string{"touch", marker}, d.Argv)
			exit, err := p.Kill(testCtx(t, 5*time.Second), 0)
			require.NoError(t, err)
			assert.Equal(t, int(unix.SIGKILL), exit.Signal)
			select {
			case err := <-answered:
				if tc.honoursCtx {
					assert.ErrorIs(t, err, context.Canceled)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the ask never returned")
			}
			// The supervisor carries on: the next exec is decided.
			res := execIn(t, s, ExecRequest{Script: "echo still-deciding; ls / >/dev/null; echo $?"})
			assert.Equal(t, "still-deciding\n0\n", string(res.Stdout))
			_, err = os.Stat(marker)
			assert.ErrorIs(t, err, os.ErrNotExist, "the killed exec ran")
			var asks int
			for _, ev := range collect(t, p, 0) {
				if ev.Kind == EventDecision && ev.Decision.Decision == "ask" {
					asks++
				}
			}
			assert.Equal(t, 1, asks, "the pending ask is an event of the process")
		})
	}
	assert.NotContains(t, logs.String(), "answering exec notification", "SEND's ENOENT must not be an error")
	assert.NotContains(t, logs.String(), "supervisor stopped")
}

// Edge 20: bubblewrap killed mid-session (pkill -9 bwrap, limited to this
// session's two bwrap processes): the session is lost, nothing hangs,
// nothing of it is left on the host.
func TestBwrapKilledLosesSession(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	p := start(t, s, StartRequest{Script: "sleep 3201 & sleep 3202"})
	eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "320")) == 2 }, "sleeps did not start")
	bwrapOuter := s.sb.BwrapPid()
	st, err := proc.ReadStat(int(s.initPid.Load()))
	require.NoError(t, err)
	bwrapInner := st.PPid
	require.Contains(t, cmdline(bwrapInner), "bwrap")
	var pids []int
	for _, h := range sessionTree(s) {
		pids = append(pids, h.pid)
	}
	pids = append(pids, bwrapOuter, bwrapInner, int(s.initPid.Load()))

	execDone := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), ExecRequest{Script: "sleep 3203"})
		execDone <- err
	}()
	eventually(t, 5*time.Second, func() bool { return len(withMarker(s, "3203")) == 1 }, "exec did not start")

	require.NoError(t, unix.Kill(bwrapOuter, unix.SIGKILL))
	require.NoError(t, unix.Kill(bwrapInner, unix.SIGKILL))

	select {
	case err := <-execDone:
		assert.ErrorIs(t, err, ErrSessionLost)
	case <-time.After(3 * time.Second):
		t.Fatal("a running Exec hangs after its sandbox died")
	}
	exit, err := p.Wait(testCtx(t, 3*time.Second))
	require.NoError(t, err)
	assert.True(t, exit.Lost)
	assert.Equal(t, int(unix.SIGKILL), exit.Signal)
	info, err := m.GetSession(testCtx(t, time.Second), s.ID())
	require.NoError(t, err)
	assert.Equal(t, SessionLost, info.State)
	assert.NotEmpty(t, info.Error)
	_, err = s.Exec(testCtx(t, time.Second), ExecRequest{Script: "true"})
	assert.ErrorIs(t, err, ErrSessionLost)
	_, err = s.Start(testCtx(t, time.Second), StartRequest{Script: "true"})
	assert.ErrorIs(t, err, ErrSessionLost)
	eventually(t, 3*time.Second, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	}, "processes of the lost session are left on the host")
	require.NoError(t, s.Close(testCtx(t, 5*time.Second)))
	_, err = m.GetSession(testCtx(t, time.Second), s.ID())
	assert.ErrorIs(t, err, ErrNotFound)
}

// hostReport is what the host-dies child tells the test.
type hostReport struct {
	Pids   []int  `json:"pids"`
	Marker string `json:"marker"`
	Alive  string `json:"alive"`
}

// hostDiesChild creates a session from a goroutine whose locked OS thread
// then exits (Pdeathsig follows the thread: the sandbox must not die with
// it), starts a sleep and an exec that waits for an ask, reports the pids
// and waits to be killed.
func hostDiesChild() int {
	dir, _ := os.MkdirTemp("", "cordon-host-dies")
	marker := filepath.Join(dir, "marker")
	asked := make(chan int, 1)
	m := NewManager(Options{Env: testEnv, Dir: dir})
	made := make(chan error, 1)
	var s *Session
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		var err error
		s, err = m.NewSession(context.Background(), SessionSpec{
			Policy: "rules:\n  - ask: touch\n",
			Ask: func(ctx context.Context, _ string, d ExecDecision) bool {
				asked <- d.Pid
				<-ctx.Done()
				return true
			},
		})
		made <- err
	}()
	if err := <-made; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(200 * time.Millisecond) // the creating thread is gone by now
	res, err := s.Exec(context.Background(), ExecRequest{Script: "echo alive"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := s.Start(context.Background(), StartRequest{Argv: []string{"sleep", "3211"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := s.Start(context.Background(), StartRequest{Argv: []string{"touch", marker}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	askingNs := <-asked
	<-p.startedCh
	rep := hostReport{Marker: marker, Alive: string(res.Stdout)}
	rep.Pids = append(rep.Pids, s.sb.BwrapPid(), int(s.initPid.Load()), hostPidOf(s, askingNs))
	for _, h := range sessionTree(s) {
		rep.Pids = append(rep.Pids, h.pid)
	}
	b, _ := json.Marshal(rep)
	os.Stdout.Write(append(b, '\n'))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// Edge 21: the host process dies: the pending exec never runs (fail
// closed) and the sandbox dies with it, although the goroutine (and
// thread) that created the session had exited long before.
func TestHostDiesSandboxDies(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	// Pdeathsig follows the thread that forks the child: hold this thread,
	// or a parallel test's locked goroutine could take it over and end it,
	// killing the child before it reports.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=host-dies", "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-waited
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	var rep hostReport
	select {
	case line := <-lines:
		require.NoError(t, json.Unmarshal([]byte(line), &rep), "child said %q; stderr:\n%s", line, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("no report from the child; stderr:\n%s", stderr.String())
	}
	defer os.RemoveAll(filepath.Dir(rep.Marker))
	assert.Equal(t, "alive\n", rep.Alive, "the session died with its creating thread")
	require.GreaterOrEqual(t, len(rep.Pids), 5)
	for _, pid := range rep.Pids {
		require.True(t, alive(pid), "pid %d (%s) not running before the host died", pid, cmdline(pid))
	}

	require.NoError(t, unix.Kill(cmd.Process.Pid, unix.SIGKILL))
	eventually(t, 3*time.Second, func() bool {
		for _, pid := range rep.Pids {
			if alive(pid) {
				return false
			}
		}
		return true
	}, "the sandbox outlived its host")
	_, err = os.Stat(rep.Marker)
	assert.ErrorIs(t, err, os.ErrNotExist, "the pending exec ran")
}
