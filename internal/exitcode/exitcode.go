// Package exitcode is the one mapping from how a process ended to the exit
// code a shell reports for it (containerd's exitStatus): the process's own
// code, 128+N when signal N killed it, 124 when cordon's timeout fired.
// The one-shot launcher, the sessions' processes and the CLI all use it, so
// `exit 137` and a real SIGKILL get the same code everywhere while the
// signal itself is reported apart.
//
// Package service cannot import it (service imports the standard library
// only); its ExitInfo.ShellCode states the timeout rule on its own.
package exitcode

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// TimedOut is the exit code of a command its timeout ended, as timeout(1)
// reports it.
const TimedOut = 124

// signalOffset is what shells add to the number of the signal that killed
// a command.
const signalOffset = 128

// Signal is the exit code a shell reports for a command killed by sig.
func Signal(sig syscall.Signal) int { return signalOffset + int(sig) }

// FromWaitStatus maps a wait status to the exit code a shell reports and
// the signal that killed the process (0 when it exited). A core dump does
// not change the code. A status that is not an end (stopped, continued)
// has no code: -1, as WaitStatus.ExitStatus says.
func FromWaitStatus(ws unix.WaitStatus) (code int, sig syscall.Signal) {
	if ws.Signaled() {
		return Signal(ws.Signal()), ws.Signal()
	}
	return ws.ExitStatus(), 0
}
