package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/config"
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
	spec.Protect = append(spec.Protect, policyPaths(spec)...)
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

// policyPaths lists what decides the next run's policy and must not be
// written by this one: every existing file policy discovery considers from
// the sandbox's working directory (config.Candidates: the same list the
// loader walks) and the trust store's directory. bwrap.Spec.Protect binds
// those a writable bind holds read-only, so the workload can neither edit,
// remove nor replace them. The trust store's directory is created first
// when a writable bind holds where it would be: otherwise the workload
// could create it, and the store in it.
func policyPaths(spec bwrap.Spec) []string {
	var out []string
	opts := config.Options{Dir: spec.Dir}
	if spec.Dir == "" {
		opts.Dir = "/"
	}
	if cands, err := config.Candidates(opts); err == nil {
		for _, c := range cands {
			if fi, err := os.Stat(c.Path); err == nil && fi.Mode().IsRegular() {
				out = append(out, c.Path)
			}
		}
	}
	store, err := config.TrustStoreFor(opts)
	if err != nil || store.Dir() == "" {
		return out
	}
	dir := store.Dir()
	writable := append([]string{}, spec.RW...)
	if spec.Dir != "" && filepath.Clean(spec.Dir) != "/" {
		writable = append(writable, spec.Dir)
	}
	for _, w := range writable {
		w = filepath.Clean(w)
		if dir == w || strings.HasPrefix(dir, strings.TrimSuffix(w, "/")+"/") {
			_ = os.MkdirAll(dir, 0o700)
			break
		}
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		out = append(out, dir)
	}
	return out
}
