package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// Verify selects how an allowed exec is protected against its argv or path
// being changed between the supervisor's check and the kernel's own read
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE lets the kernel read them again).
type Verify string

const (
	// VerifyAuto verifies every allowed exec with ptrace, and uses strict
	// mode for a caller ptrace cannot attach to (Yama, another tracer).
	VerifyAuto Verify = "auto"
	// VerifyPtrace attaches to every allowed caller before continuing it
	// and decides again at PTRACE_EVENT_EXEC; a caller that cannot be
	// attached to is refused, even one strict mode would let run.
	VerifyPtrace Verify = "ptrace"
	// VerifyStrict never uses ptrace: it continues only callers that cannot
	// be raced (one thread, no other task sharing their memory, argv in
	// private memory) and refuses the rest.
	VerifyStrict Verify = "strict"
)

// ParseVerify parses the --verify flag's value.
func ParseVerify(s string) (Verify, error) {
	switch Verify(s) {
	case VerifyAuto, VerifyPtrace, VerifyStrict:
		return Verify(s), nil
	}
	return "", fmt.Errorf("unknown verification mode %q (want auto, ptrace or strict)", s)
}

// ReasonChanged is Verdict.Reason for an exec killed at PTRACE_EVENT_EXEC
// because what the kernel ran is not what was checked.
const ReasonChanged = "changed after check"

// ReasonRedecided is Verdict.Reason for an exec whose arguments, file, name
// or loader's program changed between the check and the kernel's exec,
// decided again at PTRACE_EVENT_EXEC as it ran, and allowed: the check's
// record shows what it decided, this one what runs.
const ReasonRedecided = "changed after check, allowed as run"

const (
	// execEventWait is how long an attached caller may go without reaching
	// PTRACE_EVENT_EXEC before the tracer interrupts it to find out whether
	// the exec failed (a failed exec returns to the caller with no event).
	execEventWait = 50 * time.Millisecond
	// tracerTick bounds how long a stop can go unnoticed if a SIGCHLD was
	// coalesced away.
	tracerTick = 20 * time.Millisecond
)

// tracer verifies allowed execs with ptrace from one dedicated OS thread:
// every ptrace request for a tracee must come from the thread that attached.
//
// Protocol, per exec the policy allowed:
//  1. the supervisor asks the tracer to PTRACE_SEIZE the calling thread
//     (PTRACE_O_TRACEEXEC, PTRACE_O_EXITKILL) and waits for the answer;
//  2. the supervisor answers the notification with CONTINUE;
//  3. at PTRACE_EVENT_EXEC — the new image is mapped, not one instruction
//     of it has run — the tracer reads the true argv (the image's stack)
//     and binary (/proc/PID/exe), decides again, and detaches (allow) or
//     SIGKILLs (deny, reported as "changed after check").
//
// A failed exec gives no event: the caller is back in user space, still
// attached. After execEventWait the tracer interrupts it; if it is no
// longer inside execve, it is detached. Signals that arrive while attached
// are re-injected. With PTRACE_O_EXITKILL, a tracee is killed if cordon
// dies while attached: fail closed.
type tracer struct {
	judge judge // its files view belongs to the tracer thread
	log   *slog.Logger
	// report receives kills at the exec event. It is called on the tracer
	// thread.
	report func(*Verdict)
	// forgetPath drops what the check remembers of a path called (see
	// pathNames, Verdict.remembered), when the exec event found the file
	// it leads to changed; nil when the check remembers nothing.
	forgetPath func(called string)
	// exec receives every allowed exec once it has happened
	// (Options.OnExec), on the tracer thread.
	exec func(*Verdict)

	reqs    chan attachReq
	follows chan followReq
	stop    chan struct{}
	done    chan struct{}

	// runs takes the supervisor's receive loop onto the tracer's thread
	// (see embed).
	runs chan func()
	// sigchld receives SIGCHLD for the select loop; it is stopped while an
	// embedded receive loop runs (see embed).
	sigchld chan os.Signal
	// embedded is set while the receive loop runs on the tracer's thread:
	// attach then seizes directly, with no hand-off. Set and read on the
	// tracer's thread only; running is the same fact for close, which runs
	// elsewhere.
	embedded bool
	running  atomic.Bool
	lastTick time.Time // owned by the tracer thread

	// follow is ptrace-only supervision: every task of the sandbox is
	// traced from the start (forks, vforks and clones followed), and every
	// exec is decided at its exec event, since no notification came first.
	follow bool
	ask    func(*Verdict) bool

	// Owned by the tracer thread.
	tracees map[int]*tracee
	mem     memReader // the new images' argv (decideImage)
}

type attachReq struct {
	tid   int
	d     Verdict
	reply chan error
}

type followReq struct {
	pid   int
	reply chan error
}

type tracee struct {
	tid int     // the thread that called exec
	d   Verdict // the check; its root field is never used (see root)
	// root, when hasRoot, is a descriptor of the caller's root directory
	// as proven at the check (sandboxView.openRoot's slow proof, with no
	// held root to resolve in unproven: see Supervisor.decide), held for
	// the exec event: the task is the same one (attached since the check),
	// and it cannot have changed its root or mount namespace since, having
	// run no instruction of its own in between (an exec that fails returns
	// to it still attached, and its next exec is checked again, which
	// replaces root). The exec event then needs no second proof. Without
	// one, the event proves the caller's root before it decides anything.
	root        int
	hasRoot     bool
	deadline    time.Time
	interrupted bool
	killed      bool
	// watch, when set, follows the dynamic loader the exec ran until it
	// has opened the programs decided (see loaderWatch).
	watch *loaderWatch
}

// errAttach wraps why ptrace could not attach to a caller.
var errAttach = errors.New("cannot attach with ptrace")

func newTracer(j judge, log *slog.Logger, report func(*Verdict)) *tracer {
	t := &tracer{
		judge:   j,
		log:     log,
		report:  report,
		reqs:    make(chan attachReq),
		follows: make(chan followReq),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		tracees: map[int]*tracee{},
		runs:    make(chan func()),
		sigchld: make(chan os.Signal, 1),
	}
	go t.loop()
	return t
}

// embed runs serve, the supervisor's receive loop, on the tracer's thread
// until it returns, and returns its error; ran is false when the tracer
// has stopped and serve must run elsewhere.
//
// Every allowed exec is seized before it is answered, and ptrace requests
// must come from the thread that attached: with the receive loop on another
// goroutine, each exec paid two hand-offs to a locked thread (futex
// wake-ups, scheduler spinning) inside its decision latency. On one thread
// the seize is a plain call.
//
// The tracees' stops are then noticed without os/signal: the kernel sends
// the SIGCHLD of a tracee's stop to its tracer thread whenever that thread
// does not block it and is asleep or running (complete_signal prefers the
// thread the signal is for), so it interrupts the loop's ppoll with EINTR,
// and the loop collects the event at once (signal.Notify would add two
// goroutine wake-ups per exec to hand the same news over). A stop that
// lands between the loop's last wait4 and its ppoll is delivered to this
// thread outside ppoll and wakes nothing: the loop polls with a short
// timeout (pendingTick) while a tracee is on record, which bounds that
// case's delay, and never waits on a signal alone.
func (t *tracer) embed(serve func(embedded bool) error) (ran bool, err error) {
	res := make(chan error, 1)
	run := func() {
		signal.Stop(t.sigchld)
		t.embedded = true
		t.running.Store(true)
		err := serve(true)
		// Cleared before Run can return: close waits for the thread from
		// then on.
		t.embedded = false
		t.running.Store(false)
		signal.Notify(t.sigchld, unix.SIGCHLD)
		res <- err
	}
	select {
	case t.runs <- run:
	case <-t.done:
		return false, nil
	}
	return true, <-res
}

// pendingTick is how long an embedded receive loop sleeps at most while a
// tracee is on record (see embed).
const pendingTick = time.Millisecond

// service does, for an embedded receive loop before each ppoll, what the
// select loop does between requests: it collects the tracees' events, and
// the tick's work when it is due. It returns how long the loop may sleep.
// On the tracer thread only.
func (t *tracer) service() time.Duration {
	if now := time.Now(); now.Sub(t.lastTick) >= tracerTick {
		// Drained even with no tracee on record, as the select loop does.
		t.lastTick = now
		t.drain()
		t.expire()
	} else if len(t.tracees) > 0 {
		t.drain()
	}
	if len(t.tracees) > 0 {
		return pendingTick
	}
	return tracerTick
}

// attach seizes tid before its exec is continued. It returns errAttach
// (wrapped) when ptrace is not possible for this caller.
func (t *tracer) attach(tid int, d *Verdict) error {
	if t.embedded {
		// Called from the receive loop, on this very thread (embed). No
		// drain here: the new tracee has no event before its answer, and
		// the loop collects everyone else's before its next ppoll
		// (service), so a wait4 now would only lengthen the decision.
		return t.seize(attachReq{tid: tid, d: *d})
	}
	r := attachReq{tid: tid, d: *d, reply: make(chan error, 1)}
	select {
	case t.reqs <- r:
	case <-t.done:
		return fmt.Errorf("%w: tracer stopped", errAttach)
	}
	return <-r.reply
}

// close detaches from every tracee and stops the tracer thread.
func (t *tracer) close() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	if t.running.Load() {
		// The receive loop still holds the thread, so Run has not
		// returned: a receive that never returns (WedgeAfter), after which
		// the caller gave up waiting. The thread stays parked, as the loop's
		// goroutine would; waiting for it would never end.
		return
	}
	<-t.done
}

func (t *tracer) loop() {
	// Never unlocked: the thread is discarded when the goroutine ends,
	// which also ends every ptrace relationship it holds.
	runtime.LockOSThread()
	defer close(t.done)
	// A tracee's stop or death is signalled to the tracer with SIGCHLD.
	// Signals coalesce, so every wake-up drains all pending events, and a
	// tick covers a wake-up lost to coalescing.
	signal.Notify(t.sigchld, unix.SIGCHLD)
	defer signal.Stop(t.sigchld)
	tick := time.NewTicker(tracerTick)
	defer tick.Stop()
	for {
		select {
		case run := <-t.runs:
			run()
		case r := <-t.reqs:
			r.reply <- t.seize(r)
			t.drain()
		case r := <-t.follows:
			r.reply <- t.seizeAll(r.pid)
			t.drain()
		case <-t.sigchld:
			t.drain()
		case <-tick.C:
			// Drained even with no tracee on record: a stop nobody
			// collects would hold its process forever.
			t.drain()
			if !t.follow {
				t.expire()
			}
		case <-t.stop:
			for tid, tr := range t.tracees {
				_ = unix.PtraceDetach(tid)
				tr.release()
			}
			return
		}
	}
}

func (t *tracer) seize(r attachReq) error {
	if tr, ok := t.tracees[r.tid]; ok {
		if tracedByUs(r.tid) {
			// The exec was interrupted by a signal and notified again, or
			// failed and was retried: we are still attached from the first
			// time. Judge the new attempt.
			tr.release()
			tr.d, tr.deadline, tr.interrupted = r.d, time.Now().Add(execEventWait), false
			tr.hold(&r.d)
			return nil
		}
		// An entry for a task that is gone, and tid another task now (a
		// recycled id): never trusted, seized anew.
		t.forget(r.tid)
	}
	opts := unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL
	// The seize can only wait forever behind a task this thread must reap
	// (see watchSeize): with no tracee on record there is none, and the
	// watchdog (a timer, a pidfd) is left out of the common sequential
	// case.
	var wd *seizeWatchdog
	if len(t.tracees) > 0 {
		wd = watchSeize(r.tid)
	}
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(r.tid), 0, uintptr(opts), 0, 0)
	if wd != nil && wd.stop() {
		if e == 0 {
			// Attached to a process now dying: its exit is ours to reap.
			t.tracees[r.tid] = &tracee{tid: r.tid, killed: true}
		}
		return fmt.Errorf("%w: ptrace(PTRACE_SEIZE, %d) blocked behind a sibling thread's exec for %v: the process was killed",
			errAttach, r.tid, seizeTimeout)
	}
	if e != 0 {
		return fmt.Errorf("%w: ptrace(PTRACE_SEIZE, %d): %v", errAttach, r.tid, e)
	}
	tr := &tracee{tid: r.tid, d: r.d, deadline: time.Now().Add(execEventWait)}
	tr.hold(&r.d)
	t.tracees[r.tid] = tr
	return nil
}

// hold keeps a duplicate of the caller's root when the check proved it
// (the checker closes its own), for the exec event; without one the event
// proves the root itself.
func (tr *tracee) hold(d *Verdict) {
	root := d.root
	tr.d.root = -1
	if root < 0 || !d.rootProven {
		return
	}
	if fd, err := unix.FcntlInt(uintptr(root), unix.F_DUPFD_CLOEXEC, 0); err == nil {
		tr.root, tr.hasRoot = fd, true
	}
}

// release closes the root tr holds, if any.
func (tr *tracee) release() {
	if tr.hasRoot {
		unix.Close(tr.root)
		tr.root, tr.hasRoot = -1, false
	}
}

// forget drops tid's entry and what it holds.
func (t *tracer) forget(tid int) {
	if tr := t.tracees[tid]; tr != nil {
		tr.release()
		delete(t.tracees, tid)
	}
}

// seizeTimeout bounds a PTRACE_SEIZE (see watchSeize).
const seizeTimeout = time.Second

// seizeWatchdog kills a process whose PTRACE_SEIZE does not return.
type seizeWatchdog struct {
	timer *time.Timer
	mu    sync.Mutex
	fd    int  // guarded by mu: a pidfd of the caller's process, or -1
	fired bool // guarded by mu
}

// watchSeize guards a PTRACE_SEIZE of tid. ptrace_attach takes the tracee's
// cred_guard_mutex, which a sibling thread's exec holds while it waits for
// the process's other threads to be reaped; a sibling this tracer is
// attached to (after an exec of its own failed) is reaped only by this
// thread, in drain, which the blocked seize keeps from running: a deadlock
// nothing in the kernel ends, and every later exec in the sandbox would wait
// behind it. After seizeTimeout the whole process is killed: its exec gives
// up, the mutex is released, the seize returns, and the caller is refused.
func watchSeize(tid int) *seizeWatchdog {
	w := &seizeWatchdog{fd: -1}
	// A pidfd names a process, so tid must be its leader's; the caller
	// usually is (EINVAL otherwise: find the leader in its status).
	if fd, err := unix.PidfdOpen(tid, 0); err == nil {
		w.fd = fd
	} else if st, err := proc.ReadStatus(tid); err == nil && st.Tgid > 0 {
		if fd, err := unix.PidfdOpen(st.Tgid, 0); err == nil {
			w.fd = fd
		}
	}
	w.timer = time.AfterFunc(seizeTimeout, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.fd >= 0 {
			w.fired = true
			_ = unix.PidfdSendSignal(w.fd, unix.SIGKILL, nil, 0)
		}
	})
	return w
}

// stop ends the watch and reports whether it had to kill.
func (w *seizeWatchdog) stop() bool {
	w.timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
	return w.fired
}

// tracedByUs reports whether task tid is traced by the calling thread, the
// tracer's (TracerPid is the tracing thread's id): an entry in the table
// names a task only while this holds.
func tracedByUs(tid int) bool {
	st, err := proc.ReadStatus(tid)
	return err == nil && st.TracerPid == unix.Gettid()
}

// drain handles every pending event of this thread's tracees. __WNOTHREAD
// keeps it to tracees attached by this thread: cordon's other children
// (bubblewrap) are waited for elsewhere.
func (t *tracer) drain() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL|unix.WNOTHREAD, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		t.event(pid, ws)
	}
}

func (t *tracer) event(pid int, ws unix.WaitStatus) {
	if t.follow {
		t.followEvent(pid, ws)
		return
	}
	if tr := t.tracees[pid]; tr != nil && tr.watch != nil && ws.Stopped() {
		t.watchStop(pid, tr, ws)
		return
	}
	switch {
	case ws.Exited() || ws.Signaled():
		t.forget(pid)
	case ws.Stopped() && ws.StopSignal() == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_EXEC:
		// The event message is the exec'ing thread's former tid: a thread
		// that is not the leader takes the leader's pid, and the leader is
		// gone (de_thread; its death is never reported to a tracer). The
		// exec is decided against the exec'ing thread's own check, and a
		// leader's entry left from an exec of its own that failed is
		// dropped with it.
		tr := t.tracees[pid]
		if old, err := unix.PtraceGetEventMsg(pid); err == nil && int(old) != pid {
			tr = t.tracees[int(old)]
			delete(t.tracees, int(old)) // moved to pid below
			t.forget(pid)
		}
		if tr == nil {
			// Only callers this tracer attached to report exec events,
			// so this one was attached, and its check cannot be found:
			// nothing vouches for what it runs. Fail closed.
			t.unmatched(pid)
			return
		}
		tr.tid = pid
		t.tracees[pid] = tr
		t.verify(pid, tr)
	case ws.Stopped() && ws.TrapCause() == unix.PTRACE_EVENT_STOP:
		// Our interrupt (or a group stop). Still inside execve: let it
		// go on. Back in user space: the exec failed; nothing ran that
		// was not checked, so detach.
		tr := t.tracees[pid]
		if tr == nil {
			tr = &tracee{tid: pid}
			t.tracees[pid] = tr
		}
		if inExec(pid, tr.d.Arch) {
			tr.deadline, tr.interrupted = time.Now().Add(execEventWait), false
			_ = unix.PtraceCont(pid, 0)
			return
		}
		t.detach(tr)
	case ws.Stopped():
		// Signal-delivery-stop: give the signal back to the tracee.
		_ = unix.PtraceCont(pid, int(ws.StopSignal()))
	}
}

// detach lets tr go. A tracee only leaves the table once detached or
// reaped: one that was killed meanwhile can no longer be detached (it is not
// stopped), and its exit must then be waited for here, or its real parent
// would never see it die.
func (t *tracer) detach(tr *tracee) {
	if err := unix.PtraceDetach(tr.tid); err == nil {
		t.forget(tr.tid)
		return
	}
	tr.killed = true // dying: drain reaps its exit
}

// expire interrupts tracees whose exec event is overdue.
func (t *tracer) expire() {
	now := time.Now()
	for tid, tr := range t.tracees {
		if tr.interrupted || tr.killed || tr.watch != nil || now.Before(tr.deadline) {
			continue
		}
		tr.interrupted = true
		// ESRCH here is no reason to forget tid: a thread that is not the
		// leader takes the leader's pid inside execve (a large address
		// space can take longer than execEventWait to tear down), and its
		// exec event then names the old tid in its message. A tracee
		// leaves the table only at its exit or its exec event.
		_ = unix.PtraceInterrupt(tid)
	}
}

// unmatched kills pid, stopped at an exec event that matches no check on
// record, and reports it.
func (t *tracer) unmatched(pid int) {
	start := time.Now()
	_, d := t.decideImage(pid, &Verdict{}, -1)
	_ = unix.Kill(pid, unix.SIGKILL)
	t.tracees[pid] = &tracee{tid: pid, killed: true} // its death is consumed by drain
	t.log.Error("exec event with no check on record: killed", "pid", pid)
	if d.Exec.Argv == nil {
		return
	}
	d.Time, d.Pid, d.Errno, d.Latency = start, pid, unix.EPERM, time.Since(start)
	d.Result = policy.Result{Decision: policy.Deny}
	d.Reason = "built-in: an exec cordon attached to could not be matched to its check"
	if t.report != nil {
		t.report(&d)
	}
}

// testHookEvent, when set (by tests only), runs at an exec event the
// tracer verifies, before anything of the new image is read: the moment a
// workload racing the event has, with pid stopped.
var testHookEvent func(pid int)

// verify decides the new image of pid again, from what the kernel really
// loaded, before any of it runs.
func (t *tracer) verify(pid int, tr *tracee) {
	if testHookEvent != nil {
		testHookEvent(pid)
	}
	start := time.Now()
	held := -1
	if tr.hasRoot {
		held = tr.root
	}
	ok, d := t.decideImage(pid, &tr.d, held)
	if ok {
		if !t.follow && t.report != nil && (!equalArgv(noLoneEmpty(d.Exec.Argv), noLoneEmpty(tr.d.Exec.Argv)) ||
			d.Exec.File != tr.d.Exec.File || d.Exec.Resolved != tr.d.Exec.Resolved || !sameLoaded(d.loaded, tr.d.loaded)) {
			// Decided again with other arguments than the check read
			// (another thread rewrote them in between), or another file
			// or name than it decided (a remembered file replaced, see
			// decideImage; a path switched to another name of the same
			// file), or a loader's program resolved to another file (its
			// relative path from a working directory another thread
			// changed), and allowed: the record of the check does not
			// say what runs, this one does. Reported while pid is still
			// stopped, so it is the caller's.
			r := d
			r.Time, r.Pid, r.Syscall, r.Arch = start, pid, tr.d.Syscall, tr.d.Arch
			r.Reason, r.Latency = ReasonRedecided, time.Since(start)
			t.log.Debug("exec changed after check: allowed as run", "pid", pid, "checked", FormatArgv(tr.d.Exec.Argv), "ran", FormatArgv(d.Exec.Argv))
			t.report(&r)
		}
		if t.exec != nil && d.Exec.Argv != nil {
			d.Time, d.Pid = start, pid
			t.exec(&d)
		}
		if len(d.loaded) > 0 {
			// A loader opens its program after this event: follow it
			// until it has (see loaderWatch), or refuse.
			d.Time, d.Pid, d.Syscall, d.Arch = start, pid, tr.d.Syscall, tr.d.Arch
			if !t.watchLoader(pid, tr, d) {
				_ = unix.Kill(pid, unix.SIGKILL)
				tr.killed = true
			}
			return
		}
		t.detach(tr)
		return
	}
	// What runs is not what was allowed: it must not execute one
	// instruction. SIGKILL wakes the tracee out of its ptrace stop and
	// kills it; its death is reported to us and consumed by drain.
	_ = unix.Kill(pid, unix.SIGKILL)
	tr.killed = true
	if d.Exec.Argv == nil {
		return // it was already going away: its /proc entries are gone
	}
	d.Time, d.Pid = start, pid
	d.Syscall, d.Arch = tr.d.Syscall, tr.d.Arch
	d.Errno = unix.EPERM
	if d.Reason == "" {
		d.Reason = ReasonChanged
	}
	d.Latency = time.Since(start)
	t.log.Debug("exec changed after check: killed", "pid", pid, "checked", FormatArgv(tr.d.Exec.Argv), "ran", FormatArgv(d.Exec.Argv))
	if t.report != nil {
		t.report(&d)
	}
}

// decideImage decides pid's new image, stopped at PTRACE_EVENT_EXEC, through
// the judge, as the exec the caller made: the kernel's argv (from the new
// stack, memReader.readImageArgv), the file mapped (/proc/PID/exe) and, for a #!
// script, the script. checked is the decision made at the notification, or
// zero in ptrace-only supervision. The image must be the file checked (a
// script's innermost interpreter), and the kernel's argv what was checked
// (for a script, its interpreter form); an ask answered yes at the check
// holds for the same argv only. It returns whether the image may run, and
// the decision; a nil Argv in it means pid vanished (killed by someone else
// while stopped): denied, with nothing to report.
func (t *tracer) decideImage(pid int, checked *Verdict, heldRoot int) (bool, Verdict) {
	dir := "/proc/" + strconv.Itoa(pid)
	d := Verdict{root: -1}
	deny := policy.Result{Decision: policy.Deny}
	kargv, err := t.mem.imageArgv(pid)
	if err != nil {
		t.log.Debug("exec event: the image's argv unreadable", "pid", pid, "err", err)
		return false, d
	}
	exeFD, err := unix.Open(dir+"/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, d
	}
	img, errno := statTarget(pid, exeFD)
	if errno != 0 {
		return false, d
	}
	defer unix.Close(img.fd)
	img.mapped = true
	d.Exec = policy.Exec{Argv: kargv, Path: img.path}
	d.Result = deny
	// The new image runs in its caller's namespaces: they must still be
	// the sandbox's (nothing there can change them; check anyway, since
	// every path below is read in that root).
	root := heldRoot // proven at the check for this very task (see tracee.root)
	if root < 0 {
		r, err := t.judge.files.sandbox.openRoot(pid)
		if err != nil {
			d.Reason = reasonForeign
			return false, d
		}
		defer t.judge.files.sandbox.release(r)
		root = r
	}
	if checked.remembered && !t.unchanged(checked, &img, kargv) {
		// The check decided the file the path led to before, without
		// looking at what it leads to now (judge.open), and something
		// differs: the file (the host replaced or rewrote it, or another
		// sandbox did where this one cannot write; a #! script now,
		// whose interpreter may be the very file remembered), its name,
		// or the argv. The check it skipped is made now, from the path
		// opened, and stands in for it below; the next check opens the
		// path too.
		if t.forgetPath != nil {
			t.forgetPath(checked.called)
		}
		fresh, errno := t.recheck(pid, root, checked)
		if errno != 0 {
			d.Reason = fresh.Reason
			return false, d
		}
		checked = &fresh
	}
	if t.unchanged(checked, &img, kargv) {
		// What the kernel runs is what the check decided: the check's
		// decision stands (see unchanged).
		d.Exec = checked.Exec
		d.Exec.Argv, d.Exec.Path = kargv, img.path
		d.Result, d.loaded = checked.Result, checked.loaded
		d.image, d.imageKnown = img.id, true
		return true, d
	}
	if checked.imageKnown && !img.id.Same(checked.image) {
		// Not the file that was checked (or, for a script, its innermost
		// interpreter): the path led elsewhere by the time the kernel
		// opened it. Decided as what it is, and killed whatever that is.
		t.judge.decide(pid, root, &img, img.path, &d)
		return false, d
	}

	// The exec the caller made: a #! script the check saw, one recognised
	// from the kernel's argv (ptrace-only), or the image itself.
	script, at := checked.Exec.Path, -1
	if checked.Expect != nil {
		// The kernel's argv is the interpreter line, the script's name,
		// then the script's own arguments; a different prefix means the
		// path changed after the check.
		at = len(checked.Expect) - max(len(checked.Exec.Argv)-1, 0)
		if at < 1 || len(kargv) < at || !equalArgv(kargv[:at], checked.Expect[:at]) {
			return false, d
		}
	} else if t.follow {
		if i := scriptBehind(pid, root, kargv); i > 0 {
			script, at = kargv[i], i+1
		}
	}
	if at > 0 {
		sd := Verdict{Exec: policy.Exec{Argv: append([]string{argv0(checked.Exec.Argv)}, kargv[at:]...), Path: script}}
		if checked.Expect == nil {
			sd.Exec.Argv[0] = script
		}
		tgt, filename, errno := t.reopen(pid, root, checked, script)
		if errno != 0 {
			return false, d
		}
		defer unix.Close(tgt.fd)
		if errno := t.judge.decide(pid, root, &tgt, filename, &sd); errno != 0 ||
			!equalArgv(sd.Expect, kargv) || !sd.image.Same(img.id) {
			return false, d // not what the kernel ran
		}
		d = sd
	} else if errno := t.judge.decide(pid, root, &img, img.path, &d); errno != 0 {
		return false, d
	}
	want := checked.Exec.Argv
	if checked.Expect != nil {
		want = checked.Expect
	}
	switch d.Result.Decision {
	case policy.Allow:
		return true, d
	case policy.Ask:
		return checked.Result.Decision == policy.Ask && equalArgv(want, kargv), d
	}
	return false, d
}

// recheck makes, at the exec event, the check of checked that the check
// skipped by taking a remembered file (Verdict.remembered): the path
// called (absolute: judge.open remembers no other) opened in the caller's
// root and decided by the judge with every head read, for the argv the
// caller passed. Only an allow stands in for the check: an ask was never
// put to anyone. The errno is nonzero when the path cannot be decided now.
func (t *tracer) recheck(pid, root int, checked *Verdict) (Verdict, syscall.Errno) {
	v := Verdict{Exec: policy.Exec{Argv: checked.Exec.Argv, Path: checked.Exec.Path},
		Syscall: checked.Syscall, Arch: checked.Arch, called: checked.called, root: -1}
	tgt, errno := openTarget(pid, root, checked.called, nil)
	if errno != 0 {
		v.Reason = reasonUnidentified
		return v, errno
	}
	defer unix.Close(tgt.fd)
	if errno := t.judge.decide(pid, root, &tgt, checked.Exec.Path, &v); errno != 0 {
		return v, errno
	}
	if v.Result.Decision == policy.Ask {
		v.Result.Decision = policy.Deny
	}
	return v, 0
}

// unchanged reports whether the image the kernel mapped, with the argv it
// gave it, is provably the exec the check decided and let run, so that the
// check's decision may stand without deciding it again.
//
// The judge's decision is a function of the exec's argv, the path called
// and the file: its identity (device, inode, and for the content rules
// size, mtime and ctime, policy.FileID), its resolved path and whether the
// sandbox can write it, plus what Files answers about other files (the
// PATH's programs, snapshots kept for a TTL in any case) — and, for a #!
// script, the interpreter chain read from the file. Here the check saw no
// #! line (Expect is nil: the file itself is the image, which mapped
// images never have) and the image's full FileID, resolved path and
// writability equal the checked file's, and the kernel's argv is
// byte-equal to the argv checked. The one input that differs is the path
// called: the check saw the caller's, the event would decide with the
// resolved one, and the path called only adds deny and ask rules
// (policy's calledAs), so the check's decision is at least as strict as
// the one the event would reach. The decision was an allow, or an ask
// answered yes for this very argv, which is the rule the full path keeps
// (the argv must equal). The caller's root was proven first (decideImage).
// Anything else — a script, ptrace-only supervision (no check), a file,
// path, writability or argv that differs — is decided again in full, and
// so is a volatile decision (Verdict.volatile): one that read the content
// of a file the sandbox can write, which a shared writable mapping changes
// with the FileID unchanged, or that resolved a loader's program from the
// caller's working directory, which another thread sharing it could move
// until the exec (de_thread) ended that thread.
func (t *tracer) unchanged(checked *Verdict, img *target, kargv []string) bool {
	if t.follow || !checked.imageKnown || checked.Expect != nil || checked.Interpreter != nil || checked.volatile {
		return false
	}
	switch checked.Result.Decision {
	case policy.Allow, policy.Ask:
	default:
		return false
	}
	return img.path != "" && img.id == checked.image &&
		checked.Exec.Known && checked.Exec.File == img.id &&
		img.path == checked.Exec.Resolved && img.writable == checked.Exec.Writable &&
		equalArgv(kargv, checked.Exec.Argv)
}

// reopen opens the #! script an exec ran, for the judge to decide it again
// at the exec event: by the path the check resolved, or through the
// caller's descriptor for fexecve. It returns the script and the name the
// kernel gave its interpreter.
func (t *tracer) reopen(pid, root int, checked *Verdict, script string) (target, string, syscall.Errno) {
	if checked.Expect == nil {
		abs, errno := scriptPath(pid, root, script)
		if errno != 0 {
			return target{fd: -1}, "", errno
		}
		tgt, errno := openTarget(pid, root, abs, nil)
		return tgt, script, errno
	}
	filename := checked.Expect[len(checked.Expect)-max(len(checked.Exec.Argv)-1, 0)-1]
	if checked.called == "" {
		tgt, errno := openTargetFD(pid, checked.dirfd)
		return tgt, filename, errno
	}
	tgt, errno := openTarget(pid, root, checked.called, nil)
	return tgt, filename, errno
}

// inExec reports whether pid is stopped inside execve or execveat (the
// first field of /proc/PID/syscall is the number of the syscall it is in).
func inExec(pid int, arch string) bool {
	b, err := proc.ReadFile("/proc/"+strconv.Itoa(pid)+"/syscall", nil)
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	if arch == "i386" {
		return nr == nrExecve386 || nr == nrExecveat386
	}
	switch nr {
	case nrExecveAMD64, nrExecveatAMD64, nrExecveX32, nrExecveatX32:
		return true
	}
	return false
}

// noLoneEmpty is argv with a lone empty string read as no argument (an
// empty, non-nil argv): the kernel gives an exec with an empty argv that
// one string (Linux 5.18+), and the check reads such an exec's argv as
// empty. The exec event reads the kernel's argv through it
// (memReader.readImageArgv), and compares the check's with it.
func noLoneEmpty(argv []string) []string {
	if len(argv) == 1 && argv[0] == "" {
		return []string{}
	}
	return argv
}

func argv0(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}

func equalArgv(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Ptrace-only supervision (the notify listener could not be had).

const followOptions = unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_EXITKILL

// followAll starts tracing every thread of pid (and, through fork, vfork
// and clone events, everything they start). Call it before pid starts
// anything.
func (t *tracer) followAll(pid int) error {
	r := followReq{pid: pid, reply: make(chan error, 1)}
	select {
	case t.follows <- r:
	case <-t.done:
		return fmt.Errorf("%w: tracer stopped", errAttach)
	}
	return <-r.reply
}

// seizeAll seizes every thread of pid, repeating until no new thread shows
// up: a thread created while we list is either listed next time or was
// created by a thread we already trace (and so reported by a clone event).
func (t *tracer) seizeAll(pid int) error {
	for {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return fmt.Errorf("%w: listing threads of %d: %v", errAttach, pid, err)
		}
		added := 0
		for _, e := range tasks {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || t.tracees[tid] != nil {
				continue
			}
			_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, uintptr(followOptions), 0, 0)
			if errno != 0 {
				return fmt.Errorf("%w: ptrace(PTRACE_SEIZE, %d): %v", errAttach, tid, errno)
			}
			t.tracees[tid] = &tracee{tid: tid}
			added++
		}
		if added == 0 {
			return nil
		}
	}
}

func (t *tracer) followEvent(pid int, ws unix.WaitStatus) {
	if ws.Exited() || ws.Signaled() {
		delete(t.tracees, pid)
		return
	}
	if !ws.Stopped() {
		return
	}
	if t.tracees[pid] == nil {
		// A new child can report its first stop before its parent's
		// fork event.
		t.tracees[pid] = &tracee{tid: pid}
	}
	switch cause := ws.TrapCause(); {
	case ws.StopSignal() == unix.SIGTRAP && cause == unix.PTRACE_EVENT_EXEC:
		if old, err := unix.PtraceGetEventMsg(pid); err == nil && int(old) != pid {
			delete(t.tracees, int(old)) // a non-leader thread exec'd: it now has pid
		}
		t.followExec(pid)
	case ws.StopSignal() == unix.SIGTRAP && (cause == unix.PTRACE_EVENT_FORK || cause == unix.PTRACE_EVENT_VFORK || cause == unix.PTRACE_EVENT_CLONE):
		if child, err := unix.PtraceGetEventMsg(pid); err == nil && t.tracees[int(child)] == nil {
			t.tracees[int(child)] = &tracee{tid: int(child)}
		}
		_ = unix.PtraceCont(pid, 0)
	case cause == unix.PTRACE_EVENT_STOP:
		if groupStop(pid) {
			// Keep job control working: stay stopped, but let us know
			// when it continues.
			_, _, _ = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_LISTEN, uintptr(pid), 0, 0, 0, 0)
			return
		}
		_ = unix.PtraceCont(pid, 0) // a new child's first stop
	default:
		_ = unix.PtraceCont(pid, int(ws.StopSignal())) // signal-delivery-stop
	}
}

// groupStop tells a group-stop from the other PTRACE_EVENT_STOPs:
// PTRACE_GETSIGINFO fails with EINVAL for it (ptrace(2)).
func groupStop(pid int) bool {
	var si [128]byte
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(pid), 0, uintptr(unsafePointer(&si)), 0, 0)
	return e == unix.EINVAL
}

// followExec decides an exec that no notification announced: allowed, the
// tracee goes on (still followed); denied, it is killed before it runs.
// Every decision is reported, allowed ones too, as the notify path does: an
// ask's context ends with its report.
func (t *tracer) followExec(pid int) {
	start := time.Now()
	var none Verdict
	ok, d := t.decideImage(pid, &none, -1)
	d.Time, d.Pid = start, pid
	if !ok && d.Result.Decision == policy.Ask && d.Exec.Argv != nil && t.ask != nil {
		ok = t.ask(&d)
	}
	if ok && len(d.loaded) > 0 {
		// The loader opens its program after this event, and this
		// supervision does not follow it there (see loaderWatch).
		ok = false
		d.Result = policy.Result{Decision: policy.Deny, Rule: &policy.LoaderRule}
		d.Reason = "ptrace-only supervision: a dynamic loader's program is not verified here"
	}
	if ok {
		if t.exec != nil && d.Exec.Argv != nil {
			t.exec(&d)
		}
		_ = unix.PtraceCont(pid, 0)
	} else {
		_ = unix.Kill(pid, unix.SIGKILL)
		d.Errno = unix.EPERM
		if d.Reason == "" {
			d.Reason = "ptrace-only supervision: killed at exec"
		}
	}
	if d.Exec.Argv == nil {
		return
	}
	d.Latency = time.Since(start)
	if t.report != nil {
		t.report(&d)
	}
}

// scriptPath makes name, the name the kernel gave a #! script's
// interpreter, absolute in the caller's root. A script run by execveat
// relative to a directory descriptor N is named /dev/fd/N/NAME (the kernel
// refuses to run it if N is closed on exec, so N is still the caller's):
// NAME is taken relative to that directory, as the kernel looked it up,
// since the magic link itself is not followed (openTarget).
func scriptPath(pid, root int, name string) (string, syscall.Errno) {
	if rest, ok := strings.CutPrefix(name, "/dev/fd/"); ok {
		if n, file, ok := strings.Cut(rest, "/"); ok && digits(n) && file != "" {
			fd, err := strconv.ParseInt(n, 10, 32)
			if err != nil {
				return "", unix.ENOENT
			}
			return absPath(pid, root, int32(fd), file)
		}
	}
	return absPath(pid, root, unix.AT_FDCWD, name)
}

// scriptBehind recognises an image that the kernel started for a #! script,
// in ptrace-only supervision where no notification said so: the kernel's
// argv is the #! line's interpreter (and its argument), then a file whose #!
// line is exactly that. It returns the index of the script's name in argv,
// or 0.
func scriptBehind(pid, root int, argv []string) int {
	for i := 1; i <= 2 && i < len(argv); i++ {
		cand := argv[i]
		if cand == "" {
			continue
		}
		abs, errno := scriptPath(pid, root, cand)
		if errno != 0 {
			continue
		}
		tgt, errno := openTarget(pid, root, abs, nil)
		if errno != 0 {
			continue
		}
		head, err := readHead(tgt.fd)
		unix.Close(tgt.fd)
		interp, args, ok := shebang(head)
		want := append([]string{interp}, args...)
		if err == nil && ok && len(want) == i && equalArgv(want, argv[:i]) {
			return i
		}
	}
	return 0
}
