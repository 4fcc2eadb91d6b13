package runner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/config"
	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
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

// sandboxArgv is the command line of bubblewrap bw (bwrap.Find's) that
// runs exe as the init in a sandbox shaped by spec (its Exe, Command and
// Privileged are set here).
func sandboxArgv(bw, exe string, spec bwrap.Spec) ([]string, error) {
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
		if under(dir, w) {
			_ = os.MkdirAll(dir, 0o700)
			break
		}
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		out = append(out, dir)
	}
	return out
}

// startSpec says how to start a sandbox. A one-shot run and a session differ
// only in what is set here; startSandbox is the one path that starts either.
type startSpec struct {
	// isolation is the tier; auto (or empty) is resolved here
	// (resolveIsolation). landlock and none run the init on the host,
	// without bubblewrap.
	isolation Isolation
	// autoBwrap: auto chose bwrap, from a probe or a remembered one
	// (isolation.ChooseCached); set by resolveIsolation.
	autoBwrap bool
	// bwrap is the bubblewrap auto chose (isolation.Choice.Bwrap), or "".
	bwrap string
	// box shapes the sandbox (its Dir, binds, network and hidden paths).
	box bwrap.Spec
	// exe is the binary that plays the init; empty means this executable.
	exe string
	// config is what the init runs, less the filters (added here).
	config configMsg
	// fallback lets the init supervise with ptrace only when a notify
	// listener already exists above the sandbox (EBUSY).
	fallback bool
	// stdin, stdout and stderr are the user's (a one-shot run): stderr
	// reaches the init as stderrFD, and what the sandbox itself says after
	// start-up is passed to it. nil: /dev/null, and the sandbox's own
	// stderr goes to the log.
	stdin, stdout, stderr *os.File
	// pgrp puts bubblewrap in a process group of its own in cordon's
	// session, so it can have the terminal's foreground; otherwise it gets
	// a session of its own, with no controlling terminal, so nothing in the
	// sandbox can open /dev/tty and terminal signals do not reach it.
	pgrp   bool
	policy *policy.Policy
	// sup configures the supervisor; RootPid and Logger are set here.
	sup supervisor.Options
	log *slog.Logger
	// beforeStart, when set, is called just before bubblewrap (or the
	// init) starts: the first moment a process of the sandbox exists.
	beforeStart func()
	// onNet receives every network record of a filtered sandbox; askNet
	// answers its ask decisions (nil: deny).
	onNet  func(*netproxy.Record)
	askNet func(*netproxy.Record) bool
	// home is the caller's home directory, for ~ in the files policy
	// (empty: the HOME of cordon's own environment).
	home string
	// onFile, when set, is told what the files policy did at start (for
	// the audit log); every event is logged at debug level too.
	onFile func(FileEvent)
	// files is the files policy expanded for this sandbox (set by argv).
	files *fileLayout
	// readOnly and readOnlyTry are the paths the bwrap tier's layout
	// binds read-only (set by argv; bwrap.Spec.ReadOnlyPaths), and
	// writable the ones it binds writable with the file each had then:
	// proven in the sandbox before its command starts (checkLayout).
	readOnly, readOnlyTry []string
	writable              []boundFile
	// covers are the layout's covered paths (bwrap.Spec.Covers) and
	// placeholder the identity of the file bound over unreadable files,
	// both proven in the sandbox too.
	covers      []coveredPath
	placeholder [2]uint64
	// readOnlyIDs is what each read-only path (but the covers) was when
	// the layout was made, proven in the sandbox too.
	readOnlyIDs map[string]roFile
	// llBox is the landlock tier's layout: the box as bubblewrap would
	// get it (git and files policy applied), set by argv.
	llBox bwrap.Spec
	// queue is git's queued commands at start (set by argv), for the
	// warning at the end (gitQueue).
	queue *gitQueue
	// gitDir is the working directory's git directory that withGit
	// protected, when the sandbox can write it.
	gitDir string
}

// errNotReady is how cordon sees a sandbox that died during the handshake;
// bubblewrap's own words, when it said any, say why.
var errNotReady = errors.New("the sandbox exited before it was ready")

// ptraceOnlyWarning is said when the init could not have a notify listener.
const ptraceOnlyWarning = "a seccomp notify listener already exists above this sandbox " +
	"(nested cordon, another notify-based tool, or WSL2 mirrored networking): supervising with ptrace only; " +
	"a denied program is killed when it starts instead of failing with \"Operation not permitted\""

// startSandbox starts bubblewrap (or the bare init) with the control socket
// as fd ctlFD, hands the init its configuration, takes the notify listener
// and the init's pid, and starts the supervisor on it. A sandbox that does
// not get ready is ended and its error says why (bubblewrap's own message
// when it gave one); cancelling ctx during the start ends it too.
func startSandbox(ctx context.Context, sp startSpec) (*Sandbox, error) {
	for attempt := 1; ; attempt++ {
		var hidden []string
		s, err := startSandboxOnce(ctx, sp, &hidden)
		p, raced := hideRaced(err, hidden)
		if !raced || attempt >= maxHideRetries || ctx.Err() != nil {
			return s, err
		}
		if sp.log != nil {
			sp.log.Debug("a hidden socket appeared or vanished while bubblewrap started: starting again", "path", p, "attempt", attempt)
		}
	}
}

// maxHideRetries bounds the starts retried because a socket file to hide
// appeared or vanished while bubblewrap set the sandbox up.
const maxHideRetries = 8

// hideRaced reports whether a start failed only because a file of hidden
// (HideFiles: host sockets, an explicit daemon socket) was removed or made
// between cordon's listing and bubblewrap's bind over it: bubblewrap then
// cannot make the mount point ("Can't create file at P: Read-only file
// system", or "No such device or address" when a socket appeared at P;
// "Can't bind mount /oldroot/dev/null on /newroot/P" when it went after;
// "Can't mkdir parents for P" when its directory went too).
// Starting again lists the files again; a socket still there is hidden.
func hideRaced(err error, hidden []string) (string, bool) {
	var se *SetupError
	if err == nil || !errors.As(err, &se) {
		return "", false
	}
	for _, p := range hidden {
		if strings.Contains(se.Detail, "Can't create file at "+p+": ") ||
			strings.Contains(se.Detail, "Can't mkdir parents for "+p+": ") ||
			strings.Contains(se.Detail, " on /newroot"+p+": ") {
			return p, true
		}
	}
	return "", false
}

// startSandboxOnce is one attempt of startSandbox; hidden receives the
// files it hid.
func startSandboxOnce(ctx context.Context, sp startSpec, hidden *[]string) (*Sandbox, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log := sp.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		sp.log = log
	}
	note, err := sp.resolveIsolation(ctx, log)
	if err != nil {
		return nil, err
	}
	cfg := sp.config
	bare := sp.isolation != IsolationBwrap
	if sp.isolation == IsolationNone {
		// The workload runs as this process's user with the host's /proc
		// and no Landlock scope: while this process is dumpable it could
		// open /proc/SELF/mem and rewrite the supervisor (a red team's;
		// pidfd_getfd, which took the notify listener, is refused by the
		// filter). Non-dumpable, only CAP_SYS_PTRACE reaches it. For the
		// daemon this covers its other sessions too, whatever their tier.
		// Set before any command starts, never cleared: a later none-tier
		// sandbox of the same process needs it again.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			return nil, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
		}
	}
	// Without a pid namespace nothing but the init kills what the command
	// leaves behind.
	cfg.Reap = bare
	// The command must not signal cordon's own processes in the sandbox
	// (the init, a shim, bubblewrap's pid 1): a stopped shim never reports
	// its process's exit. --isolation none has no such promise to keep.
	cfg.ScopeSignals = sp.isolation != IsolationNone
	if bare && (sp.sup.Verify == "" || sp.sup.Verify == supervisor.VerifyAuto) {
		// Without bubblewrap the command shares the host's mount namespace
		// and /proc: strict mode's proof (read-only mounts nobody can
		// change, no memory writers) does not hold, so an exec that ptrace
		// cannot verify is refused.
		sp.sup.Verify = supervisor.VerifyPtrace
	}
	if err := checkDir(sp.box.Dir); err != nil {
		return nil, err
	}
	// --rw and --ro by where they lead, for everything that reads them
	// before the layout (policyPaths: whether a writable bind holds the
	// trust store's directory, which must then exist to be protected).
	// The layout resolves its own paths again (argv, canonicalBox): a
	// symlink a run planted (a/b/c/d/e/f -> ../../../../../.git/.) given
	// as --rw in a later one must be ordered, held and walked as .git.
	sp.box.RW, sp.box.RO = canonicalPaths(sp.box.RW), canonicalPaths(sp.box.RO)
	// The working directory is bound where it really is (canonicalBox, at
	// the layout's end); the command starts in it as given, through its
	// links, unless those lie where the sandbox has a fresh tmpfs (/tmp in
	// this tier, the hidden directories): there the link is not there and
	// the command starts in the real directory.
	if sp.isolation == IsolationBwrap && sp.box.Dir != "" && cfg.Dir == sp.box.Dir {
		if real := canonicalPath(sp.box.Dir); real != filepath.Clean(sp.box.Dir) &&
			slices.ContainsFunc(append([]string{"/tmp"}, sp.box.Hide...), func(t string) bool { return under(sp.box.Dir, t) }) {
			cfg.Dir = real
		}
	}
	if sp.box.Net, err = netMode(sp.box.Net, sp.policy, sp.isolation); err != nil {
		return nil, err
	}
	filtered := sp.box.Net == bwrap.NetFilter
	// The landlock tier has no network namespace: with --net filter or
	// none the supervisor gates every TCP connect (ConnectGate).
	gated := sp.isolation == IsolationLandlock && sp.box.Net != bwrap.NetHost
	execs := newExecTable()
	var conns *connTable
	ports := bwrapProxyPorts
	var hostNet []int
	if filtered {
		conns = newConnTable(execs)
	}
	switch {
	case filtered && gated:
		// Host sockets cannot be hidden without a mount namespace
		// (README: the landlock tier's limits).
		if hostNet, ports, err = hostProxyListeners(); err != nil {
			return nil, &SetupError{Err: err}
		}
	case filtered:
		cfg.NetListen = true
		dirs, files := unixSocketHides()
		sp.box.Hide = append(dirs, sp.box.Hide...)
		sp.box.HideFiles = append(files, sp.box.HideFiles...)
	}
	// Until the Sandbox owns them.
	ownNet := true
	defer func() {
		if ownNet {
			closeAll(hostNet)
		}
	}()
	// A file to hide that is gone (a daemon's socket, since removed) has
	// nothing to hide, and bubblewrap cannot bind over it.
	var present []string
	for _, p := range sp.box.HideFiles {
		if _, err := os.Lstat(p); err == nil {
			present = append(present, p)
		}
	}
	sp.box.HideFiles = present
	*hidden = present
	if filtered || gated {
		// What each process was exec'd as, for attribution: from the
		// execs the kernel performed (verified at the exec event), not
		// from decisions, which an exec that then fails would leave
		// behind (strict mode sees no exec event: no program is known,
		// so for: rules match nothing there).
		sp.sup.OnExec = execs.note
	}
	// The sandbox's first process starts before its layout is worked out
	// (the files policy's walk, git's binds: about a millisecond), which
	// then overlaps bubblewrap's own start: bubblewrap reads its options
	// from a pipe (--args) and sets nothing up before their end. The
	// init, started directly in the other tiers, waits for its
	// configuration anyway.
	exe, err := sp.ownExe()
	if err != nil {
		return nil, err
	}
	first := []string{exe, InitArg}
	var bw string
	if sp.isolation == IsolationBwrap {
		// Auto found it already, and probed it or keyed the probe on it.
		if bw = sp.bwrap; bw == "" {
			if bw, err = bwrap.Find(); err != nil {
				return nil, &SetupError{Err: err}
			}
		}
		first = []string{bw, "--args", strconv.Itoa(argsFD), "--", exe, InitArg}
	}
	conn, childEnd, err := newControlPair()
	if err != nil {
		return nil, err
	}
	// Each descriptor the child gets, closed here once it started (or on
	// any failure before).
	var childFiles []*os.File
	closeChildFiles := func() {
		for _, f := range childFiles {
			f.Close()
		}
		childFiles = nil
	}
	childFiles = append(childFiles, childEnd)
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.close()
		closeChildFiles()
		return nil, &SetupError{Err: err}
	}
	childFiles = append(childFiles, errW)
	var argsW *os.File
	if bw != "" {
		var argsR *os.File
		if argsR, argsW, err = os.Pipe(); err != nil {
			conn.close()
			errR.Close()
			closeChildFiles()
			return nil, &SetupError{Err: err}
		}
		childFiles = append(childFiles, argsR)
	}
	stdin, stdout, stderr := sp.stdin, sp.stdout, sp.stderr
	if stdin == nil || stdout == nil {
		devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			conn.close()
			errR.Close()
			closeChildFiles()
			if argsW != nil {
				argsW.Close()
			}
			return nil, &SetupError{Err: err}
		}
		defer devnull.Close()
		stdin, stdout = cmp.Or(stdin, devnull), cmp.Or(stdout, devnull)
	}
	var lastPid *lastPidClient
	if bw != "" {
		// The sandbox has a pid namespace of its own, whose counter only
		// its init can read (strict mode's wrap check).
		var child *os.File
		if lastPid, child, err = newLastPidPair(); err != nil {
			conn.close()
			errR.Close()
			closeChildFiles()
			argsW.Close()
			return nil, &SetupError{Err: err}
		}
		childFiles = append(childFiles, child)
		cfg.LastPid = true
	}
	pass := func(b []byte) { log.Warn("sandbox stderr", "text", strings.TrimSpace(string(b))) }
	if stderr != nil {
		pass = func(b []byte) { _, _ = sp.stderr.Write(b) }
	} else {
		stderr = errW
	}
	s := &Sandbox{
		log:      log,
		warn:     func(msg string) { log.Warn(msg) },
		bare:     bare,
		tier:     sp.isolation,
		session:  cfg.Session,
		pol:      sp.policy,
		binds:    append(append([]string(nil), sp.box.RW...), sp.box.RO...),
		conn:     conn,
		waited:   make(chan struct{}),
		done:     make(chan struct{}),
		nsInit:   -1,
		filtered: filtered,
		execs:    execs,
		conns:    conns,
		exe:      exe,
		ports:    ports,
		gated:    gated,
		hostNet:  hostNet,
		lastPid:  lastPid,
	}
	ownNet = false
	if sp.stderr != nil {
		s.warn = func(msg string) { fmt.Fprintln(sp.stderr, "cordon: warning: "+msg) }
	}
	if note != "" {
		s.warn(note)
	}
	extra := []*os.File{childEnd, stderr}
	if argsW != nil {
		extra = append(extra, childFiles[2], childFiles[3]) // argsFD, lastPidFD
	}
	s.cmd = &exec.Cmd{
		Path:       first[0],
		Args:       first,
		Env:        initEnv(),
		Dir:        sp.box.Dir,
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     errW,
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: sp.pgrp,
			Setsid:  !sp.pgrp,
		},
	}
	if !bare {
		// bubblewrap dies with cordon, and its pid namespace with it.
		// A bare init is not killed with cordon: it sees the control
		// socket close and ends the command's tree itself, which, with no
		// pid namespace, nothing else would (InitMain, sessionMain).
		s.cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
	}
	if sp.beforeStart != nil {
		sp.beforeStart()
	}
	err = startLocked(s.cmd, func(err error) {
		s.waitErr = err
		close(s.waited)
	})
	// Only the sandbox may hold the child's ends: the control socket's EOF
	// and the pipe's are how a sandbox that dies during start-up is seen.
	closeChildFiles()
	if err != nil {
		conn.close()
		errR.Close()
		if argsW != nil {
			argsW.Close()
		}
		if lastPid != nil {
			lastPid.close()
		}
		return nil, &SetupError{Err: fmt.Errorf("starting %s: %w", first[0], err)}
	}
	s.stderr = newSetupOutput(errR, pass)
	if sp.policy != nil {
		// While bubblewrap starts and builds the sandbox, read on the host the
		// directories the first decision looks programs up in; the
		// supervisor takes a listing only for the very same directory.
		sp.sup.Prelisted = supervisor.Prelist(sp.policy, sp.sup.SearchPath)
		// The policy's tables, made on first use, are made now too.
		go policy.Warm()
	}
	// notReady ends a sandbox that did not get ready and says why.
	notReady := func(err error) (*Sandbox, error) {
		if sp.autoBwrap {
			// Auto chose bwrap and bubblewrap did not build the
			// sandbox: whatever the probe said is not remembered, so
			// the next run probes again (and may step down).
			isolation.Forget()
		}
		return nil, s.startFailed(ctx, err)
	}
	// abandon ends a sandbox whose layout or configuration could not be
	// made: bubblewrap, killed while it waits for its options, never
	// gets them (a partial list must never reach it).
	abandon := func(err error) (*Sandbox, error) {
		s.kill()
		if argsW != nil {
			argsW.Close()
		}
		_ = s.Close()
		return nil, err
	}
	argv, err := sp.argv(bw, exe)
	// The placeholder of unreadable files is bound by the time the init
	// answers (or bubblewrap failed): the sandbox keeps its inode.
	defer sp.files.cleanup()
	if err != nil {
		return abandon(err)
	}
	if testHookLayout != nil {
		testHookLayout()
	}
	s.queue = sp.queue // git's queued commands at start, known from the layout
	log.Debug("starting sandbox", "argv", bwrap.Describe(argv))
	if argsW != nil {
		opts, err := bwrapOptions(argv, first)
		if err != nil {
			return abandon(&SetupError{Err: err})
		}
		if len(argv) > bwrapMaxArgs {
			// bubblewrap would refuse them itself; said here, the
			// error names the cause, and the remembered probe stays
			// (bubblewrap works: the layout is too big for it).
			return abandon(tooManyOptions(len(argv), sp.files))
		}
		werr := writeArgs(argsW, opts)
		if werr != nil {
			// Killed before the pipe closes: whatever part of its
			// options bubblewrap read, it must not go on with them.
			s.kill()
		}
		if cerr := argsW.Close(); werr == nil {
			werr = cerr
		}
		argsW = nil
		if werr != nil {
			// Most often bubblewrap is gone already (a broken pipe):
			// what it said is the error, as for any that did not get
			// ready.
			log.Debug("passing bubblewrap its options", "err", werr)
			return notReady(errNotReady)
		}
	}
	// Creations are notified only when there are names to protect: each
	// costs a round trip to the supervisor.
	creates := len(sp.sup.ProtectedNames) > 0
	if creates {
		if sp.sup.OnCreateDenied == nil {
			sp.sup.OnCreateDenied = func(v *supervisor.CreateVerdict) {
				log.Warn("creation refused", "pid", v.Pid, "syscall", v.Syscall, "path", v.Path, "target", v.Target, "rule", v.Name)
			}
		}
	}
	// A filtered sandbox's connects are notified too: who connects a
	// socket to the proxy is the connection's owner (see connTable).
	if gated {
		cfg.Filter, err = supervisor.GatedFilter(creates)
	} else {
		cfg.Filter, err = supervisor.FilterWith(creates, filtered)
	}
	if err != nil {
		return abandon(&SetupError{Err: err})
	}
	// Gated, ptrace-only supervision could not make the connects: a
	// listener above the sandbox fails the start instead.
	if sp.fallback && !gated {
		if cfg.Fallback, err = supervisor.FallbackFilter(); err != nil {
			return abandon(&SetupError{Err: err})
		}
	}
	if sp.isolation == IsolationLandlock {
		if s.tmpdir, err = sp.landlock(&cfg, log); err != nil {
			return abandon(err)
		}
		cfg.Landlock.RestrictTCP = gated
		// The supervisor's test of a PATH program the sandbox could have
		// put there: mounts do not say in this tier, the writable set does.
		sp.sup.Writable = cfg.Landlock.Write
	}
	if filtered && !cfg.Session {
		cfg.Env = ProxyEnv(cfg.Env, exe, ports)
	}
	// bwrap's process group holds its pid 1: killing it empties the
	// namespace, and the handshake's read sees EOF.
	stop := context.AfterFunc(ctx, func() { _ = unix.Kill(-s.cmd.Process.Pid, unix.SIGKILL) })
	defer stop()
	if err := s.handshake(cfg, sp); err != nil {
		return notReady(err)
	}
	log.Debug("sandbox ready", "startup", time.Since(start), "init_pid", s.initPid, "verification", s.sup.VerifyMode())
	return s, nil
}

// ownExe is the binary that plays the init: sp.exe, or this executable
// (its real path, which the sandbox binds).
func (sp *startSpec) ownExe() (string, error) {
	if sp.exe != "" {
		return sp.exe, nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", &SetupError{Err: fmt.Errorf("finding cordon's own binary: %w", err)}
	}
	sp.exe = exe
	return exe, nil
}

// argsFD is where bubblewrap reads its options (--args): the third of the
// descriptors it inherits after stdio, the control socket (ctlFD) and the
// user's stderr (stderrFD). bubblewrap closes it once read; the init
// never sees it. The init's pid counter socket follows it (lastPidFD).
const argsFD = 5

// bwrapMaxArgs is how many arguments bubblewrap takes in all (its
// MAX_ARGS): "Exceeded maximum number of arguments" beyond.
const bwrapMaxArgs = 9000

// tooManyOptions is the error of a layout bubblewrap cannot take: most
// often a deny_read glob matching thousands of files in the writable trees
// (each is one bind).
func tooManyOptions(n int, fl *fileLayout) error {
	err := fmt.Errorf("the sandbox's layout needs %d bubblewrap arguments, more than the %d bubblewrap takes", n, bwrapMaxArgs)
	hint := "bind fewer paths"
	if fl != nil && len(fl.unreadable) > 0 {
		// The directory holding most of them says where to look.
		per := map[string]int{}
		top := ""
		for _, u := range fl.unreadable {
			d := filepath.Dir(u.Path)
			per[d]++
			if per[d] > per[top] {
				top = d
			}
		}
		err = fmt.Errorf("%w: deny_read rules match %d paths, each hidden by a bind of its own (%d of them in %s)",
			err, len(fl.unreadable), per[top], top)
		hint = "remove the files those rules match, or narrow the rules"
	}
	return inputError(err, hint)
}

// bwrapOptions returns the options of argv, bubblewrap's whole command
// line as sandboxArgv made it, that go through the --args pipe: all but
// the program and the command after the last "--", which must be the one
// first (the command line bubblewrap was started with) ends in.
func bwrapOptions(argv, first []string) ([]string, error) {
	tail := first[len(first)-3:] // "--", the init, InitArg
	n := len(argv) - len(tail)
	if n < 1 || argv[0] != first[0] || !slices.Equal(argv[n:], tail) {
		return nil, fmt.Errorf("bubblewrap's command line %q does not end in %q", argv, tail)
	}
	return argv[1:n], nil
}

// writeArgs writes bubblewrap's options to w, each ended by a NUL, as
// --args reads them. An option holding a NUL could not be one.
func writeArgs(w io.Writer, opts []string) error {
	var b strings.Builder
	for _, o := range opts {
		if strings.IndexByte(o, 0) >= 0 {
			return fmt.Errorf("bubblewrap option %q holds a NUL byte", o)
		}
		b.WriteString(o)
		b.WriteByte(0)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// argv is the command line that runs the init: that of bubblewrap bw
// (the bwrap tier's, found once by startSandboxOnce), or the init itself
// without it.
func (sp *startSpec) argv(bw, exe string) ([]string, error) {
	if sp.isolation == IsolationNone {
		return []string{exe, InitArg}, nil
	}
	// What decides the next run's policy is bound read-only, and never
	// runs (supervisor.Options.NeverRun): bound read-only, a file a
	// previous run wrote would pass --deny-writable-exec. The landlock
	// tier cannot bind anything read-only; what it keeps is NeverRun.
	protected := policyPaths(sp.box)
	sp.sup.NeverRun = append(sp.sup.NeverRun, protected...)
	box := sp.box
	box.Protect = append(append([]string{}, box.Protect...), protected...)
	home, err := callerHome(sp.home)
	if err != nil && sp.policy != nil {
		return nil, err
	}
	newRepos := sp.policy == nil || !slices.Contains(protectedNames(sp.policy.FilePolicy().DenyWrite), ".git")
	box, err = sp.withGit(box, home, newRepos)
	if err != nil {
		return nil, err
	}
	// Landlock decides by where a file really is, and bubblewrap mounts a
	// bind where its path leads; the files walk and the layout compare
	// paths (the trust store or a daemon's directory inside the writable
	// set, deny_read inside it, which bind holds a protected file, what
	// the private /tmp covers): a working directory or --rw reached
	// through a symlink (cd /tmp/h, h -> $HOME) must compare as its real
	// path. What the files policy adds below is resolved with the rest
	// when the layout is handed over (sandboxArgv, llBox).
	box = canonicalBox(box)
	if sp.policy != nil {
		fl, err := planFiles(sp.policy.FilePolicy(), box, home, sp.isolation == IsolationBwrap)
		if err != nil {
			return nil, err
		}
		sp.files = fl
		for _, u := range fl.unreadable {
			if under(exe, u.Path) {
				return nil, inputError(fmt.Errorf("cordon's own binary %s lies under %s, which a deny_read rule hides", exe, u.Path),
					"narrow the rule, or install cordon elsewhere")
			}
		}
		// Repositories found inside the writable trees get what the
		// working directory's own gets.
		if len(fl.gitDirs) > 0 {
			nv := nestedGit(slices.DeleteFunc(fl.gitDirs, func(d string) bool { return d == sp.gitDir }),
				append([]string{box.Dir}, box.RW...), home, newRepos)
			if nv.err != nil {
				fl.cleanup()
				return nil, nv.err
			}
			box.RW = append(append([]string{}, box.RW...), nv.rw...)
			box.RO = append(append([]string{}, box.RO...), nv.roMust...)
			box.Protect = append(append([]string{}, box.Protect...), nv.protect...)
		}
		fl.apply(&box)
		sp.sup.ProtectedNames = fl.names
		sp.log.Debug("files policy", "hidden", len(fl.unreadable), "protected", len(fl.protect),
			"private", len(fl.private), "protected_names", fl.names)
		for _, ev := range fl.events {
			sp.log.Debug("files", "action", ev.Action, "path", ev.Path, "rule", ev.Rule, "rule_id", ev.RuleID)
			if sp.onFile != nil {
				sp.onFile(ev)
			}
		}
	}
	// Resolved again with what the files policy added (allow_write,
	// read_only, nested repositories' binds).
	box = canonicalBox(box)
	if os.Geteuid() == 0 {
		// A root sandbox's files are root's: written where bwrap.Find
		// looks, the next run would start one outside any sandbox.
		writable := box.RW
		if box.Dir != "" && box.Dir != "/" {
			writable = append([]string{box.Dir}, writable...)
		}
		for _, w := range writable {
			if d := bwrap.RootDirHeld(w); d != "" {
				return nil, inputError(fmt.Errorf("%s would be writable in the sandbox, and %s is where cordon run by root takes bubblewrap from: "+
					"a run could leave one there that the next starts outside any sandbox", w, d),
					"run from, and bind, a directory that is not a system one, or run cordon as another user")
			}
		}
	}
	if sp.isolation == IsolationLandlock {
		// The same layout, enforced by the ruleset (sp.landlock) and the
		// supervisor's refusal of protected names.
		sp.llBox = box
		return []string{exe, InitArg}, nil
	}
	sp.readOnly, sp.readOnlyTry = box.ReadOnlyPaths()
	var hostMounts map[int]proc.Mount // read when a bound or covered path is a mount point
	sp.covers = sp.covers[:0]
	for _, c := range box.Covers() {
		host, _, err := hostStack(c.Path, &hostMounts)
		if err != nil && err != unix.ENOENT { // missing: bubblewrap makes it, nothing of the host's there
			return nil, &SetupError{Err: fmt.Errorf("%s, to be covered: %w", c.Path, err)}
		}
		sp.covers = append(sp.covers, coveredPath{c, host})
	}
	// What each read-only bind shows (a cover's path shows the cover,
	// proven as such): the file there now, or nothing (ENOENT).
	sp.readOnlyIDs = map[string]roFile{}
	covered := map[string]bool{}
	for _, u := range box.Unreadable {
		// Proven as covers, wherever they are (never as the secret
		// they cover: a red team found one under a Private tmpfs left
		// out of Covers, and its own file required there).
		covered[filepath.Clean(u.Path)] = true
	}
	for _, c := range sp.covers {
		covered[c.Path] = true
	}
	for _, p := range append(append([]string(nil), sp.readOnly...), sp.readOnlyTry...) {
		if covered[p] {
			continue
		}
		var st unix.Stat_t
		switch err := unix.Stat(p, &st); {
		case err == unix.ENOENT:
			sp.readOnlyIDs[p] = roFile{missing: true}
		case err != nil:
			return nil, &SetupError{Err: fmt.Errorf("%s, to be bound read-only: %w", p, err)}
		default:
			sp.readOnlyIDs[p] = roFile{dev: st.Dev, ino: st.Ino}
		}
	}
	if box.UnreadableFile != "" {
		var st unix.Stat_t
		if err := unix.Stat(box.UnreadableFile, &st); err != nil {
			return nil, &SetupError{Err: fmt.Errorf("the placeholder of unreadable files: %w", err)}
		}
		sp.placeholder = [2]uint64{st.Dev, st.Ino}
	}
	sp.writable = sp.writable[:0]
	for _, p := range box.WritablePaths() {
		host, sx, err := hostStack(p, &hostMounts)
		if err == unix.ENOENT {
			// bubblewrap says so, in the words the start's error
			// explains; if it is there when bubblewrap binds it, it
			// appeared in between (checkLayout refuses).
			sp.writable = append(sp.writable, boundFile{path: p, missing: true})
			continue
		} else if err != nil {
			return nil, &SetupError{Err: fmt.Errorf("%s, to be bound writable: %w", p, err)}
		}
		// A file on a read-only mount is bound read-only whatever the
		// bind asks: only the others must be writable in the sandbox.
		var sfs unix.Statfs_t
		if err := unix.Statfs(p, &sfs); err != nil {
			return nil, &SetupError{Err: fmt.Errorf("%s, to be bound writable: %w", p, err)}
		}
		sp.writable = append(sp.writable, boundFile{path: p, dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), ino: sx.Ino,
			readOnly: sfs.Flags&unix.ST_RDONLY != 0, host: host})
	}
	return sandboxArgv(bw, exe, box)
}

// withGit adds to box what git needs in the working directory (gitView):
// the one place both one-shot runs and sessions get it.
func (sp *startSpec) withGit(box bwrap.Spec, home string, newRepos bool) (bwrap.Spec, error) {
	v := gitBindsFor(box.Dir, box.RW, home, newRepos)
	if v.err != nil {
		return box, v.err
	}
	if sp.log != nil && v.why != "" {
		sp.log.Debug("git", v.describe()...)
	}
	box.RW = append(append([]string{}, box.RW...), v.rw...)
	box.RO = append(append([]string{}, box.RO...), v.roMust...)
	box.ROTry = append(append([]string{}, box.ROTry...), v.ro...)
	box.Private = append(append([]string{}, box.Private...), v.private...)
	box.Protect = append(append([]string{}, box.Protect...), v.protect...)
	sp.queue = newGitQueue(v.stateDir)
	sp.gitDir = v.stateDir
	return box, nil
}

// callerHome is the home that ~ in the files rules means: the caller's
// HOME, or when that is unset or empty, the home the user database gives
// for cordon's user. Without one, every ~ rule (the built-in secrets)
// would silently match nothing: the start fails instead.
func callerHome(home string) (string, error) {
	if home != "" {
		if !filepath.IsAbs(home) {
			return "", inputError(fmt.Errorf("HOME=%q is not an absolute path, so ~ in the files rules cannot be expanded", home), "set HOME to your home directory")
		}
		return filepath.Clean(home), nil
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || !filepath.IsAbs(u.HomeDir) {
		if err == nil {
			err = fmt.Errorf("the user database gives no home for uid %d", os.Getuid())
		}
		return "", inputError(fmt.Errorf("HOME is unset and cordon cannot find your home directory (%w), so ~ in the files rules cannot be expanded", err),
			"set HOME to your home directory")
	}
	return filepath.Clean(u.HomeDir), nil
}

// checkDir fails when the working directory cannot be the sandbox's: the
// kernel would report its chdir as a failure of bubblewrap's exec.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = unix.ENOTDIR
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &SetupError{Err: fmt.Errorf("working directory %s: %w", dir, err),
			Hint: "create it, or run from (or ask for) a directory that exists"}
	}
	return nil
}

// handshake sends the configuration, takes the listener (or the init's word
// that it supervises with ptrace only) and the init's pid, and starts the
// supervisor.
func (s *Sandbox) handshake(cfg configMsg, sp startSpec) error {
	if err := s.conn.send(cfg); err != nil {
		s.log.Debug("sending configuration to the sandbox", "err", err)
		return errNotReady
	}
	// The hello carries no descriptor; the listener's may arrive in the
	// same read, so they stay queued for the next message.
	var hello initMsg
	if err := s.conn.recvQueued(&hello); err != nil {
		s.log.Debug("reading the sandbox's first message", "err", err)
		return errNotReady
	}
	if hello.Kind != msgHello || s.conn.pid <= 0 {
		return fmt.Errorf("unexpected first message %q (pid %d) from the sandbox", hello.Kind, s.conn.pid)
	}
	helloPid := int(s.conn.pid)
	if sp.policy != nil {
		// The sandbox's root is the init's: the first decision's lookups
		// run now, while the init installs its filter (Prewarm says why
		// the answers are the ones that decision would get).
		root := helloPid
		if s.bare {
			root = 0
		}
		sp.sup.Prewarmed = supervisor.Prewarm(sp.policy, root, sp.sup)
	}
	var m initMsg
	fds, err := s.conn.recv(&m)
	if err != nil {
		s.log.Debug("reading the sandbox's second message", "err", err)
		return errNotReady
	}
	switch m.Kind {
	case msgListener:
	case msgExecErr:
		closeAll(fds)
		return &ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)}
	case msgSetupErr:
		closeAll(fds)
		return errors.New(m.Message)
	default:
		closeAll(fds)
		return fmt.Errorf("unexpected message %q from the sandbox", m.Kind)
	}
	want := 1
	if m.PtraceOnly {
		want = 0
	}
	netWant := 0
	if cfg.NetListen {
		netWant = 3
	}
	if len(fds) != want+netWant || m.NetListeners != netWant || s.conn.pid <= 0 || int(s.conn.pid) != helloPid || (s.gated && m.PtraceOnly) {
		closeAll(fds)
		return fmt.Errorf("sandbox sent %d descriptors and pid %d, want %d and its pid", len(fds), s.conn.pid, want+netWant)
	}
	netFDs := fds[want:]
	fds = fds[:want]
	if len(s.hostNet) > 0 {
		// The landlock tier's: made by cordon, not the init.
		netFDs, s.hostNet = s.hostNet, nil
	}
	s.initPid = int(s.conn.pid)
	if !s.bare {
		s.nsInit = nsInitPidfd(s.initPid)
		if testHookMounted != nil {
			testHookMounted()
		}
		if err := checkLayout(s.initPid, sp); err != nil {
			closeAll(fds)
			closeAll(netFDs)
			return &SetupError{Err: err}
		}
	}
	opts := sp.sup
	opts.RootPid, opts.Logger, opts.HostView = s.initPid, s.log, s.bare
	if s.lastPid != nil {
		opts.LastPid = s.lastPid.get
	}
	if s.conns != nil {
		// Set before the supervisor runs, which calls note.
		s.conns.initPid = s.initPid
		opts.ConnectPorts = s.ports.list()
		opts.OnConnect = s.conns.note
	}
	if s.gated {
		opts.ConnectGate = true
		opts.OnConnectDenied = connectDenied(s.execs, s.initPid, sp.onNet)
	}
	if m.PtraceOnly {
		s.warn(ptraceOnlyWarning)
		s.sup, err = supervisor.NewPtraceOnly(s.initPid, sp.policy, opts)
	} else {
		s.sup, err = supervisor.New(fds[0], sp.policy, opts)
	}
	if err != nil {
		closeAll(fds)
		closeAll(netFDs)
		return fmt.Errorf("starting the supervisor: %w", err)
	}
	if sp.policy != nil && sp.policy.Network() != nil {
		// Before the supervisor runs: every exec is recognised.
		if s.execs.recognize, err = forRecognizer(s.sup, sp.policy.Network()); err != nil {
			closeAll(netFDs)
			_ = s.sup.Close()
			return err
		}
	}
	if len(netFDs) > 0 {
		if err := s.startProxy(netFDs, &sp); err != nil {
			return err
		}
	}
	go func() {
		if err := s.sup.Run(); err != nil {
			s.log.Error("supervisor stopped", "err", err)
		}
	}()
	if fd, err := unix.PidfdOpen(s.initPid, 0); err == nil {
		go s.keepInitRunning(fd)
	}
	return nil
}

// startFailed ends a sandbox that did not get ready (or could not start its
// command) and returns why: an ExecError as it is; otherwise a SetupError
// with what bubblewrap said.
func (s *Sandbox) startFailed(ctx context.Context, cause error) error {
	var xe *ExecError
	if !errors.As(cause, &xe) {
		// Let it exit by itself first, so that what it says is whole.
		select {
		case <-s.waited:
		case <-time.After(time.Second):
		}
	}
	_ = s.Close()
	switch {
	case xe != nil:
		return cause
	case ctx.Err() != nil:
		return fmt.Errorf("starting the sandbox: %w", ctx.Err())
	}
	detail := s.stderr.captured(500 * time.Millisecond)
	if errors.Is(cause, errNotReady) && strings.TrimSpace(detail) == "" {
		select {
		case <-s.waited: // waitErr is set
			if s.waitErr != nil {
				cause = fmt.Errorf("%w (%v)", cause, s.waitErr)
			}
		default:
		}
	}
	hint := hintDoctor
	for _, p := range s.binds {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			// The caller's input, not the host: bubblewrap cannot bind
			// what does not exist.
			hint = p + " does not exist: create it, or leave it out of the sandbox's binds"
			break
		}
	}
	return &SetupError{Err: cause, Detail: detail, Hint: hint}
}

// serve runs read as the control channel's one reader; Close waits for it.
func (s *Sandbox) serve(read func()) {
	s.readDone = make(chan struct{})
	go func() {
		defer close(s.readDone)
		read()
	}()
}

// kill ends everything in the sandbox at once. SIGKILL to bubblewrap's
// process group reaches its pid 1, and when that dies the kernel kills
// every task in the namespace; the init's group is all that can be named
// without bubblewrap.
func (s *Sandbox) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = unix.Kill(-s.cmd.Process.Pid, unix.SIGKILL)
	}
	if s.initPid > 0 {
		_ = unix.Kill(-s.initPid, unix.SIGKILL)
	}
}

// Close kills everything in the sandbox and stops the supervisor, within
// the teardown bound. It is idempotent.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.stop()
	return nil
}

func (s *Sandbox) stop() {
	s.teardown.Do(func() {
		// One bound for the whole teardown, even if the supervisor is
		// wedged in the kernel.
		end := time.Now().Add(teardownBound)
		wait := func(ch <-chan struct{}, what string) bool {
			select {
			case <-ch:
				return true
			case <-time.After(time.Until(end)):
				s.log.Error(what+" did not finish in time", "bound", teardownBound)
				return false
			}
		}
		if s.bare {
			// The init kills and reaps the command's leftovers itself;
			// killing it first would orphan them. A session's init does
			// that when its control channel closes.
			if s.session {
				s.conn.close()
			}
			select {
			case <-s.waited:
			case <-time.After(teardownBound / 2):
			}
		}
		s.kill()
		wait(s.waited, "the sandbox's exit")
		for _, w := range s.queue.left() {
			s.warn(w)
		}
		// bwrap's own exit does not wait for the namespace to empty: wait
		// for its pid 1, so that nothing of the sandbox runs once Close
		// returns.
		if s.nsInit >= 0 {
			proc.PidfdWait(s.nsInit, end)
			unix.Close(s.nsInit)
			s.nsInit = -1
		}
		s.conn.close()
		if s.readDone != nil {
			wait(s.readDone, "the control reader")
		}
		if s.proxy != nil {
			_ = s.proxy.Close()
		}
		s.diag.close()
		closeAll(s.hostNet) // a start that failed before the handshake took them
		if s.sup != nil {
			s.sup.Shutdown()
			if wait(s.sup.Done(), "the supervisor") {
				_ = s.sup.Close()
			}
		}
		// After the supervisor: a request in progress ends first (the
		// client's lock), and a wedged supervisor's next one fails.
		s.lastPid.close()
		s.stderr.wait(100 * time.Millisecond)
		removeTmp(s.tmpdir)
		s.end(nil)
	})
}

// setupOutput reads what bubblewrap and the init say on stderr. Until the
// sandbox is ready it keeps it, so that a start-up failure becomes one
// error; from ready on, it passes everything to out (the user's stderr, or
// the log).
type setupOutput struct {
	out  func([]byte)
	done chan struct{}

	mu    sync.Mutex
	buf   bytes.Buffer // guarded by mu
	ready bool         // guarded by mu
}

func newSetupOutput(r *os.File, out func([]byte)) *setupOutput {
	so := &setupOutput{out: out, done: make(chan struct{})}
	go func() {
		defer close(so.done)
		defer r.Close()
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			if n > 0 {
				so.mu.Lock()
				if so.ready {
					so.out(b[:n])
				} else if so.buf.Len() < 64<<10 {
					so.buf.Write(b[:n])
				}
				so.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return so
}

// pass hands what was kept, and everything from now on, to out.
func (so *setupOutput) pass() {
	so.mu.Lock()
	defer so.mu.Unlock()
	so.ready = true
	if so.buf.Len() > 0 {
		so.out(so.buf.Bytes())
		so.buf.Reset()
	}
}

// captured returns what was kept, after the writers closed (bounded).
func (so *setupOutput) captured(d time.Duration) string {
	so.wait(d)
	so.mu.Lock()
	defer so.mu.Unlock()
	return so.buf.String()
}

// wait returns once the writers have closed, or after d.
func (so *setupOutput) wait(d time.Duration) {
	select {
	case <-so.done:
	case <-time.After(d):
	}
}

// testHookLayout, when set (by tests only), runs once the layout is worked
// out and before bubblewrap gets it: where another sandbox could change a
// path on the way (checkLayout).
var testHookLayout func()

// testHookMounted, when set (by tests only), runs once bubblewrap has set
// the sandbox up and before its layout is checked: where another sandbox
// could put back what it changed for bubblewrap's mounts.
var testHookMounted func()

// roFile is what a read-only bind's path was when the layout was made:
// its file, or nothing.
type roFile struct {
	dev, ino uint64
	missing  bool
}

// boundFile is a path the layout binds writable and the file it was when
// the layout was made.
type boundFile struct {
	path     string
	dev, ino uint64
	missing  bool // not there when the layout was made
	readOnly bool // on a read-only mount on the host: the bind is too
	host     hostMount
}

// hostMount is what the host has mounted at a path the layout binds or
// covers: stack counts the mounts (0: not a mount point), and parentDev
// is the device of the path's directory. Where the sandbox shows that
// directory from the host's file system (the root's bind, a writable bind
// above), it has copies of those mounts too, and the layout's mount on top;
// where it shows its own (the private /dev, a tmpfs), that mount alone.
type hostMount struct {
	stack     int
	parentDev uint64
}

// coveredPath is a cover of the layout and what the host has mounted at
// its path.
type coveredPath struct {
	bwrap.Cover
	host hostMount
}

// hostStack returns what the host has mounted at p (the mounts stacked
// there, read from the host's mountinfo, once, into *mounts, when p is a
// mount point), and p's own statx (not following a last symlink). The
// error is the bare errno when p cannot be looked at (ENOENT: missing).
func hostStack(p string, mounts *map[int]proc.Mount) (hostMount, unix.Statx_t, error) {
	var sx, px unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &sx); err != nil {
		return hostMount{}, sx, err
	}
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(p), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &px); err != nil {
		return hostMount{}, sx, err
	}
	if sx.Mask&px.Mask&unix.STATX_MNT_ID == 0 {
		return hostMount{}, sx, errors.New("no mount id (statx STATX_MNT_ID, Linux 5.8)")
	}
	host := hostMount{parentDev: unix.Mkdev(px.Dev_major, px.Dev_minor)}
	if sx.Mnt_id == px.Mnt_id {
		return host, sx, nil
	}
	if *mounts == nil {
		m, err := proc.Mounts("/proc/self/mountinfo")
		if err != nil {
			return hostMount{}, sx, fmt.Errorf("reading the host's mounts: %w", err)
		}
		*mounts = m
	}
	if host.stack = proc.StackAt(*mounts, int(sx.Mnt_id), p); host.stack == 0 {
		return hostMount{}, sx, fmt.Errorf("a mount point the host's mountinfo does not show at that path (mount id %d)", sx.Mnt_id)
	}
	return host, sx, nil
}

// checkLayout proves, as the sandbox of the init initPid sees it, that its
// mounts are the layout's (sp's readOnly, readOnlyTry, writable, covers):
// every path the layout binds read-only (and each of readOnlyTry that
// exists) is on a read-only mount; every path it binds writable is a mount
// point whose file is the one the layout bound, writable unless the host's
// mount is not; every path it covers (bwrap.Spec.Covers) has the cover
// itself on it: the placeholder file, a read-only empty tmpfs of mode 0000,
// a tmpfs, /dev/null. Each is looked up from the sandbox's root with no
// symlink on the way (the layout's paths are real).
//
// The layout is worked out from paths, and bubblewrap resolves each bind's
// source and destination again when it mounts it: a directory on a bind's
// path that another sandbox of the same user turned into a link in between
// lands that bind over what the layout protected, or somewhere else
// (another repository, the trust store), or mounts another directory there
// (red teams' races, 1-9 runs in 100), and the link can be gone again by
// now. A writable bind that is where the layout put it, with the file it
// bound, on a writable mount (a path that was a mount point on the host
// already is one here, read-only under the root's bind, when the bind went
// elsewhere), cannot be anywhere else; a cover found on its path covers
// what is there now (a read-only mount does not: a file the sandbox sees
// read-only anyway stays readable when its cover went elsewhere). Any
// failure to prove it refuses the run.
func checkLayout(initPid int, sp startSpec) error {
	if len(sp.readOnly)+len(sp.readOnlyTry)+len(sp.writable)+len(sp.covers) == 0 {
		return nil
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(initPid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the sandbox's root to check its layout: %w", err)
	}
	defer unix.Close(root)
	changed := func(p, what string) error {
		return fmt.Errorf("%s %s: a path on the way changed while the sandbox was set up; run again, and do not give --rw or allow_write paths in a tree another sandbox is writing", p, what)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	open := func(p string) (int, error) {
		rel := strings.TrimPrefix(p, "/")
		if rel == "" {
			rel = "."
		}
		return proc.Openat2(root, rel, &how)
	}
	// look opens p and returns its mount id, its statx and its statfs.
	type found struct {
		mnt uint64
		sx  unix.Statx_t
		sfs unix.Statfs_t
	}
	look := func(p string) (found, error) {
		var f found
		fd, err := open(p)
		if err != nil {
			return f, err
		}
		defer unix.Close(fd)
		if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW,
			unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_INO|unix.STATX_MNT_ID, &f.sx); err != nil {
			return f, err
		}
		if f.sx.Mask&unix.STATX_MNT_ID == 0 {
			return f, errors.New("no mount id (statx STATX_MNT_ID, Linux 5.8)")
		}
		if err := unix.Fstatfs(fd, &f.sfs); err != nil {
			return f, err
		}
		f.mnt = f.sx.Mnt_id
		return f, nil
	}
	// mountPoint reports whether p, found as f, is a mount point: its
	// parent is on another mount. Parents repeat (a repository's .git
	// binds): each is looked up once.
	parents := map[string]found{}
	parentOf := func(p string) (found, error) {
		dir := filepath.Dir(p)
		parent, ok := parents[dir]
		if !ok {
			var err error
			if parent, err = look(dir); err != nil {
				return parent, err
			}
			parents[dir] = parent
		}
		return parent, nil
	}
	mountPoint := func(p string, f found) (bool, error) {
		if f.sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
			// The kernel says so itself (Linux 5.8): no parent to look up.
			return f.sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
		}
		parent, err := parentOf(p)
		return err == nil && parent.mnt != f.mnt, err
	}
	readOnly := func(p string, mayBeMissing bool) error {
		f, err := look(p)
		if err == unix.ENOENT && mayBeMissing {
			return nil
		}
		if err != nil {
			return changed(p, fmt.Sprintf("(which the sandbox must not change) is not where the layout put it (%v)", err))
		}
		if f.sfs.Flags&unix.ST_RDONLY == 0 {
			return changed(p, "(which the sandbox must not change) is writable in it")
		}
		// A bind's source is looked up again by bubblewrap, in the
		// host's tree, where a directory on the way can be a link by
		// then: a read-only bind at its place showing another file (a
		// git directory's entry bound into the private view of a linked
		// worktree, turned into a link to ~/.ssh by another sandbox)
		// shows what no cover covers.
		if id, ok := sp.readOnlyIDs[p]; ok &&
			(id.missing || unix.Mkdev(f.sx.Dev_major, f.sx.Dev_minor) != id.dev || f.sx.Ino != id.ino) {
			return changed(p, "(bound read-only) is not the file the layout bound")
		}
		return nil
	}
	// onTop proves that the mount at p (found as f) is the layout's own
	// where the host had mounts at p already: a copy of the host's mount
	// (writable under a writable bind above, a tmpfs like a private one)
	// is one there wherever the layout's own went. Where the sandbox shows
	// p's directory from the host's file system, the recursive bind that
	// shows it brought copies of the host's mounts at p along, and the
	// layout's mount must be on top of them. (Where the sandbox shows its
	// own directory, the private /dev or a tmpfs, there are no copies, and
	// bubblewrap may have a mount of its own there: /dev/pts.)
	var sandboxMounts map[int]proc.Mount
	onTop := func(p string, f found, host hostMount) error {
		if host.stack == 0 {
			return nil
		}
		if parent, err := parentOf(p); err != nil || unix.Mkdev(parent.sx.Dev_major, parent.sx.Dev_minor) != host.parentDev {
			return nil
		}
		if sandboxMounts == nil {
			m, err := proc.Mounts("/proc/" + strconv.Itoa(initPid) + "/mountinfo")
			if err != nil {
				return fmt.Errorf("cannot be checked: reading the sandbox's mounts: %w", err)
			}
			sandboxMounts = m
		}
		if n := proc.StackAt(sandboxMounts, int(f.mnt), p); n <= host.stack {
			return fmt.Errorf("has %d mounts on it, the host's %d without the layout's: it landed elsewhere", n, host.stack)
		}
		return nil
	}
	for _, w := range sp.writable {
		if w.missing {
			return changed(w.path, "(bound writable) appeared after the layout was made")
		}
		f, err := look(w.path)
		if err != nil {
			return changed(w.path, fmt.Sprintf("(bound writable) is not where the layout put it (%v)", err))
		}
		if unix.Mkdev(f.sx.Dev_major, f.sx.Dev_minor) != w.dev || f.sx.Ino != w.ino {
			return changed(w.path, "(bound writable) is not the file the layout bound")
		}
		mp, err := mountPoint(w.path, f)
		if err != nil {
			return changed(w.path, fmt.Sprintf("(bound writable) has no parent where the layout put it (%v)", err))
		}
		if !mp {
			return changed(w.path, "(bound writable) is not a mount point: its bind landed elsewhere")
		}
		if err := onTop(w.path, f, w.host); err != nil {
			return changed(w.path, "(bound writable) "+err.Error())
		}
		if !w.readOnly && f.sfs.Flags&unix.ST_RDONLY != 0 {
			return changed(w.path, "(bound writable) is on a read-only mount: its bind landed elsewhere")
		}
	}
	for _, c := range sp.covers {
		f, err := look(c.Path)
		if err != nil {
			return changed(c.Path, fmt.Sprintf("(covered) is not where the layout put it (%v)", err))
		}
		mp, err := mountPoint(c.Path, f)
		if err != nil {
			return changed(c.Path, fmt.Sprintf("(covered) has no parent where the layout put it (%v)", err))
		}
		typ := f.sx.Mode & unix.S_IFMT
		var ok bool
		switch c.Kind {
		case bwrap.CoverFile:
			ok = unix.Mkdev(f.sx.Dev_major, f.sx.Dev_minor) == sp.placeholder[0] && f.sx.Ino == sp.placeholder[1] &&
				f.sfs.Flags&unix.ST_RDONLY != 0
		case bwrap.CoverEmptyDir:
			ok = typ == unix.S_IFDIR && f.sx.Mode&0o7777 == 0 && uint32(f.sfs.Type) == unix.TMPFS_MAGIC &&
				f.sfs.Flags&unix.ST_RDONLY != 0
		case bwrap.CoverTmpfs:
			ok = typ == unix.S_IFDIR && uint32(f.sfs.Type) == unix.TMPFS_MAGIC
		case bwrap.CoverNull:
			ok = typ == unix.S_IFCHR && f.sx.Rdev_major == 1 && f.sx.Rdev_minor == 3
		}
		if !ok || !mp {
			return changed(c.Path, "(covered) has not its cover on it: the cover landed elsewhere")
		}
		if err := onTop(c.Path, f, c.host); err != nil {
			return changed(c.Path, "(covered) "+err.Error())
		}
	}
	for _, p := range sp.readOnly {
		if err := readOnly(p, false); err != nil {
			return err
		}
	}
	for _, p := range sp.readOnlyTry {
		if err := readOnly(p, true); err != nil {
			return err
		}
	}
	return nil
}
