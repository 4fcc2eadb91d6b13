package tests

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// started is a cordon run in the background whose stdout is read line by
// line, so a test can wait for the command to be ready before signalling.
type started struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *strings.Builder
	done   chan error
}

func startCordon(t *testing.T, args ...string) *started {
	t.Helper()
	cmd := exec.Command(cordonBin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), raceEnv)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	s := &started{cmd: cmd, lines: make(chan string, 64), stderr: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{b: s.stderr}
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s
}

// waitLine waits for a stdout line equal to want.
func (s *started) waitLine(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("cordon exited before printing %q; stderr: %s", want, s.stderr)
			}
			if l == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q from cordon within 10s", want)
		}
	}
}

// exit waits for cordon to exit and returns its exit code and the rest of
// its stdout.
func (s *started) exit(t *testing.T, within time.Duration) (int, string) {
	t.Helper()
	var rest []string
	timeout := time.After(within)
	for {
		select {
		case l, ok := <-s.lines:
			if ok {
				rest = append(rest, l)
				continue
			}
			err := <-s.done
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), strings.Join(rest, "\n")
			}
			require.NoError(t, err)
			return 0, strings.Join(rest, "\n")
		case <-timeout:
			t.Fatalf("cordon did not exit within %v; stderr: %s", within, s.stderr)
		}
	}
}

func (s *started) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(sig))
}

func TestSignalsAreForwarded(t *testing.T) {
	requireSeccompNotify(t)
	tests := []struct {
		name string
		sig  syscall.Signal
		trap string
	}{
		{"SIGINT", syscall.SIGINT, "INT"},
		{"SIGTERM", syscall.SIGTERM, "TERM"},
		{"SIGHUP", syscall.SIGHUP, "HUP"},
		{"SIGQUIT", syscall.SIGQUIT, "QUIT"},
		{"SIGUSR1", syscall.SIGUSR1, "USR1"},
		{"SIGWINCH", syscall.SIGWINCH, "WINCH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startCordon(t, "--", "bash", "-c", `trap 'echo got-`+tc.trap+`; exit 9' `+tc.trap+`; echo ready; while :; do sleep 0.05; done`)
			s.waitLine(t, "ready")
			s.signal(t, tc.sig)
			code, out := s.exit(t, 5*time.Second)
			assert.Equal(t, 9, code, "stderr: %s", s.stderr)
			assert.Contains(t, out, "got-"+tc.trap)
		})
	}
	requireNoLeftovers(t)
}

func TestSignalKillsCommandWithShellExitCode(t *testing.T) {
	requireSeccompNotify(t)
	s := startCordon(t, "--", "sh", "-c", "echo ready; exec sleep 30")
	s.waitLine(t, "ready")
	s.signal(t, syscall.SIGINT)
	code, _ := s.exit(t, 5*time.Second)
	assert.Equal(t, 130, code, "128+SIGINT, never 255")
	requireNoLeftovers(t)
}

func TestSecondSignalEscalatesToSIGKILL(t *testing.T) {
	requireSeccompNotify(t)
	s := startCordon(t, "--", "bash", "-c", `trap '' INT TERM; echo ready; while :; do sleep 0.05; done`)
	s.waitLine(t, "ready")
	s.signal(t, syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	select {
	case <-s.done:
		t.Fatal("the first SIGINT must only be forwarded; the command ignores it")
	default:
	}
	s.signal(t, syscall.SIGTERM)
	code, _ := s.exit(t, 3*time.Second)
	assert.Equal(t, 137, code)
	requireNoLeftovers(t)
	assertNoProcess(t, "while :; do sleep 0.05")
}

func TestSIGURGIsNotForwarded(t *testing.T) {
	requireSeccompNotify(t)
	// The Go runtime uses SIGURG for preemption: it must never reach the
	// command.
	s := startCordon(t, "--", "bash", "-c", `trap 'echo got-URG' URG; trap 'exit 0' USR2; echo ready; while :; do sleep 0.05; done`)
	s.waitLine(t, "ready")
	for range 5 {
		s.signal(t, syscall.SIGURG)
	}
	time.Sleep(300 * time.Millisecond)
	s.signal(t, syscall.SIGUSR2)
	code, out := s.exit(t, 5*time.Second)
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "got-URG")
}

// lockedWriter lets a strings.Builder collect output from exec's copier
// goroutine while tests read it.
type lockedWriter struct {
	b *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	return w.b.Write(p)
}

var _ io.Writer = (*lockedWriter)(nil)

// A signal sent to cordon while its sandbox starts is not lost: it is held
// until the command exists, then forwarded (a red team's: sent to the
// init's group before the command was forked, it reached the init alone,
// which survives such signals, and a SIGTERM in cordon's first milliseconds
// was lost about half the time, the command running to its end). Each run
// gets SIGTERM right after cordon starts; the command must never finish.
func TestSignalDuringStartUpIsNotLost(t *testing.T) {
	requireSeccompNotify(t)
	for i := range 12 {
		s := startCordon(t, "--", "sh", "-c", "sleep 4; echo finished")
		// Spread over cordon's start: before its signal subscription
		// (cordon dies of the signal), during the sandbox's start (held),
		// or once the command runs (forwarded).
		time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		s.signal(t, syscall.SIGTERM)
		code, out := s.exit(t, 10*time.Second)
		assert.NotContains(t, out, "finished", "run %d: the command ran to its end (exit %d); stderr: %s", i, code, s.stderr)
	}
	requireNoLeftovers(t)
}

// A --timeout that runs out before the command exists still sends it
// SIGTERM (held until it exists), instead of the init alone, which survives
// it: the command then ran until the kill grace ended it (a red team's).
func TestSignalTimeoutBeforeStartTerminates(t *testing.T) {
	requireSeccompNotify(t)
	r := runCordon(t, runOpts{timeout: 40 * time.Second}, "--timeout", "1ns", "--kill-grace", "30s", "--",
		"sh", "-c", `sleep 10; echo survived`)
	assert.Equal(t, 124, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "survived", "the command ran on after the timeout")
}

// A burst of other signals while the sandbox starts does not push out the
// SIGTERM that follows (a red team's: the one channel held 16 signals and
// nothing read it before the command started, so 40 SIGWINCH, a terminal
// resized over and over, made signal.Notify drop the SIGTERM about a
// quarter of the time, and the command ran to its end). storm.c spaces the
// SIGWINCH 50 µs apart (pending signals of one kind coalesce) from 4 to 12
// ms after cordon starts, in the landlock tier (the longer start).
func TestSignalBurstDoesNotDropSIGTERM(t *testing.T) {
	requireLandlock(t)
	storm := buildC(t, t.TempDir(), "storm.c", "storm")
	for i := range 15 {
		delay := strconv.Itoa(4000 + 500*(i%17))
		r := runCordonVia(t, runOpts{timeout: 20 * time.Second}, storm, "40", "50", delay,
			cordonBin, "--isolation", "landlock", "--", "sh", "-c", "sleep 3; echo finished")
		assert.NotContains(t, r.stdout, "finished", "run %d: the command ran to its end (exit %d); stderr: %s", i, r.code, r.stderr)
	}
}
