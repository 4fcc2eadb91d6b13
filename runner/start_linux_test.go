package runner

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// awaitExit must return only once its child has exited (cmd.Wait then
// returns at once), and at once for a child already exited.
func TestAwaitExitReturnsAfterExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read line")
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		awaitExit(cmd.Process.Pid)
		close(done)
	}()
	// A broken awaitExit would return at once: give it the chance (this
	// wait can only hide a failure, never make one).
	time.Sleep(50 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("awaitExit returned while its child was still waiting on its stdin")
	default:
	}
	if _, err := w.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	<-done
	// Exited: waitid for it does not block.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if info.Signo != int32(unix.SIGCHLD) {
		t.Fatalf("awaitExit returned before its child exited (waitid found no exit, signo %d)", info.Signo)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cmd.Wait after awaitExit: %v", err)
	}

	// An exited, unreaped child: at once.
	cmd = exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	awaitExit(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
