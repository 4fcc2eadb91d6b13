package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// Verify selects how an allowed exec is protected against its argv or path
// being changed between the supervisor's check and the kernel's own read
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE lets the kernel read them again).
type Verify string

const (
	// VerifyAuto uses ptrace verification, and strict mode for a caller
	// ptrace cannot attach to (Yama, another tracer).
	VerifyAuto Verify = "auto"
	// VerifyPtrace attaches to every allowed caller before continuing it
	// and decides again at PTRACE_EVENT_EXEC; a caller that cannot be
	// attached to is refused.
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

// ReasonChanged is Decision.Reason for an exec killed at PTRACE_EVENT_EXEC
// because what the kernel ran is not what was checked.
const ReasonChanged = "changed after check"

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
//     of it has run — the tracer reads the true argv (/proc/PID/cmdline)
//     and binary (/proc/PID/exe), decides again, and detaches (allow) or
//     SIGKILLs (deny, reported as "changed after check").
//
// A failed exec gives no event: the caller is back in user space, still
// attached. After execEventWait the tracer interrupts it; if it is no
// longer inside execve, it is detached. Signals that arrive while attached
// are re-injected. With PTRACE_O_EXITKILL, a tracee is killed if cordon
// dies while attached: fail closed.
type tracer struct {
	pol   *policy.Policy // bound to files, which belong to the tracer thread
	files *files
	log   *slog.Logger
	// report receives kills at the exec event. It is called on the tracer
	// thread.
	report func(*Decision)

	reqs chan attachReq
	stop chan struct{}
	done chan struct{}

	// Owned by the tracer thread.
	tracees map[int]*tracee
}

type attachReq struct {
	tid   int
	d     Decision
	reply chan error
}

type tracee struct {
	tid         int // the thread that called exec
	d           Decision
	deadline    time.Time
	interrupted bool
	killed      bool
}

// errAttach wraps why ptrace could not attach to a caller.
var errAttach = errors.New("cannot attach with ptrace")

func newTracer(pol *policy.Policy, fs *files, log *slog.Logger, report func(*Decision)) *tracer {
	t := &tracer{
		pol:     pol.WithFiles(fs),
		files:   fs,
		log:     log,
		report:  report,
		reqs:    make(chan attachReq),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		tracees: map[int]*tracee{},
	}
	go t.loop()
	return t
}

// attach seizes tid before its exec is continued. It returns errAttach
// (wrapped) when ptrace is not possible for this caller.
func (t *tracer) attach(tid int, d *Decision) error {
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
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, unix.SIGCHLD)
	defer signal.Stop(sigchld)
	tick := time.NewTicker(tracerTick)
	defer tick.Stop()
	for {
		select {
		case r := <-t.reqs:
			r.reply <- t.seize(r)
			t.drain()
		case <-sigchld:
			t.drain()
		case <-tick.C:
			if len(t.tracees) > 0 {
				t.drain()
				t.expire()
			}
		case <-t.stop:
			for tid := range t.tracees {
				_ = unix.PtraceDetach(tid)
			}
			return
		}
	}
}

func (t *tracer) seize(r attachReq) error {
	if tr, ok := t.tracees[r.tid]; ok {
		// The exec was interrupted by a signal and notified again: we are
		// still attached from the first time. Judge the new attempt.
		tr.d, tr.deadline, tr.interrupted = r.d, time.Now().Add(execEventWait), false
		return nil
	}
	opts := unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(r.tid), 0, uintptr(opts), 0, 0)
	if e != 0 {
		return fmt.Errorf("%w: ptrace(PTRACE_SEIZE, %d): %v", errAttach, r.tid, e)
	}
	t.tracees[r.tid] = &tracee{tid: r.tid, d: r.d, deadline: time.Now().Add(execEventWait)}
	return nil
}

// drain handles every pending event of this thread's tracees. __WNOTHREAD
// keeps it to tracees attached by this thread: cordon's other children
// (bubblewrap) are waited for elsewhere.
func (t *tracer) drain() {
	for len(t.tracees) > 0 {
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
	switch {
	case ws.Exited() || ws.Signaled():
		delete(t.tracees, pid)
	case ws.Stopped() && ws.StopSignal() == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_EXEC:
		tr := t.tracees[pid]
		if tr == nil {
			// A non-leader thread exec'd: it now has the leader's id, and
			// the event message holds its former one.
			if old, err := unix.PtraceGetEventMsg(pid); err == nil {
				tr = t.tracees[int(old)]
				delete(t.tracees, int(old))
			}
		}
		if tr == nil {
			tr = &tracee{tid: pid}
			t.tracees[pid] = tr
			t.detach(tr)
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
		delete(t.tracees, tr.tid)
		return
	}
	tr.killed = true // dying: drain reaps its exit
}

// expire interrupts tracees whose exec event is overdue.
func (t *tracer) expire() {
	now := time.Now()
	for tid, tr := range t.tracees {
		if tr.interrupted || tr.killed || now.Before(tr.deadline) {
			continue
		}
		tr.interrupted = true
		if err := unix.PtraceInterrupt(tid); err != nil && unix.Kill(tid, 0) == unix.ESRCH {
			delete(t.tracees, tid) // gone and reaped: nothing left to wait for
		}
	}
}

// verify decides the new image of pid again, from what the kernel really
// loaded, before any of it runs.
func (t *tracer) verify(pid int, tr *tracee) {
	start := time.Now()
	d := tr.d
	d.Time = start
	d.Pid = pid
	ok, exec, res := t.decideImage(pid, &tr.d)
	if ok {
		t.detach(tr)
		return
	}
	// What runs is not what was allowed: it must not execute one
	// instruction. SIGKILL wakes the tracee out of its ptrace stop and
	// kills it; its death is reported to us and consumed by drain.
	_ = unix.Kill(pid, unix.SIGKILL)
	tr.killed = true
	if exec.Argv == nil {
		return // it was already going away: its /proc entries are gone
	}
	d.Exec = exec
	d.Result = res
	d.Errno = unix.EPERM
	d.Reason = ReasonChanged
	d.Latency = time.Since(start)
	t.log.Debug("exec changed after check: killed", "pid", pid, "checked", FormatArgv(tr.d.Exec.Argv), "ran", FormatArgv(exec.Argv))
	if t.report != nil {
		t.report(&d)
	}
}

// decideImage reads pid's new argv and executable and decides them. It
// allows when the policy allows, or when it asks and the same argv was
// already approved when it was checked.
func (t *tracer) decideImage(pid int, checked *Decision) (bool, policy.Exec, policy.Result) {
	proc := "/proc/" + strconv.Itoa(pid)
	// A nil Argv in the result means pid vanished (killed by someone else
	// while stopped): it is denied, but there is nothing to report.
	var exec policy.Exec
	raw, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return false, exec, policy.Result{Decision: policy.Deny}
	}
	fd, err := unix.Open(proc+"/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, exec, policy.Result{Decision: policy.Deny}
	}
	exec.Argv = splitCmdline(raw)
	defer unix.Close(fd)
	id, _, err := fstatID(fd)
	if err != nil {
		return false, exec, policy.Result{Decision: policy.Deny}
	}
	exe, _ := os.Readlink(proc + "/exe")
	exec.Path, exec.Resolved, exec.File, exec.Known = exe, exe, id, true
	// An ask answered yes at the check holds if the kernel's argv is the
	// one that was checked (for a script: its interpreter form).
	want := checked.Exec.Argv
	if checked.Expect != nil {
		want = checked.Expect
	}
	approved := checked.Result.Decision == policy.Ask && equalArgv(want, exec.Argv)
	tgt := target{pid: pid, fd: fd, id: id, path: exe}
	t.files.setCurrent(&tgt)
	res := t.pol.Decide(&exec)
	t.files.setCurrent(nil)
	if checked.Expect != nil {
		// A #! script: the image is its interpreter, so decide the script
		// too, with the arguments the kernel really copied. The kernel's
		// argv is the interpreter line, the script's name, then the
		// script's own arguments; a different prefix means the path
		// changed after the check.
		prefix := len(checked.Expect) - max(len(checked.Exec.Argv)-1, 0)
		if prefix < 1 || len(exec.Argv) < prefix || !equalArgv(exec.Argv[:prefix], checked.Expect[:prefix]) {
			return false, exec, policy.Result{Decision: policy.Deny}
		}
		script := checked.Exec
		script.Argv = append([]string{argv0(checked.Exec.Argv)}, exec.Argv[prefix:]...)
		if r := t.pol.Decide(&script); r.Decision > res.Decision {
			res = r
			exec = script
		}
	}
	switch res.Decision {
	case policy.Allow:
		return true, exec, res
	case policy.Ask:
		if approved {
			return true, exec, res
		}
	}
	if res.Decision != policy.Deny {
		res = policy.Result{Decision: policy.Deny, Rule: res.Rule}
	}
	return false, exec, res
}

// inExec reports whether pid is stopped inside execve or execveat (the
// first field of /proc/PID/syscall is the number of the syscall it is in).
func inExec(pid int, arch string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
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

func splitCmdline(raw []byte) []string {
	raw = bytes.TrimSuffix(raw, []byte{0})
	if len(raw) == 0 {
		return []string{}
	}
	parts := bytes.Split(raw, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
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
