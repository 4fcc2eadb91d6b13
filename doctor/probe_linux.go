package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/seccomp"
)

// ProbeArg is the hidden first argument that turns the binary into a probe
// child. main (and TestMain) must dispatch it before anything else:
//
//	if len(os.Args) > 1 && os.Args[1] == doctor.ProbeArg {
//		os.Exit(doctor.ProbeMain())
//	}
const ProbeArg = "__doctor-probe"

// Probe modes, the argument after ProbeArg.
const (
	modeSeccomp = "seccomp" // per-thread filters: notify, CONTINUE, FD_SYNC_WAKE_UP, WAIT_KILLABLE_RECV
	modeTSync   = "tsync"   // one TSYNC filter over the whole child
	modeUserNS  = "userns"  // started inside a new user+mount namespace: try to mount
	modeIdle    = "idle"    // wait for stdin to close: a target for PTRACE_SEIZE
)

// childBudget is how long a probe child gives itself; the parent's bound
// (Options.Timeout, 2s by default) stays above it so results arrive intact.
const childBudget = 1500 * time.Millisecond

// ProbeMain runs the probe named by os.Args[2] and returns the exit code. It
// loads seccomp filters into its own process, so it must only run in a child
// started for the purpose, never in a process that goes on to do real work.
func ProbeMain() int {
	mode := ""
	if len(os.Args) > 2 {
		mode = os.Args[2]
	}
	deadline := time.Now().Add(childBudget)
	var sf SeccompFeatures
	switch mode {
	case modeSeccomp:
		if s, err := seccomp.GetNotifSizes(); err == nil {
			sf.KernelSizes = NotifSizes(s)
		}
		ppid := os.Getppid()
		probeNotify(&sf, deadline, ppid)
		probeWaitKillable(&sf, deadline, ppid, sf.Continue.Supported)
	case modeTSync:
		probeTSync(&sf, deadline)
	case modeUserNS:
		// Refuse to touch mounts unless probeUserNS put us in namespaces of
		// our own: run by hand as root, this would change the host's /.
		if !inNewUserNS() {
			fmt.Fprintf(os.Stderr, "cordon: %s %s: must run in a new user namespace\n", ProbeArg, mode)
			return 1
		}
		// MS_PRIVATE on / needs CAP_SYS_ADMIN over this mount namespace:
		// exactly what AppArmor's userns restriction takes away.
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fmt.Fprintln(os.Stderr, os.NewSyscallError("mount(/, MS_REC|MS_PRIVATE)", err))
			return 1
		}
		return 0
	case modeIdle:
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * DefaultTimeout):
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "cordon: %s: unknown probe %q\n", ProbeArg, mode)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(sf); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %s: writing result: %v\n", ProbeArg, err)
		return 1
	}
	return 0
}

// ProbeSeccomp finds out which seccomp notification features work on this
// host by loading filters in two re-executed children of this binary (whose
// main must dispatch ProbeArg), each bounded by DefaultTimeout. Features a
// failed child could not probe are reported unsupported with the reason, and
// the error says what went wrong.
func ProbeSeccomp(ctx context.Context) (SeccompFeatures, error) {
	return probeSeccomp(ctx, DefaultTimeout)
}

func probeSeccomp(ctx context.Context, timeout time.Duration) (SeccompFeatures, error) {
	var (
		wg                  sync.WaitGroup
		notify, tsync       SeccompFeatures
		notifyErr, tsyncErr error
		notifyOut, tsyncOut []byte
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		notifyOut, notifyErr = runProbe(ctx, timeout, modeSeccomp, nil)
		if notifyErr == nil {
			notifyErr = decodeFeatures(notifyOut, &notify)
		}
	}()
	go func() {
		defer wg.Done()
		tsyncOut, tsyncErr = runProbe(ctx, timeout, modeTSync, nil)
		if tsyncErr == nil {
			tsyncErr = decodeFeatures(tsyncOut, &tsync)
		}
	}()
	wg.Wait()

	sf := notify
	if notifyErr != nil {
		why := fmt.Sprintf("probe child failed: %v", notifyErr)
		sf = SeccompFeatures{
			UserNotif:        Feature{Detail: why},
			Continue:         Feature{Detail: why},
			WaitKillableRecv: Feature{Detail: why},
			FDSyncWakeUp:     Feature{Detail: why},
		}
	}
	sf.TSyncListener = tsync.TSyncListener
	sf.ListenerBusy = sf.ListenerBusy || tsync.ListenerBusy
	if tsyncErr != nil {
		sf.TSyncListener = Feature{Detail: fmt.Sprintf("probe child failed: %v", tsyncErr)}
	}
	return sf, errors.Join(notifyErr, tsyncErr)
}

func decodeFeatures(out []byte, sf *SeccompFeatures) error {
	if err := json.Unmarshal(out, sf); err != nil {
		return fmt.Errorf("decoding probe result %q: %w", bytes.TrimSpace(out), err)
	}
	return nil
}

// runProbe runs this binary as a probe child in mode, bounded by timeout,
// and returns its standard output. attr, when set, is the child's
// SysProcAttr.
func runProbe(ctx context.Context, timeout time.Duration, mode string, attr *syscall.SysProcAttr) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary to run the %s probe: %w", mode, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, ProbeArg, mode)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = attr
	cmd.WaitDelay = 100 * time.Millisecond
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s probe: %w", mode, err)
	}
	err = cmd.Wait()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%s probe: %w after %v", mode, errProbeTimeout, timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, fmt.Errorf("%s probe: %w", mode, err)
		}
		return nil, fmt.Errorf("%s probe: %w: %s", mode, err, msg)
	}
	return stdout.Bytes(), nil
}

// probeUserNS starts a child in a new user and mount namespace, mapped to
// root inside, and has it mount. nil means user namespaces are usable.
func probeUserNS(ctx context.Context, timeout time.Duration) error {
	attr := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	_, err := runProbe(ctx, timeout, modeUserNS, attr)
	var errno syscall.Errno
	if err != nil && errors.As(err, &errno) {
		return os.NewSyscallError("clone(CLONE_NEWUSER|CLONE_NEWNS)", errno)
	}
	return err
}

// inNewUserNS reports whether this process's user namespace maps fewer ids
// than the initial one, whose uid_map is "0 0 4294967295".
func inNewUserNS() bool {
	data, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	return !isIdentityUIDMap(string(data))
}

// probePtrace seizes an idle child of ours. nil means ptrace is permitted.
func probePtrace(ctx context.Context, timeout time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run the ptrace probe: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, ProbeArg, modeIdle)
	cmd.WaitDelay = 100 * time.Millisecond
	// The child waits for its stdin to close; we never close it, we kill it.
	if _, err := cmd.StdinPipe(); err != nil {
		return fmt.Errorf("creating stdin of the ptrace probe: %w", err)
	}

	// The tracer is a thread, not a process: seize on one locked OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the ptrace probe: %w", err)
	}
	seizeErr := unix.PtraceSeize(cmd.Process.Pid)
	// SIGKILL, not a polite exit: a seized Go child stops at every signal
	// its runtime sends itself and would wait for us to resume it.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if seizeErr != nil {
		return os.NewSyscallError("ptrace(PTRACE_SEIZE)", seizeErr)
	}
	return nil
}
