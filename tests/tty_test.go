package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// term is a program running on a pseudo-terminal, as a user's shell would.
type term struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd

	mu  sync.Mutex
	out strings.Builder // guarded by mu
	off int             // guarded by mu: how far expect has consumed
}

func startTerm(t *testing.T, dir string, argv ...string) *term {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 120}))
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), raceEnv, "PS1=PROMPT$ ", "TERM=dumb", "PATH="+filepath.Dir(cordonBin)+":"+os.Getenv("PATH"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	slave.Close()
	tm := &term{t: t, master: m, cmd: cmd}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			tm.mu.Lock()
			tm.out.Write(b[:max(n, 0)])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		m.Close()
	})
	return tm
}

func (tm *term) send(s string) {
	tm.t.Helper()
	_, err := tm.master.WriteString(s)
	require.NoError(tm.t, err)
}

// expect waits until want appears in the output after what earlier calls
// consumed, and returns the output up to and including it.
func (tm *term) expect(want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		s := tm.out.String()[tm.off:]
		if i := strings.Index(s, want); i >= 0 {
			tm.off += i + len(want)
			tm.mu.Unlock()
			return s[:i+len(want)]
		}
		tm.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Fatalf("no %q on the terminal within 10s; screen since last match:\n%s", want, tm.out.String()[tm.off:])
	return ""
}

func (tm *term) wait() int {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	select {
	case <-done:
		return tm.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		tm.t.Fatal("program on the terminal did not exit")
	}
	return -1
}

func TestInteractiveShellOnTerminal(t *testing.T) {
	requireSeccompNotify(t)
	tm := startTerm(t, t.TempDir(), cordonBin, "--deny", "git push", "--", "bash", "--norc", "--noprofile", "-i")
	tm.expect("PROMPT$ ")
	// The shell owns the terminal: job control is on and it is foreground.
	tm.send("echo fg=$(( $(ps -o tpgid= -p $$) == $(ps -o pgid= -p $$) ))\n")
	tm.expect("fg=1")
	tm.expect("PROMPT$ ")
	// Ctrl-C reaches the foreground job inside the sandbox, not cordon.
	tm.send("sleep 30\n")
	time.Sleep(300 * time.Millisecond)
	tm.send("\x03")
	tm.expect("PROMPT$ ")
	tm.send("echo after-ctrl-c=$?\n")
	tm.expect("after-ctrl-c=130")
	// Job control inside the sandbox.
	tm.send("cat\n")
	time.Sleep(300 * time.Millisecond)
	tm.send("\x1a")
	tm.expect("Stopped")
	tm.send("fg\n")
	tm.expect("cat")
	tm.send("hello-cat\n")
	tm.expect("hello-cat")
	tm.send("\x04")
	tm.expect("PROMPT$ ")
	// A denial on a terminal.
	tm.send("git push origin main; echo rc=$?\n")
	tm.expect(`cordon: denied: git push origin main (rule: deny "git push")`)
	tm.expect("rc=126")
	tm.send("exit 7\n")
	assert.Equal(t, 7, tm.wait())
}

func TestSuspendAndResumeUnderOuterShell(t *testing.T) {
	requireSeccompNotify(t)
	tm := startTerm(t, t.TempDir(), "bash", "--norc", "--noprofile", "-i")
	tm.expect("PROMPT$ ")
	tm.send("cordon -- cat\n")
	time.Sleep(time.Second)
	tm.send("one\n")
	tm.expect("one\r\none")
	// Ctrl-Z stops the command; cordon stops too, so the outer shell gets
	// the terminal back and shows the job as stopped.
	tm.send("\x1a")
	tm.expect("Stopped")
	tm.expect("PROMPT$ ")
	tm.send("echo shell-has-terminal\n")
	tm.expect("shell-has-terminal\r\n")
	// fg gives the terminal back to the command.
	tm.send("fg\n")
	time.Sleep(500 * time.Millisecond)
	tm.send("two\n")
	tm.expect("two\r\ntwo")
	tm.send("\x03")
	tm.expect("PROMPT$ ")
	tm.send("echo status=$?\n")
	tm.expect("status=130")
	tm.send("exit\n")
	tm.wait()
}

func TestTerminalModesAreRestored(t *testing.T) {
	requireSeccompNotify(t)
	tm := startTerm(t, t.TempDir(), "bash", "--norc", "--noprofile", "-i")
	tm.expect("PROMPT$ ")
	// The command puts the terminal in raw mode and dies without restoring
	// it, as a crashing TUI would.
	tm.send("cordon -- sh -c 'stty raw -echo; kill -9 $$'; echo code=$?; stty -a | grep -o -- '-\\?icanon'\n")
	tm.expect("code=137")
	out := tm.expect("icanon")
	assert.NotContains(t, out, "-icanon", "canonical mode is back")
	tm.send("exit\n")
	tm.wait()
}

func TestTIOCSTIIsBlocked(t *testing.T) {
	requireSeccompNotify(t)
	gcc := requireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "sti.c")
	// Pushes a character into the terminal's input queue; a high bit set in
	// the request must not get past the filter either.
	require.NoError(t, os.WriteFile(src, []byte(`
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
	char c = 'x';
	long r1 = syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI, &c);
	int e1 = errno;
	long r2 = syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c);
	int e2 = errno;
	printf("plain=%s high=%s\n", r1 == 0 ? "ok" : strerror(e1), r2 == 0 ? "ok" : strerror(e2));
	return 0;
}
`), 0o644))
	out, err := exec.Command(gcc, "-o", filepath.Join(dir, "sti"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)

	// Outside cordon the call is not refused with EPERM (it succeeds, or
	// the kernel's own dev.tty.legacy_tiocsti=0 gives EIO).
	tm := startTerm(t, dir, filepath.Join(dir, "sti"))
	base := tm.expect("\n")
	assert.NotContains(t, base, "Operation not permitted", "baseline")

	tm = startTerm(t, dir, cordonBin, "--", "./sti")
	got := tm.expect("\n")
	assert.Contains(t, got, "plain=Operation not permitted high=Operation not permitted")
}
