package testcap

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// seizeChild attaches to a child of its own with PTRACE_SEIZE, the request
// cordon's tracer makes.
func seizeChild() error {
	// Every ptrace request comes from the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if err := unix.PtraceSeize(cmd.Process.Pid); err != nil {
		return fmt.Errorf("ptrace(PTRACE_SEIZE): %w", err)
	}
	return nil
}
