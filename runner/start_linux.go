package runner

import (
	"os"
	"os/exec"
	"runtime"

	"github.com/cordon-sandbox/cordon/bwrap"
	"golang.org/x/sys/unix"
)

// newControlPair makes the control channel: the host's end, with
// SO_PASSCRED so the init's pid arrives translated into our pid namespace,
// and the end the init inherits as fd ctlFD (close it after starting).
func newControlPair() (*frameConn, *os.File, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &SetupError{Err: os.NewSyscallError("socketpair", err)}
	}
	if err := unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		return nil, nil, &SetupError{Err: os.NewSyscallError("setsockopt(SO_PASSCRED)", err)}
	}
	hostEnd := os.NewFile(uintptr(pair[0]), "control")
	childEnd := os.NewFile(uintptr(pair[1]), "control-child")
	conn, err := newFrameConn(hostEnd)
	hostEnd.Close()
	if err != nil {
		childEnd.Close()
		return nil, nil, &SetupError{Err: err}
	}
	return conn, childEnd, nil
}

// sandboxArgv is the bubblewrap command line that runs exe as the init in
// a sandbox shaped by spec (its Exe, Command and Privileged are set here).
func sandboxArgv(exe string, spec bwrap.Spec) ([]string, error) {
	bw, err := bwrap.Find()
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	spec.Exe, spec.Command, spec.Privileged = exe, []string{exe, InitArg}, os.Geteuid() == 0
	args, err := spec.Args()
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	return append([]string{bw}, args...), nil
}

// startLocked starts cmd from a goroutine locked to its OS thread for the
// process's whole life, and calls exited with cmd.Wait's result.
// Pdeathsig follows the thread that forked, not the process: if that thread
// ended, the sandbox would be killed with it.
func startLocked(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}
