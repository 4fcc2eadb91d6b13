package runner

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// InitArg is the hidden first argument that makes the cordon binary run as
// the sandbox's init. main dispatches it before cobra; TestMain does the same
// so a test binary can play the init.
const InitArg = proc.InitArg

// InitMain is the sandbox init: it reads its configuration from the control
// socket, installs the notify filter on all its threads, hands the listener
// to the host, then starts the command once the host says go, reaps every
// descendant and reports the command's wait status. Its exit code only
// matters when the host is gone.
func InitMain() int {
	// Every command is started, and every process of the sandbox killed,
	// from this one thread (the main goroutine never leaves it). In the
	// landlock tier go-landlock puts each thread in a Landlock domain of
	// its own, which a command inherits from the thread that forked it,
	// and Landlock (ABI 6+) refuses signals from one domain into a
	// sibling's: only this thread can end the command's tree. Threads of
	// one process may signal each other whatever their domains.
	runtime.LockOSThread()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "cordon init: "+format+"\n", args...)
		return 125
	}
	conn, err := newInitConn(ctlFD)
	if err != nil {
		return fail("%v", err)
	}
	// First of all, the host learns the init's pid (from the message's
	// credentials) and with it the sandbox's root: it looks up the
	// policy's programs there (supervisor.Prewarm) while the init sets up,
	// instead of at the command's first exec.
	if err := conn.send(initMsg{Kind: msgHello}); err != nil {
		return fail("greeting the host: %v", err)
	}
	stderrFd, err := unix.FcntlInt(stderrFD, unix.F_DUPFD_CLOEXEC, 10)
	if err != nil {
		return fail("duplicating stderr: %v", err)
	}
	unix.Close(stderrFD)
	// Nothing the init inherited or opens reaches the command: every fd
	// above stderr becomes close-on-exec.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail("close_range: %v", err)
	}
	// The init shares the command's process group (so the host can signal
	// and foreground one group) and must survive what is meant for the
	// command.
	surviveSignals()
	// The command runs as the same user in the same pid namespace: without
	// this it could open /proc/<init>/fd/3 (cordon's control socket) or
	// ptrace the init. Non-dumpable tasks can be inspected only with
	// CAP_SYS_PTRACE, which bubblewrap does not grant. Reset by execve, so
	// the command itself stays debuggable.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("prctl(PR_SET_DUMPABLE): %v", err)
	}
	// Started without bubblewrap as a session's init, it already leads
	// its own session and process group (setpgid would fail with EPERM).
	if unix.Getpgrp() != os.Getpid() {
		if err := unix.Setpgid(0, 0); err != nil {
			return fail("setpgid: %v", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}

	var cfg configMsg
	if _, err := conn.recv(&cfg); err != nil {
		return fail("reading configuration: %v", err)
	}
	setupErr := func(err error) int {
		_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
		return 125
	}
	if cfg.LastPid {
		// Before the filter, and before any command: the host asks for
		// the counter only from the first decision on.
		if err := serveLastPid(lastPidFD); err != nil {
			return setupErr(err)
		}
	}
	if cfg.Session {
		return sessionMain(conn, cfg, stderrFd)
	}
	if len(cfg.Argv) == 0 {
		return setupErr(errors.New("empty command"))
	}
	path, errno := lookPath(cfg.Argv[0], cfg.Dir, cfg.Env)
	if errno != 0 {
		_ = conn.send(initMsg{Kind: msgExecErr, Errno: int(errno), Path: cfg.Argv[0]})
		return exitCodeForErrno(errno)
	}
	scope, err := scopeRuleset(cfg.ScopeSignals)
	if err != nil {
		return setupErr(err)
	}
	if code := installFilter(conn, cfg); code != 0 {
		return code
	}
	var goMsg initMsg
	if _, err := conn.recv(&goMsg); err != nil || goMsg.Kind != msgHostGo {
		return fail("waiting for the host: %v", err)
	}

	// Without bubblewrap's user namespace, a supervisor run by a normal
	// user has no CAP_SYS_PTRACE over the command: it can verify the first
	// exec only if the child is dumpable (Reap: the bare tiers), which the
	// child makes itself, the init staying non-dumpable. In every tier but
	// none the child also takes the scope layer (see spawn_unsafe.go).
	pid, err := cExec(&execSpec{path: path, argv: cfg.Argv, env: cfg.Env, dir: cfg.Dir,
		fds: [3]int{0, 1, stderrFd}, dumpable: cfg.Reap, scope: scope, dfl: survivedMask()})
	if scope >= 0 {
		unix.Close(scope)
	}
	if err != nil {
		var ee *execError
		if !errors.As(err, &ee) || ee.stage != stageExec {
			return setupErr(fmt.Errorf("starting the command: %w", err))
		}
		_ = conn.send(initMsg{Kind: msgExecErr, Errno: int(ee.errno), Path: path})
		return exitCodeForErrno(ee.errno)
	}
	_ = conn.send(initMsg{Kind: msgStarted})
	reaped := make(chan unix.WaitStatus, 1)
	go func() {
		reaped <- reap(pid, func(sig unix.Signal) {
			_ = conn.send(initMsg{Kind: msgStopped, Signal: int(sig)})
		})
	}()
	select {
	case status := <-reaped:
		if cfg.Reap {
			killDescendants()
		}
		_ = conn.send(initMsg{Kind: msgExited, Status: uint32(status)})
	case <-hostGone(conn):
		// The host sends nothing after "go": this is its end of the
		// socket closing, which only its death does before the command
		// is reaped. With bubblewrap the pid namespace ends with
		// bubblewrap (which dies with the host); without one (Reap) the
		// host starts the init with no parent-death signal so that it
		// lives to end the command's tree here.
		if cfg.Reap {
			killDescendants()
		}
	}
	return 0
}

// hostGone returns a channel closed when the host's end of the control
// socket is closed (or anything arrives on it): in a one-shot run the host
// says nothing after "go".
func hostGone(conn *frameConn) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		var m initMsg
		_ = conn.recvQueued(&m)
		close(gone)
	}()
	return gone
}

// survivedSignals are the signals meant for the command's process group
// that the init, a member of that group, must survive.
var survivedSignals = []unix.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGTSTP,
	unix.SIGTTIN, unix.SIGTTOU, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2, unix.SIGPIPE}

// surviveSignals makes the init ignore survivedSignals. Ignored, not
// handled: signal.Notify makes a round trip to the runtime's signal-mask
// thread for each signal (0.86 ms for these, measured, which the command's
// start waited for once the host's "go" arrived sooner), signal.Ignore only
// sets the disposition. An ignored disposition survives execve, so the
// command's child sets these back to their default before its exec (cExec:
// survivedMask), which is what a handled one became; a session's shim
// resets every signal.
func surviveSignals() {
	sigs := make([]os.Signal, len(survivedSignals))
	for i, s := range survivedSignals {
		sigs[i] = s
	}
	signal.Ignore(sigs...)
}

// survivedMask is survivedSignals as a bit mask (bit N for signal N), for
// the child cExec starts.
func survivedMask() uint64 {
	var m uint64
	for _, s := range survivedSignals {
		m |= 1 << uint(s)
	}
	return m
}

// installFilter applies the landlock tier's ruleset when there is one,
// then installs the notify filter on all the init's threads and
// sends the listener to the host (one-shot and session mode alike). When
// another listener exists above (EBUSY) and the host sent a fallback, it
// installs that and tells the host to supervise with ptrace only. It
// returns the init's exit code on failure, 0 on success.
func installFilter(conn *frameConn, cfg configMsg) int {
	if cfg.Landlock != nil {
		// No user namespace in this tier: whatever capabilities the
		// init has (all of them, run by root) would reach the command.
		if err := dropCapabilities(); err != nil {
			_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
			return 125
		}
		// Before the filter: the ruleset is the init's own, so the
		// command and everything it starts inherit it, and no exec
		// happens between the two.
		if err := applyLandlock(cfg.Landlock); err != nil {
			_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
			return 125
		}
	}
	// The proxy listeners are made before the filter: the host serves
	// them (a socket keeps its network namespace), and the init keeps no
	// copy, so nothing in the sandbox but the two loopback ports shows.
	var netFDs []int
	if cfg.NetListen {
		var err error
		if netFDs, err = proxyListeners(); err != nil {
			_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
			return 125
		}
		defer closeAll(netFDs)
	}
	listener, err := supervisor.InstallFilter(cfg.Filter)
	switch {
	case errors.Is(err, supervisor.ErrListenerBusy) && len(cfg.Fallback) > 0:
		// The rest of the filter still applies.
		if err := supervisor.InstallFallbackFilter(cfg.Fallback); err != nil {
			err = fmt.Errorf("installing fallback seccomp filter: %w", err)
			_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
			return 125
		}
		err = conn.send(initMsg{Kind: msgListener, PtraceOnly: true, NetListeners: len(netFDs)}, netFDs...)
	case err != nil:
		err = fmt.Errorf("installing seccomp filter: %w", err)
		_ = conn.send(initMsg{Kind: msgSetupErr, Message: err.Error()})
		return 125
	default:
		err = conn.send(initMsg{Kind: msgListener, NetListeners: len(netFDs)}, append([]int{listener}, netFDs...)...)
		unix.Close(listener)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon init: sending listener: %v\n", err)
		return 125
	}
	return 0
}

// reap waits for every child until pid exits, reporting pid's job-control
// stops, and returns pid's wait status. Orphans re-parented to the init
// (it is a subreaper) are reaped on the way, so no zombie accumulates.
func reap(pid int, stopped func(unix.Signal)) unix.WaitStatus {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, unix.WUNTRACED, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return unix.WaitStatus(0x7f00) // no children left: report exit 127
		}
		if wpid != pid {
			continue
		}
		if ws.Stopped() {
			stopped(ws.StopSignal())
			continue
		}
		return ws
	}
}

// killTreeBound bounds how long the init keeps killing its descendants.
const killTreeBound = 10 * time.Second

// killDescendants SIGKILLs and reaps every descendant of the init (a
// subreaper: orphans re-parent to it, however they left the tree), the
// whole tree at each pass (proc.KillDescendants). Called on the thread
// that started them (InitMain). It gives up, with a message, on kills
// refused for a second (EPERM: never expected, see InitMain) or after
// killTreeBound, rather than spin forever.
func killDescendants() {
	if err := proc.KillDescendants(nil, killTreeBound); err != nil {
		fmt.Fprintf(os.Stderr, "cordon init: ending the command's processes: %v\n", err)
	}
}

// lookPath finds the command the way a shell does: a name with a slash is
// used as given (relative to dir); a bare name is searched on the PATH of
// the command's environment.
func lookPath(name, dir string, env []string) (string, syscall.Errno) {
	if strings.Contains(name, "/") {
		return name, 0
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	found := unix.ENOENT
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Access(p, unix.X_OK) == nil {
			return p, 0
		}
		found = unix.EACCES
	}
	return "", found
}

// exitCodeForErrno maps a failed exec to the shell's convention: 127 when the
// command does not exist, 126 when it exists but cannot be run.
func exitCodeForErrno(errno syscall.Errno) int {
	if errno == unix.ENOENT {
		return 127
	}
	return 126
}

// Proxy ports on the sandbox's loopback (--net filter): HTTP (CONNECT and
// plain requests) and SOCKS5.
const (
	ProxyHTTPPort  = 3128
	ProxySOCKSPort = 1080
)

// proxyListeners listens on the sandbox's loopback at the proxy ports and
// returns the listening sockets (HTTP, SOCKS), then a sock_diag netlink
// socket of the sandbox's network namespace (the host asks it which socket
// is the client of a proxy connection), all close-on-exec.
func proxyListeners() ([]int, error) {
	var fds []int

	for _, port := range []int{ProxyHTTPPort, ProxySOCKSPort} {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return nil, os.NewSyscallError("socket", err)
		}
		fds = append(fds, fd)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("proxy listener on 127.0.0.1:%d: %w", port, os.NewSyscallError("bind", err))
		}
		if err := unix.Listen(fd, 4096); err != nil {
			closeAll(fds)
			return nil, os.NewSyscallError("listen", err)
		}
	}
	diag, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		closeAll(fds)
		return nil, os.NewSyscallError("socket(NETLINK_SOCK_DIAG)", err)
	}
	return append(fds, diag), nil
}
