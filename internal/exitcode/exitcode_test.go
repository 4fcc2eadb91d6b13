package exitcode

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The statuses are written out in the kernel's encoding (wait(2)): the exit
// code in bits 8-15, the killing signal in bits 0-6, 0x80 for a core dump,
// 0x7f in the low byte for a stop.
func TestFromWaitStatus(t *testing.T) {
	tests := []struct {
		name     string
		status   unix.WaitStatus
		wantCode int
		wantSig  syscall.Signal
	}{
		{name: "exited 0", status: 0, wantCode: 0},
		{name: "exited 3", status: 3 << 8, wantCode: 3},
		{name: "exit 137 is the command's own code", status: 137 << 8, wantCode: 137},
		{name: "killed by SIGKILL", status: unix.WaitStatus(unix.SIGKILL), wantCode: 137, wantSig: unix.SIGKILL},
		{name: "killed by SIGTERM", status: unix.WaitStatus(unix.SIGTERM), wantCode: 143, wantSig: unix.SIGTERM},
		{name: "core dumped by SIGSEGV", status: unix.WaitStatus(unix.SIGSEGV) | 0x80, wantCode: 139, wantSig: unix.SIGSEGV},
		{name: "stopped by SIGTSTP is no end", status: unix.WaitStatus(unix.SIGTSTP)<<8 | 0x7f, wantCode: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, sig := FromWaitStatus(tc.status)
			assert.Equal(t, tc.wantCode, code)
			assert.Equal(t, tc.wantSig, sig)
		})
	}
	// The encodings above are the kernel's: the decoder agrees.
	assert.True(t, unix.WaitStatus(unix.SIGSEGV|0x80).CoreDump())
	assert.True(t, (unix.WaitStatus(unix.SIGTSTP)<<8 | 0x7f).Stopped())
}

func TestSignal(t *testing.T) {
	assert.Equal(t, 130, Signal(unix.SIGINT))
	assert.Equal(t, 137, Signal(unix.SIGKILL))
}

// TestRealProcesses tells `exit 137` from a real SIGKILL through the
// kernel's own statuses: the same code, a signal only for the kill.
func TestRealProcesses(t *testing.T) {
	status := func(script string) unix.WaitStatus {
		err := exec.Command("/bin/sh", "-c", script).Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "sh -c %q: %v", script, err)
		return unix.WaitStatus(ee.Sys().(syscall.WaitStatus))
	}
	code, sig := FromWaitStatus(status("exit 137"))
	assert.Equal(t, 137, code)
	assert.Zero(t, sig)
	code, sig = FromWaitStatus(status("kill -KILL $$"))
	assert.Equal(t, 137, code)
	assert.Equal(t, unix.SIGKILL, sig)
}
