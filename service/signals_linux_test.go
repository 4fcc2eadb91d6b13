package service

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The table is written out so it means Linux's numbers on any OS; on Linux
// it must agree with the kernel's as package syscall knows them.
func TestLinuxSignalsMatchSyscall(t *testing.T) {
	want := map[string]syscall.Signal{
		"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGQUIT": syscall.SIGQUIT,
		"SIGKILL": syscall.SIGKILL, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2,
		"SIGPIPE": syscall.SIGPIPE, "SIGALRM": syscall.SIGALRM, "SIGTERM": syscall.SIGTERM,
		"SIGCONT": syscall.SIGCONT, "SIGSTOP": syscall.SIGSTOP, "SIGTSTP": syscall.SIGTSTP,
		"SIGTTIN": syscall.SIGTTIN, "SIGTTOU": syscall.SIGTTOU, "SIGWINCH": syscall.SIGWINCH,
		"SIGURG": syscall.SIGURG, "SIGXCPU": syscall.SIGXCPU, "SIGXFSZ": syscall.SIGXFSZ,
		"SIGVTALRM": syscall.SIGVTALRM, "SIGPROF": syscall.SIGPROF, "SIGIO": syscall.SIGIO,
		"SIGSYS": syscall.SIGSYS, "SIGTRAP": syscall.SIGTRAP, "SIGABRT": syscall.SIGABRT,
		"SIGBUS": syscall.SIGBUS, "SIGFPE": syscall.SIGFPE, "SIGSEGV": syscall.SIGSEGV,
		"SIGILL": syscall.SIGILL, "SIGPWR": syscall.SIGPWR,
	}
	assert.Len(t, linuxSignals, len(want))
	for name, sig := range want {
		assert.Equal(t, int(sig), linuxSignals[name], name)
		got, err := ParseSignal(name[3:])
		assert.NoError(t, err)
		assert.Equal(t, sig, got, name)
	}
}
