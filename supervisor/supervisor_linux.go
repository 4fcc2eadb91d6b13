package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/seccomp"
	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// Syscall numbers the filter notifies, per calling convention.
const (
	x32Bit = 0x40000000

	nrExecveAMD64   = 59
	nrExecveatAMD64 = 322
	nrExecveX32     = x32Bit | 520
	nrExecveatX32   = x32Bit | 545
	nrExecve386     = 11
	nrExecveat386   = 358
)

// Verdict records one exec the supervisor decided.
type Verdict struct {
	Time time.Time
	// Pid is the caller's pid in the host's pid namespace.
	Pid int
	// Syscall is "execve" or "execveat"; Arch is "x86_64", "i386" or "x32".
	Syscall, Arch string
	Exec          policy.Exec
	Result        policy.Result
	// Errno is what the caller's exec returned when the supervisor refused
	// it (EPERM for a policy denial; E2BIG, EFAULT... when the call could not
	// have succeeded); zero when the exec was let through.
	Errno              syscall.Errno
	pathAddr, argvAddr uint64 // where the caller keeps them, for strict mode
	// called is the path the caller asked for, made absolute in its root
	// (not cleaned); root is the caller's root directory (O_PATH) while
	// the notification is handled: proven the sandbox's when rootProven,
	// else the sandbox's root as cordon holds it, for an exec whose
	// caller's root is proven at its exec event (see Supervisor.decide).
	called     string
	dirfd      int32
	root       int
	rootProven bool
	ptrSize    int
	// image is the file the kernel is to map for this exec: the file
	// named, or for a #! script its innermost interpreter. Verification at
	// the exec event requires the new image to be this very file.
	image      policy.FileID
	imageKnown bool
	// volatile says the policy's decision read something that can change
	// with the file's FileID, path and argv all equal: the content of a
	// file the sandbox can write (a shared writable mapping rewrites it
	// with no new ctime) or a path resolved from the caller's working
	// directory (a loader's program). Such a decision is never remembered
	// (decisionMemo), and the exec event decides it again in full
	// (tracer.unchanged).
	volatile bool

	// Interpreter lists the #! interpreters a script runs through, outermost
	// first; Expect is then the argv the kernel gives the innermost one.
	Interpreter []string
	Expect      []string

	// Reason, when set, says why an exec the rules alone would allow was
	// refused: ReasonChanged (killed at the exec event because what ran
	// is not what was checked), or why strict mode could not let it run.
	Reason string
	// Latency is the time from receiving the notification to answering it:
	// to the answer's system call, or for a decision OnDecision sees
	// before the caller is answered (see Options.OnDecision), to the
	// callback.
	Latency time.Duration
	// held says the caller was answered with the tracer attached to it
	// from the receive loop's own thread (tracer.embed), so OnDecision
	// can wait until after the answer.
	held bool
	// skipped says the check skipped a read because the judge had seen
	// its answer before: a file taken for no #! script because notScripts
	// had seen it so, or a canonical path pathNames remembered. The
	// decision stands only if the exec event verifies it (see notScripts
	// and pathNames).
	skipped bool
	// remembered says the check decided the file pathNames remembered for
	// the path called without opening the path (judge.open): when what
	// the kernel ran is not that exec, the exec event makes the skipped
	// check itself (tracer.recheck) and the check forgets the entry (see
	// tracer.decideImage).
	remembered bool
	// loaded are the programs a dynamic loader run as the exec's program
	// was decided to open (files.Resolve), outermost loader's first: the
	// exec event follows the loader until it has opened them (loaderWatch).
	loaded []loadedProg
}

// Refused reports whether cordon refused the exec: the policy denied it, or
// it could not be identified or verified (Reason says why). The other
// nonzero Errnos fail an exec as the kernel would have (ENOENT for a shell
// probing its PATH), and print no denial.
func (d *Verdict) Refused() bool { return d.Errno == unix.EPERM }

// Options configures a Supervisor.
type Options struct {
	// OnDecision, when set, is called for every decision, for every
	// exec killed at verification, and for every exec whose arguments,
	// file, name or loader's program changed after the check and that
	// verification allowed as it ran (Reason ReasonRedecided: what runs).
	// An exec allowed with the caller held
	// by the tracer is answered first (the caller cannot be reaped, so
	// its pid cannot be reused, until the callback returns); every other
	// decision is reported before the caller is answered, while the pid is
	// certainly the caller's. Either way the callback runs before the next
	// notification is received. It is called from the supervisor's
	// goroutine and from the tracer's, so it must be safe for concurrent
	// use, and must not block.
	OnDecision func(*Verdict)
	// OnExec, when set, is called for every allowed exec the kernel has
	// performed, once its new image is verified at PTRACE_EVENT_EXEC (and
	// for every exec allowed in ptrace-only supervision, which decides
	// there): what a process now runs, unlike OnDecision's allowed
	// decisions, which the kernel may still fail (E2BIG, EFAULT, ENOEXEC)
	// and leave the caller running what it ran before. It is never called
	// in strict mode, where no exec event is seen. It runs on the tracer's
	// thread while the process is stopped, and must not block.
	OnExec func(*Verdict)
	// Verify selects race-free verification of allowed execs; empty means
	// VerifyAuto.
	Verify Verify
	// Ask answers exec decisions of kind ask; nil refuses them.
	Ask func(*Verdict) bool
	// Logger receives debug and error records; nil discards them.
	Logger *slog.Logger
	// WedgeAfter, when positive, makes the receive after that many
	// notifications never return, as a kernel that never wakes a parked
	// ioctl would. It exists to test that teardown stays bounded.
	WedgeAfter int
	// RootPid is a process whose root is the sandbox's root (the init):
	// program names in rules are looked up there. Zero means the host's.
	RootPid int
	// HostView says the sandbox shares the supervisor's mount namespace
	// and root (no bubblewrap): the sandbox's view is read from the
	// supervisor's own /proc/self, not from RootPid's, which a supervisor
	// without CAP_SYS_PTRACE cannot read (the init is not dumpable).
	HostView bool
	// SearchPath is the command's PATH, where a rule's bare program name
	// is looked up to recognise links and copies of that program.
	SearchPath string
	// Writable lists the directories the sandbox can write beneath when
	// its mounts do not say (the landlock tier's writable set, absolute
	// and clean): a program found on the PATH beneath one of them is one
	// the sandbox could have put there, which an allow rule naming it
	// does not vouch for (policy.Vouching). Unused when the sandbox's root
	// is a read-only mount (bubblewrap's tier).
	Writable []string
	// Prelisted, when set, holds the PATH's and the loader's directories
	// as read on the host while the sandbox started (Prelist): the first
	// decision uses a listing whose directory is the sandbox's own instead
	// of reading it again.
	Prelisted *Prelisted
	// Prewarmed, when set, is the file cache whose program lookups began
	// when the sandbox's init was known (Prewarm); used when it was made
	// for this root (RootPid, or 0 with HostView) and SearchPath.
	Prewarmed *Prewarmed
	// NeverRun lists files, or directories whose files, must never run,
	// whatever the policy says: cordon's own policy files and trust store,
	// which it binds read-only into the sandbox. A previous run may have
	// written one (a file the workload created where discovery looks) and
	// made it executable; read-only now, it would pass
	// --deny-writable-exec. Paths are the host's (bound at the same place).
	NeverRun []string
	// ProtectedNames are names (one path component, globs allowed) the
	// sandbox may not create anywhere: cordon.yaml, .claude, ... The
	// filter must have been built with them (Filter's names), so that the
	// creating calls are notified; see decideCreate.
	ProtectedNames []string
	// OnCreateDenied, when set, is called for every creation refused
	// because of ProtectedNames, on the supervisor's goroutine.
	OnCreateDenied func(*CreateVerdict)
	// ConnectPorts are the ports of the network proxy on the sandbox's
	// loopback; OnConnect, when set, is called (on the supervisor's
	// goroutine, before the call continues) for every connect of a socket
	// to one of them, with the caller and the socket's inode. The filter
	// must have been built with connects (FilterWith). Every connect
	// continues: this attributes connections, it decides none.
	ConnectPorts []uint16
	OnConnect    func(ConnectEvent)
	// ConnectGate makes the supervisor the only way a TCP socket of the
	// sandbox connects (the landlock tier's --net filter and --net none,
	// where Landlock refuses every TCP connect of the sandbox itself): a
	// connect of a TCP socket to 127.0.0.1 at one of ConnectPorts is
	// made by the supervisor, on its own copy of the socket and of the
	// address (decideConnect); every other connect of an AF_INET or
	// AF_INET6 socket is refused and reported to OnConnectDenied. Other
	// sockets' connects continue. The filter must be GatedFilter's.
	ConnectGate     bool
	OnConnectDenied func(ConnectDenial)
	// LastPid, when set, returns the last pid allocated in the sandbox's
	// pid namespace, as a process of that namespace reads it from
	// /proc/sys/kernel/ns_last_pid (the kernel answers that file for the
	// reader's namespace, whatever proc it is in). Strict mode's listing
	// of the sandbox's processes uses it to see pid numbers wrap around
	// behind it (see memoryPeer); an error refuses the exec. Nil: the
	// sandbox shares the supervisor's pid namespace (no bubblewrap), whose
	// counter the supervisor reads itself. It must be safe for concurrent
	// use and return within a bounded time.
	LastPid func() (int, error)
	// DropAfter, when positive, makes the supervisor close the listener and
	// stop after that many notifications, as if it had died: it exists to
	// test that later execs in the sandbox fail (fail closed).
	DropAfter int
}

// Supervisor answers the seccomp notifications of one sandbox.
type Supervisor struct {
	listener int
	wake     int // eventfd written by Shutdown
	judge    judge
	// others is a view of the file caches for Recognize: no exec of its
	// own is ever current in it.
	others *files
	// sandbox is what callers are checked against: the sandbox's mount
	// namespace, root and writable devices.
	sandbox *sandboxView
	tracer  *tracer // nil in strict mode
	// ptraceOnly: no listener; the tracer follows every task.
	ptraceOnly bool
	opts       Options
	log        *slog.Logger
	mem        memReader
	handled    int // notifications answered; owned by Run's goroutine
	// immutables caches strict mode's path proofs; owned by Run's
	// goroutine.
	immutables immutableCache

	// creates maps the creating calls CreateFilter notifies (only with
	// ProtectedNames) to what to check in them.
	creates map[createKey]*createCall
	// connects maps the connect calls FilterWith notifies (with
	// OnConnect), and the listen calls GatedFilter does, to which they
	// are (netCall).
	connects map[createKey]netCall

	// recv is seccomp.NotifRecv, replaceable by tests to simulate a wedged kernel.
	recv func(fd int, n *seccomp.Notif) error

	shutdown sync.Once
	done     chan struct{}
	closeMu  sync.Mutex
	closed   bool // guarded by closeMu
}

// New returns a supervisor for listener, which it owns from now on.
func New(listener int, pol *policy.Policy, opts Options) (*Supervisor, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Verify == "" {
		opts.Verify = VerifyAuto
	}
	viewPid := opts.RootPid
	if opts.HostView {
		viewPid = 0
	}
	fs := opts.Prewarmed.adopt(viewPid, opts)
	if fs == nil {
		fs = newFiles(newSandboxView(viewPid), opts.SearchPath)
		fs.neverRun = neverRun(opts.NeverRun)
		fs.writable = realWritable(opts.Writable)
		fs.pre = opts.Prelisted
	}
	sandbox := fs.sandbox
	sandbox.nsLastPid = opts.LastPid
	// The first decision's view of the sandbox (its mount namespace,
	// root and mounts: 0.25 ms, the mount table's text above all) is
	// read while the init is told to go and forks, not after its exec
	// is notified. The same reads as at that exec: nothing in the
	// sandbox mounts anything, and its init runs after bubblewrap's last
	// mount (see sandboxView).
	go sandbox.init()
	s := &Supervisor{
		listener: listener,
		wake:     wake,
		judge:    newJudge(pol, fs),
		others:   fs.view(),
		opts:     opts,
		log:      log,
		recv:     wedgeAfter(opts.WedgeAfter, seccomp.NotifRecv),
		done:     make(chan struct{}),
		sandbox:  sandbox,
	}
	if len(opts.ProtectedNames) > 0 {
		if s.creates, err = createTable(); err != nil {
			unix.Close(wake)
			return nil, err
		}
	}
	if opts.OnConnect != nil || opts.ConnectGate {
		if s.connects, err = connectTable(); err != nil {
			unix.Close(wake)
			return nil, err
		}
	}
	if opts.Verify != VerifyStrict {
		// The tracer decides on its own thread: its own view of the
		// shared file cache.
		s.tracer = newTracer(newJudge(pol, fs.view()), log, s.report)
		s.tracer.exec = opts.OnExec
		// Every exec the check lets run is now verified at its exec
		// event, or decided again with its heads and names read (guard).
		s.judge.heads = &notScripts{}
		s.judge.names = &pathNames{held: fs.heldTest}
		s.tracer.forgetPath = s.judge.names.forget
	}
	return s, nil
}

// Recognize decides e (an exec this supervisor decided: Verdict.Exec)
// against another policy p, recognising programs the way the supervisor's
// own policy does: by identity with what p's names stand for on the
// sandbox's PATH (a symlink, hard link or renamed copy of npm is npm), not
// by the name the caller used. The network filter uses it for rules
// limited to programs (for: npm). Safe for concurrent use (OnDecision runs
// on the supervisor's goroutine and on the tracer's thread).
func (s *Supervisor) Recognize(p *policy.Policy, e *policy.Exec) policy.Result {
	return p.WithFiles(s.others).Decide(e)
}

func (s *Supervisor) report(d *Verdict) {
	if s.opts.OnDecision != nil {
		s.opts.OnDecision(d)
	}
}

// NewPtraceOnly returns a supervisor for a sandbox that could not get a
// notify listener (another one exists above it): every task of the sandbox
// is traced from its init (rootPid) on, and each exec is decided at
// PTRACE_EVENT_EXEC. A denied program is killed before it runs; its caller
// sees it die of SIGKILL instead of an EPERM from execve. Call it before the
// init starts anything.
func NewPtraceOnly(rootPid int, pol *policy.Policy, opts Options) (*Supervisor, error) {
	s, err := New(-1, pol, Options{OnDecision: opts.OnDecision, Ask: opts.Ask, Logger: opts.Logger,
		RootPid: rootPid, HostView: opts.HostView, SearchPath: opts.SearchPath, Verify: VerifyPtrace, NeverRun: opts.NeverRun,
		Prelisted: opts.Prelisted, Prewarmed: opts.Prewarmed, Writable: opts.Writable})
	if err != nil {
		return nil, err
	}
	s.tracer.follow, s.tracer.ask = true, opts.Ask
	if err := s.tracer.followAll(rootPid); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.ptraceOnly = true
	return s, nil
}

// VerifyMode says how execs are checked: "auto" (notify; every allowed exec
// verified with ptrace, strict mode for a caller ptrace cannot attach to),
// "ptrace" (notify; every allowed exec verified with ptrace, refused when
// it cannot attach), "strict" (notify, strict mode) or "ptrace-only" (no
// listener).
func (s *Supervisor) VerifyMode() string {
	switch {
	case s.ptraceOnly:
		return "ptrace-only"
	case s.tracer == nil:
		return "strict"
	case s.opts.Verify == VerifyPtrace:
		return "ptrace"
	}
	return "auto"
}

func wedgeAfter(n int, recv func(int, *seccomp.Notif) error) func(int, *seccomp.Notif) error {
	if n <= 0 {
		return recv
	}
	count := 0
	return func(fd int, notif *seccomp.Notif) error {
		if count >= n {
			select {} // never returns
		}
		count++
		return recv(fd, notif)
	}
}

// Run answers notifications until Shutdown is called or every task using the
// filter is gone (POLLHUP on the listener). It never blocks inside
// SECCOMP_IOCTL_NOTIF_RECV: it waits in ppoll and receives only what poll
// says is pending.
//
// With ptrace verification the loop runs on the tracer's thread (see
// tracer.embed), which also collects the tracees' events between
// notifications.
func (s *Supervisor) Run() error {
	defer close(s.done)
	if s.tracer != nil && !s.ptraceOnly && s.listener >= 0 {
		if ran, err := s.tracer.embed(s.serve); ran {
			return err
		}
	}
	return s.serve(false)
}

// yieldEvery is how often serve passes through the scheduler: under the
// runtime's forced-preemption period (10 ms, see serve).
const yieldEvery = 5 * time.Millisecond

// serve is Run's loop. embedded says it runs on the tracer's thread, whose
// work it then does between notifications (see tracer.embed).
func (s *Supervisor) serve(embedded bool) error {
	fds := []unix.PollFd{
		{Fd: int32(s.listener), Events: unix.POLLIN},
		{Fd: int32(s.wake), Events: unix.POLLIN},
	}
	if s.listener < 0 {
		fds[0].Fd = -1 // ptrace-only: poll ignores negative fds
	}
	var timeout *unix.Timespec
	var ts unix.Timespec
	var n seccomp.Notif
	lastYield, yieldedAt := time.Now(), s.handled
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if now := time.Now(); s.handled != yieldedAt && now.Sub(lastYield) >= yieldEvery {
			// This goroutine never blocks in the scheduler (its waits are
			// system calls), so its P's schedule tick never moves, and
			// after 10 ms the runtime's monitor (sysmon) takes the P away
			// in every system call it catches (a preemption it cannot
			// deliver otherwise) and, having found work, keeps polling
			// every 20 µs: measured, 1.7 P hand-offs and 3 nanosleeps per
			// exec. One pass through the scheduler now and then moves the
			// tick for the cost of one hand-off. Only after answering:
			// an idle loop (a daemon's quiet session) wakes every 20 ms
			// and has no use for it.
			runtime.Gosched()
			lastYield, yieldedAt = now, s.handled
		}
		if embedded {
			// Set every time: the kernel writes the time left back.
			ts = unix.NsecToTimespec(int64(s.tracer.service()))
			timeout = &ts
		}
		if _, err := unix.Ppoll(fds, timeout, nil); err != nil {
			if err == unix.EINTR {
				continue // embedded: most often a tracee's SIGCHLD; service collects it
			}
			return os.NewSyscallError("ppoll", err)
		}
		if fds[1].Revents != 0 {
			return nil
		}
		ev := fds[0].Revents
		if ev&unix.POLLNVAL != 0 {
			return errors.New("seccomp listener fd is not open")
		}
		if ev&unix.POLLIN != 0 {
			if err := s.recv(s.listener, &n); err != nil {
				// ENOENT: the caller died or was interrupted after poll said
				// it was waiting; an interrupted exec is notified again.
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return err
			}
			s.handle(&n)
			s.handled++
			if s.opts.DropAfter > 0 && s.handled >= s.opts.DropAfter {
				s.log.Debug("dropping the listener (test hook)", "after", s.handled)
				s.closeMu.Lock()
				_ = unix.Close(s.listener)
				s.listener = -1
				s.closeMu.Unlock()
				return nil
			}
			continue
		}
		if ev&(unix.POLLHUP|unix.POLLERR) != 0 {
			return nil // every task using the filter has exited
		}
	}
}

// Shutdown makes Run return. It is idempotent and safe from any goroutine.
// It also releases the sandbox's root the supervisor holds (a decision
// that still needs it refuses: fail closed), which Close would only
// release once Run has returned: a wedged supervisor, which teardown
// abandons, keeps no more than its listener and its eventfd.
func (s *Supervisor) Shutdown() {
	s.shutdown.Do(func() {
		var one = [8]byte{1}
		_, _ = unix.Write(s.wake, one[:])
		s.sandbox.close()
	})
}

// Done is closed when Run has returned.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Close releases the listener and the eventfd. Call it after Run returned;
// closing the listener makes further execs in the sandbox fail (the kernel
// answers ENOSYS), which is the fail-closed behaviour.
func (s *Supervisor) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.tracer != nil {
		s.tracer.close()
	}
	var err1 error
	if s.listener >= 0 {
		err1 = unix.Close(s.listener)
	}
	err2 := unix.Close(s.wake)
	s.sandbox.close()
	return errors.Join(err1, err2)
}

// testHookChecked, when set (by tests only), runs between an exec's check
// and its guard, on the receive loop's goroutine.
var testHookChecked func(*Supervisor, *Verdict)

// testHookNoAttach, when set (by tests only), says which execs guard
// treats as if the tracer's attach had failed (Yama, a tracer outside the
// sandbox: nothing inside it may call ptrace).
var testHookNoAttach func(*Verdict) bool

// handle decides one notification and answers it.
func (s *Supervisor) handle(n *seccomp.Notif) {
	if c := s.creates[createKey{n.Data.Arch, n.Data.Nr}]; c != nil {
		s.handleCreate(n, c)
		return
	}
	if call, ok := s.connects[createKey{n.Data.Arch, n.Data.Nr}]; ok {
		s.handleConnect(n, call)
		return
	}
	start := time.Now()
	d := Verdict{Time: start, Pid: int(n.Pid), root: -1}
	resp := seccomp.NotifResp{ID: n.ID}
	errno := s.decide(n, &d)
	if errno == 0 && testHookChecked != nil {
		testHookChecked(s, &d)
	}
	if errno == 0 {
		errno = s.guard(n, &d)
	}
	if errno == unix.EPERM && d.root >= 0 {
		// A refusal names its reason: a caller whose root is not the
		// sandbox's is refused as such, not by a rule that read its
		// paths in the wrong root. Refusals are rare; the cost is fine.
		if e := s.proveRoot(int(n.Pid), &d); e != 0 {
			errno = e
		}
	}
	if d.root >= 0 {
		s.sandbox.release(d.root)
		d.root = -1
	}
	if errno != 0 {
		d.Errno = errno
		resp.Error = -int32(errno)
	} else {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	report := s.opts.OnDecision != nil && d.Exec.Argv != nil
	d.Latency = time.Since(start)
	if report && !d.held {
		// The callback reads the caller in /proc (the audit log's ppid and
		// cwd): while its exec waits, pid is the caller.
		s.opts.OnDecision(&d)
	}
	if err := seccomp.NotifSend(s.listener, &resp); err != nil && !errors.Is(err, unix.ENOENT) {
		s.log.Error("answering exec notification", "pid", d.Pid, "err", err)
	}
	if report && d.held {
		// Answered first: the audit line and the callbacks are off the
		// caller's wait. pid is still the caller's process: a task this
		// thread traces is reaped by this thread alone (a traced task's
		// exit is not auto-reaped, and the next wait4 is in the next
		// service, after this call), and a leader's pid stays with its
		// thread group through the exec (a sibling that execs takes it
		// over), so the pid cannot be reused before the callback
		// returns. Nothing is lost at exit: the callback runs on this
		// goroutine before the next notification.
		s.opts.OnDecision(&d)
	}
}

// decide reads what a notified exec asks for, fills d and returns the errno
// to answer, or 0 to let the exec continue. The decision itself is the
// judge's, as it is at the exec event (see judge).
func (s *Supervisor) decide(n *seccomp.Notif, d *Verdict) syscall.Errno {
	if n.Pid == 0 {
		// The caller is not visible in our pid namespace: we cannot read
		// its memory, so we cannot decide. Refuse.
		d.Result = policy.Result{Decision: policy.Deny}
		return unix.EPERM
	}
	pid := int(n.Pid)
	call, err := classify(&n.Data)
	if err != nil {
		s.log.Error("unexpected notification", "pid", pid, "err", err)
		d.Result = policy.Result{Decision: policy.Deny}
		return unix.EPERM
	}
	d.Syscall, d.Arch = call.name, call.arch
	d.pathAddr, d.argvAddr, d.ptrSize, d.dirfd = call.path, call.argv, call.ptrSize, call.dirfd
	path, argv, err := s.mem.readExec(pid, call.path, call.argv, call.ptrSize)
	if err != nil {
		return s.readErrno(pid, err)
	}
	// The caller's memory was read by pid: make sure pid still is the task
	// that made this call (it could have died and the pid been reused).
	if err := seccomp.NotifIDValid(s.listener, n.ID); err != nil {
		return unix.ENOENT
	}
	if argv == nil {
		argv = []string{}
	}
	d.Exec = policy.Exec{Argv: argv, Path: path}
	// The caller's paths are resolved in its root, which must be the
	// sandbox's. Proving it (openRoot: a statx of /proc/PID/root, which
	// makes the kernel build that pid's proc entries) is a quarter of the
	// decision's latency. With a tracer, an exec that is allowed is
	// attached to and decided again at its exec event, where the proof is
	// made before anything else (tracer.decideImage), and its process is
	// killed if it fails, before an instruction of the new image runs;
	// the check resolves its paths in the sandbox's root cordon holds. An
	// exec that is let run without that event (strict mode, or no attach)
	// is proven in guard, one asked about is proven before the person is
	// asked, and a refusal is proven for its reason (handle). Answers
	// that are errors the kernel would give (ENOENT for a shell probing
	// its PATH) run nothing and go unproven. Nothing in the sandbox can
	// change its root or namespace (see sandboxView), so all this is
	// defence in depth.
	root, proven := -1, false
	if s.tracer != nil {
		root = s.sandbox.heldRoot()
	}
	if root < 0 {
		r, err := s.sandbox.openRoot(pid)
		if err != nil {
			return rootErrno(err, d)
		}
		root, proven = r, true
	}
	d.root, d.rootProven = root, proven // released by handle, after guard
	var tgt target
	var errno syscall.Errno
	if path == "" && call.flags&unix.AT_EMPTY_PATH != 0 {
		tgt, errno = openTargetFD(pid, call.dirfd)
	} else {
		d.called, errno = absPath(pid, root, call.dirfd, path)
		if errno == unix.EPERM {
			d.Reason = reasonNoDir
		} else if errno == 0 {
			tgt, errno = s.judge.open(pid, root, d.called, strings.HasPrefix(path, "/"))
		}
	}
	if errno == unix.EPERM {
		d.Result = policy.Result{Decision: policy.Deny}
		if d.Reason == "" {
			d.Reason = reasonUnidentified
		}
	}
	if errno != 0 {
		return errno
	}
	defer func() {
		if tgt.fd >= 0 {
			unix.Close(tgt.fd)
		}
	}()
	errno = s.judge.decide(pid, root, &tgt, kernelFilename(call, path), d)
	if d.skipped && (errno == unix.EPERM || errno == 0 && d.Result.Decision != policy.Allow) {
		// Only an allow is left to the exec event: a refusal names its
		// rule and the file's name, and a person asked sees the
		// interpreters, from the file as it is now.
		j := s.judge
		j.heads, j.names = nil, nil
		switch {
		case tgt.fd < 0:
			// Remembered, not opened (judge.open): open it now, its
			// name rendered, and remember what it is.
			if tgt, errno = openTarget(pid, root, d.called, nil); errno != 0 {
				d.Result, d.Reason = policy.Result{}, "" // as if it were never decided
				if errno == unix.EPERM {
					d.Result = policy.Result{Decision: policy.Deny}
					d.Reason = reasonUnidentified
				}
				return errno
			}
			if tgt.path != "" {
				s.judge.names.put(d.called, tgt.id, tgt.path, tgt.writable)
			}
		case tgt.named:
			tgt.name(s.judge.names, d.called) // and remembered as it is now
		}
		errno = j.decide(pid, root, &tgt, kernelFilename(call, path), d)
	}
	d.remembered = tgt.fd < 0
	if errno != 0 {
		return errno
	}
	switch d.Result.Decision {
	case policy.Allow:
		return 0
	case policy.Ask:
		if s.opts.Ask == nil {
			break
		}
		// Nobody is asked about an exec from a caller that would be
		// killed at its exec event anyway.
		if errno := s.proveRoot(pid, d); errno != 0 {
			return errno
		}
		if s.opts.Ask(d) {
			return 0
		}
	}
	return unix.EPERM
}

// rootErrno is decide's answer when the caller's root could not be proven
// the sandbox's (sandboxView.openRoot's error err): ESRCH when the caller
// is gone, else a refusal saying why.
func rootErrno(err error, d *Verdict) syscall.Errno {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return unix.ESRCH // the caller is gone; the answer goes nowhere
	}
	d.Result = policy.Result{Decision: policy.Deny}
	d.Reason = reasonForeign
	if !errors.Is(err, errForeign) {
		d.Reason = reasonUnidentified + ": " + err.Error()
	}
	return unix.EPERM
}

// proveRoot proves the caller's root the sandbox's when decide resolved
// its paths in the held root without a proof (see decide); d.root then
// stays what it is: openRoot's answer is the same held root.
func (s *Supervisor) proveRoot(pid int, d *Verdict) syscall.Errno {
	if d.rootProven {
		return 0
	}
	fd, err := s.sandbox.openRoot(pid)
	if err != nil {
		return rootErrno(err, d)
	}
	s.sandbox.release(fd)
	d.rootProven = true
	return 0
}

// guard makes an allowed exec safe to continue: the caller is attached for
// verification at the exec event or, where ptrace cannot attach (strict
// mode, Yama, a tracer outside cordon), must be a caller that provably
// cannot change what it asked for (see raceable and immutable). It returns
// the errno to refuse with, or 0.
//
// Every allowed exec is verified when ptrace can attach: a proof that a
// caller cannot be raced must enumerate every process that might share its
// memory (a vfork ancestor can be woken out of sight of the caller's
// parents), which on this path costs more than the verification itself.
func (s *Supervisor) guard(n *seccomp.Notif, d *Verdict) syscall.Errno {
	pid := int(n.Pid)
	if s.tracer != nil {
		var err error
		if testHookNoAttach != nil && testHookNoAttach(d) {
			err = fmt.Errorf("%w: test hook", errAttach)
		} else {
			err = s.tracer.attach(pid, d)
		}
		if err == nil {
			d.held = s.tracer.embedded && leader(pid)
			return 0
		}
		if s.opts.Verify == VerifyPtrace {
			d.Reason = "cannot verify: " + err.Error()
			return unix.EPERM
		}
		s.log.Debug("ptrace verification not possible: strict mode for this exec", "pid", pid, "err", err)
		if d.skipped {
			// No exec event will check what the skipped reads would have
			// (see notScripts, pathNames): decide again, reading them all.
			if errno := s.recheck(n, d); errno != 0 {
				return errno
			}
		}
	}
	// No exec event will prove the caller's root: prove it now.
	if errno := s.proveRoot(pid, d); errno != 0 {
		return errno
	}
	if len(d.loaded) > 0 {
		// A dynamic loader opens its program after the exec, where only
		// the tracer can follow it (loaderWatch).
		d.Result = policy.Result{Decision: policy.Deny, Rule: &policy.LoaderRule}
		d.Reason = "strict mode: a dynamic loader opens its program after the exec, and ptrace is not available to verify it"
		return unix.EPERM
	}
	why := raceable(pid, s.opts.RootPid, argRanges(d, s.mem.ptrs, d.ptrSize), s.sandbox, d.ptrSize == 4)
	if why == "" && s.immutable(d) {
		if why = binfmtHandled(d.root, d); why == "" {
			return 0
		}
	}
	if why == "" {
		// Its memory cannot change, but what the path leads to could
		// (a writable directory, a symlink there, a memfd).
		why = "what its path leads to could change"
	}
	d.Reason = "strict mode: " + why + ", and ptrace is not available to verify it"
	return unix.EPERM
}

// recheck decides n again into d with every #! head read and every name
// rendered (no notScripts, no pathNames), for an exec the check let through
// on a skipped read that no exec event will verify.
func (s *Supervisor) recheck(n *seccomp.Notif, d *Verdict) syscall.Errno {
	s.sandbox.release(d.root)
	*d = Verdict{Time: d.Time, Pid: d.Pid, root: -1}
	j := s.judge
	s.judge.heads, s.judge.names = nil, nil
	errno := s.decide(n, d)
	s.judge = j
	return errno
}

// leader reports whether tid is its thread group's leader: tgkill with
// signal 0 checks that tid belongs to thread group tid, and sends nothing.
// A thread that is not the leader gives its tid up inside execve
// (de_thread), with nothing for the tracer to reap; its decision is
// reported before it is answered.
func leader(tid int) bool {
	return unix.Tgkill(tid, tid, 0) == nil
}

// immutable reports whether the file an exec names, and the #! interpreters
// it runs through, can only be what was checked when the kernel opens them:
// see walkReadOnly. Descriptor-based execs (fexecve, execveat with a
// directory fd) never qualify: a memfd's content can change.
func (s *Supervisor) immutable(d *Verdict) bool {
	if d.Syscall != "execve" || d.called == "" || d.root < 0 {
		return false
	}
	if !s.immutables.immutable(d.root, d.called) {
		return false
	}
	for _, interp := range d.Interpreter {
		if !s.immutables.immutable(d.root, interp) {
			return false
		}
	}
	return true
}

// readErrno maps a failure to read the caller's memory to what the kernel
// would have answered.
func (s *Supervisor) readErrno(pid int, err error) syscall.Errno {
	switch {
	case errors.Is(err, errTooBig):
		return unix.E2BIG
	case errors.Is(err, errNameLen):
		return unix.ENAMETOOLONG
	case errors.Is(err, errFault):
		return unix.EFAULT
	case errors.Is(err, unix.ESRCH):
		return unix.ESRCH // the caller is gone; the answer goes nowhere
	}
	s.log.Error("reading exec arguments", "pid", pid, "err", err)
	return unix.EPERM
}

// execCall is a decoded execve/execveat.
type execCall struct {
	name, arch string
	ptrSize    int
	dirfd      int32
	path, argv uint64
	flags      uint64
}

func classify(sd *seccomp.Data) (execCall, error) {
	c := execCall{dirfd: unix.AT_FDCWD}
	var execveat bool
	switch {
	case sd.Arch == unix.AUDIT_ARCH_X86_64 && sd.Nr&x32Bit == 0:
		c.arch, c.ptrSize = "x86_64", 8
		execveat = sd.Nr == nrExecveatAMD64
		if !execveat && sd.Nr != nrExecveAMD64 {
			return c, fmt.Errorf("syscall %d on x86_64", sd.Nr)
		}
	case sd.Arch == unix.AUDIT_ARCH_X86_64:
		c.arch, c.ptrSize = "x32", 4
		execveat = sd.Nr == nrExecveatX32
		if !execveat && sd.Nr != nrExecveX32 {
			return c, fmt.Errorf("syscall %#x on x32", sd.Nr)
		}
	case sd.Arch == unix.AUDIT_ARCH_I386:
		c.arch, c.ptrSize = "i386", 4
		execveat = sd.Nr == nrExecveat386
		if !execveat && sd.Nr != nrExecve386 {
			return c, fmt.Errorf("syscall %d on i386", sd.Nr)
		}
	default:
		return c, fmt.Errorf("syscall %d on unknown arch %#x", sd.Nr, sd.Arch)
	}
	a := sd.Args
	if c.arch == "i386" {
		// The kernel reads an i386 call's arguments as 32-bit registers
		// (SC_IA32_REGS_TO_ARGS). An x32 call's come in full 64-bit
		// registers, pointers included (its compat wrappers cast them
		// without truncating): the path and argv are read where the kernel
		// reads them, and only argv's entries are 4 bytes.
		for i := range a {
			a[i] &= 0xffffffff
		}
	}
	if execveat {
		c.name = "execveat"
		c.dirfd = int32(uint32(a[0]))
		// flags is an int to the kernel on every ABI: its upper half is
		// never read.
		c.path, c.argv, c.flags = a[1], a[2], a[4]&0xffffffff
	} else {
		c.name = "execve"
		c.path, c.argv = a[0], a[1]
	}
	return c, nil
}
