package doctor

// The child side of the seccomp probes. Each probe loads a filter on one
// locked OS thread (no TSYNC, except in the TSYNC probe, which runs in a child
// of its own) and plays supervisor for it from other, unfiltered threads.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/seccomp"
)

// probeNr is the syscall the probe filters send to the listener: getppid has
// no arguments, no side effects and a result we know in advance.
const probeNr = unix.SYS_GETPPID

// Offsets into struct seccomp_data that the filter loads; the size test
// checks them against the Go mirror of the struct.
const (
	dataOffNr   = 0
	dataOffArch = 4
)

// notifyFilter returns a classic BPF program that sends the native-arch
// probe syscall to the listener and allows everything else. Allowing other
// architectures is right only here: the filter lives on one thread of a Go
// program that never enters the kernel through a 32-bit entry point. The
// real filter notifies or kills those.
func notifyFilter() []unix.SockFilter {
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: dataOffArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: auditArch},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: dataOffNr},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: probeNr},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
}

// callResult is what the probe syscall returned on the filtered thread.
type callResult struct {
	val   uintptr
	errno unix.Errno
}

// filteredThread is a goroutine locked to an OS thread that carries a probe
// filter and makes the probe syscall on request.
type filteredThread struct {
	tid      int
	listener int
	calls    chan struct{}
	results  chan callResult
}

// startFilteredThread loads the probe filter with flags on a fresh locked OS
// thread and returns once seccomp(2) has answered.
func startFilteredThread(flags uintptr) (*filteredThread, error) {
	type started struct {
		tid, fd int
		err     error
	}
	ready := make(chan started, 1)
	t := &filteredThread{calls: make(chan struct{}), results: make(chan callResult, 1)}
	go func() {
		// Never unlocked: the runtime ends a thread whose goroutine exits
		// locked, so no other goroutine ever runs under this filter. Threads
		// the runtime creates later are cloned from its template thread, not
		// from a locked one, so they do not inherit the filter either.
		runtime.LockOSThread()
		tid := unix.Gettid()
		// PR_SET_NO_NEW_PRIVS is per thread: stay on this locked OS thread
		// until seccomp() returns.
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ready <- started{err: os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)}
			return
		}
		fd, err := seccomp.SetFilter(flags, notifyFilter())
		ready <- started{tid: tid, fd: fd, err: err}
		if err != nil {
			return
		}
		for range t.calls {
			// unix.Syscall, not RawSyscall: the runtime must see this thread
			// as blocked in a syscall, or its preemption signal would
			// interrupt the notification every 10ms.
			r, _, errno := unix.Syscall(probeNr, 0, 0, 0)
			t.results <- callResult{val: r, errno: errno}
		}
	}()
	s := <-ready
	if s.err != nil {
		return nil, s.err
	}
	t.tid, t.listener = s.tid, s.fd
	return t, nil
}

// call makes the filtered thread enter the probe syscall.
func (t *filteredThread) call() { t.calls <- struct{}{} }

// result waits for the probe syscall to return.
func (t *filteredThread) result(deadline time.Time) (callResult, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-t.results:
		return r, nil
	case <-timer.C:
		return callResult{}, fmt.Errorf("waiting for getppid on thread %d: %w", t.tid, errProbeTimeout)
	}
}

// stop closes the listener, which fails a still-blocked probe syscall with
// ENOSYS, and lets the thread exit.
func (t *filteredThread) stop() {
	close(t.calls)
	_ = unix.Close(t.listener)
}

// recvNotif waits in ppoll (never blocking in RECV itself) until a
// notification can be received or deadline passes.
func recvNotif(fd int, deadline time.Time) (seccomp.Notif, error) {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return seccomp.Notif{}, fmt.Errorf("waiting for a notification: %w", errProbeTimeout)
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Ppoll(fds, &ts, nil)
		if errors.Is(err, unix.EINTR) || n == 0 {
			continue
		}
		if err != nil {
			return seccomp.Notif{}, os.NewSyscallError("ppoll", err)
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return seccomp.Notif{}, fmt.Errorf("listener poll events %#x without POLLIN", fds[0].Revents)
		}
		var notif seccomp.Notif
		if err := seccomp.NotifRecv(fd, &notif); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // the caller was interrupted; it will notify again
			}
			return seccomp.Notif{}, err
		}
		return notif, nil
	}
}

// expectFrom checks that a notification is the probe syscall of thread tid.
func expectFrom(n seccomp.Notif, tid int) error {
	if n.Data.Nr != probeNr || n.Data.Arch != auditArch || int(n.Pid) != tid {
		return fmt.Errorf("unexpected notification: syscall %d arch %#x from pid %d, want getppid from thread %d",
			n.Data.Nr, n.Data.Arch, n.Pid, tid)
	}
	return nil
}

// answerPending receives the thread's notification and answers it with resp.
// A notification that a signal aborted before the answer (ENOENT) comes
// back with a new id and is answered again.
func answerPending(t *filteredThread, deadline time.Time, resp seccomp.NotifResp) error {
	for {
		n, err := recvNotif(t.listener, deadline)
		if err != nil {
			return err
		}
		if err := expectFrom(n, t.tid); err != nil {
			return err
		}
		resp.ID = n.ID
		err = seccomp.NotifSend(t.listener, &resp)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		return err
	}
}

// roundTrip has the thread make the probe syscall, answers it with resp and
// returns what the syscall returned.
func roundTrip(t *filteredThread, deadline time.Time, resp seccomp.NotifResp) (callResult, error) {
	t.call()
	if err := answerPending(t, deadline, resp); err != nil {
		return callResult{}, err
	}
	return t.result(deadline)
}

var (
	respContinue = seccomp.NotifResp{Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	respEPERM    = seccomp.NotifResp{Error: -int32(unix.EPERM)}
	respEACCES   = seccomp.NotifResp{Error: -int32(unix.EACCES)}
)

// checkResult compares what getppid returned with what the answer implies.
func checkResult(r callResult, wantErrno unix.Errno, wantPpid int) error {
	if wantErrno != 0 {
		if r.errno != wantErrno {
			return fmt.Errorf("getppid returned %d, errno %v; want the %v we answered", int(r.val), r.errno, wantErrno)
		}
		return nil
	}
	if r.errno != 0 || int(r.val) != wantPpid {
		return fmt.Errorf("getppid returned %d, errno %v; want the real parent pid %d", int(r.val), r.errno, wantPpid)
	}
	return nil
}

// probeNotify fills UserNotif, Continue and FDSyncWakeUp (and ListenerBusy).
func probeNotify(sf *SeccompFeatures, deadline time.Time, ppid int) {
	notProbed := func(why string) {
		for _, f := range []*Feature{&sf.Continue, &sf.FDSyncWakeUp} {
			f.Detail = "not probed: " + why
		}
	}
	if err := seccomp.ActionAvail(unix.SECCOMP_RET_USER_NOTIF); err != nil {
		sf.UserNotif.Detail = fmt.Sprintf("the kernel does not know SECCOMP_RET_USER_NOTIF: %v", err)
		notProbed("no user notification")
		return
	}
	t, err := startFilteredThread(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			sf.ListenerBusy = true
			sf.UserNotif.Detail = "EBUSY: " + ebusyDetail
		} else {
			sf.UserNotif.Detail = fmt.Sprintf("loading a filter with NEW_LISTENER: %v", err)
		}
		notProbed("no listener")
		return
	}
	defer t.stop()

	r, err := roundTrip(t, deadline, respEPERM)
	if err == nil {
		err = checkResult(r, unix.EPERM, ppid)
	}
	if err != nil {
		sf.UserNotif.Detail = fmt.Sprintf("answering with an errno: %v", err)
		notProbed("answering with an errno failed")
		return
	}
	sf.UserNotif = Feature{Supported: true, Detail: "getppid on a filtered thread was notified with the thread's pid and failed with the EPERM we answered"}

	r, err = roundTrip(t, deadline, respContinue)
	if err == nil {
		err = checkResult(r, 0, ppid)
	}
	if errors.Is(err, unix.EINVAL) {
		err = fmt.Errorf("the kernel rejected SECCOMP_USER_NOTIF_FLAG_CONTINUE: %w", err)
	}
	if err != nil {
		sf.Continue.Detail = fmt.Sprintf("answering CONTINUE: %v", err)
	} else {
		sf.Continue = Feature{Supported: true, Detail: "answered CONTINUE: getppid ran and returned the real parent pid"}
	}

	if err := seccomp.NotifSetFlags(t.listener, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP); err != nil {
		sf.FDSyncWakeUp.Detail = fmt.Sprintf("the kernel rejected FD_SYNC_WAKE_UP: %v", err)
		return
	}
	r, err = roundTrip(t, deadline, respEACCES)
	if err == nil {
		err = checkResult(r, unix.EACCES, ppid)
	}
	if err != nil {
		sf.FDSyncWakeUp.Detail = fmt.Sprintf("flag accepted, but then: %v", err)
		return
	}
	sf.FDSyncWakeUp = Feature{Supported: true, Detail: "flag accepted; notifications still received and answered"}
}

// probeWaitKillable fills WaitKillableRecv. The behaviour under test: once
// the supervisor has received a notification, a non-fatal signal to the
// caller (Go's SIGURG preemption) must neither abort it nor make its id stale.
func probeWaitKillable(sf *SeccompFeatures, deadline time.Time, ppid int, canContinue bool) {
	sf.WaitKillableRecv = signalAfterRecv(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
		deadline, ppid, canContinue)
}

// signalAfterRecv loads a filter with flags, receives a notification, signals
// the notifying thread and reports whether the notification survived. With
// flags lacking WAIT_KILLABLE_RECV it must not: tests use that as the control.
func signalAfterRecv(flags uintptr, deadline time.Time, ppid int, canContinue bool) Feature {
	var f Feature
	t, err := startFilteredThread(flags)
	if err != nil {
		switch {
		case errors.Is(err, unix.EINVAL):
			f.Detail = "the kernel rejects SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (EINVAL)"
		case errors.Is(err, unix.EBUSY):
			f.Detail = "not probed: EBUSY: " + ebusyDetail
		default:
			f.Detail = fmt.Sprintf("loading a filter with WAIT_KILLABLE_RECV: %v", err)
		}
		return f
	}
	defer t.stop()

	resp, wantErrno := respContinue, unix.Errno(0)
	if !canContinue {
		resp, wantErrno = respEPERM, unix.EPERM
	}

	t.call()
	n, err := recvNotif(t.listener, deadline)
	if err == nil {
		err = expectFrom(n, t.tid)
	}
	if err != nil {
		f.Detail = fmt.Sprintf("flag accepted, but receiving: %v", err)
		return f
	}
	if err := unix.Tgkill(os.Getpid(), t.tid, unix.SIGURG); err != nil {
		f.Detail = fmt.Sprintf("not probed: %v", os.NewSyscallError("tgkill", err))
		_ = answer(t, n, resp)
		return f
	}

	// Wait until the signal is seen pending on the thread (it arrived and
	// did not interrupt the wait) or the id goes stale (it did).
	limit := time.Now().Add(250 * time.Millisecond)
	if deadline.Before(limit) {
		limit = deadline
	}
	stale, pending := false, false
	for !stale && !pending && time.Now().Before(limit) {
		if err := seccomp.NotifIDValid(t.listener, n.ID); err != nil {
			stale = true
			break
		}
		pending, err = threadSignalPending(t.tid, unix.SIGURG)
		if err != nil {
			f.Detail = fmt.Sprintf("not probed: %v", err)
			_ = answer(t, n, resp)
			return f
		}
		if !pending {
			time.Sleep(time.Millisecond)
		}
	}
	if !stale && pending {
		// A signal is also briefly pending on its way to interrupting an
		// interruptible wait; only one still pending, with the id still
		// valid, a while later proves the wait was killable.
		time.Sleep(20 * time.Millisecond)
		stale = seccomp.NotifIDValid(t.listener, n.ID) != nil
		if still, err := threadSignalPending(t.tid, unix.SIGURG); err == nil && !still && !stale {
			pending = false
		}
	}

	switch {
	case stale:
		f.Detail = "flag accepted but not honoured: a signal after the notification was received aborted it (the id went stale)"
		// The interrupted syscall restarts and notifies again: let it finish.
		if err := answerPending(t, deadline, resp); err == nil {
			_, _ = t.result(deadline)
		}
	case !pending:
		f.Detail = "undetermined: the signal sent to the notifying thread was not seen staying pending"
		_ = answer(t, n, resp)
	default:
		if err := answer(t, n, resp); err != nil {
			f.Detail = fmt.Sprintf("flag accepted, the signal stayed pending, but answering: %v", err)
			return f
		}
		r, err := t.result(deadline)
		if err == nil {
			err = checkResult(r, wantErrno, ppid)
		}
		if err != nil {
			f.Detail = fmt.Sprintf("flag accepted, but after the answer: %v", err)
			return f
		}
		f = Feature{Supported: true, Detail: "a SIGURG sent after the notification was received stayed pending; the notification stayed valid and was answered"}
	}
	return f
}

// answer sends resp for notification n.
func answer(t *filteredThread, n seccomp.Notif, resp seccomp.NotifResp) error {
	resp.ID = n.ID
	return seccomp.NotifSend(t.listener, &resp)
}

// threadSignalPending reports whether sig is pending for thread tid of this
// process (its private set, SigPnd in /proc/self/task/TID/status).
func threadSignalPending(tid int, sig unix.Signal) (bool, error) {
	path := "/proc/self/task/" + strconv.Itoa(tid) + "/status"
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("reading pending signals: %w", err)
	}
	mask, ok := statusField(string(data), "SigPnd")
	if !ok {
		return false, fmt.Errorf("no SigPnd in %s", path)
	}
	return sigMaskHas(mask, int(sig))
}

// probeTSync fills TSyncListener: TSYNC|TSYNC_ESRCH|NEW_LISTENER must put the
// filter on every thread, so a thread that loaded nothing is notified.
//
// Preconditions: no thread of this process carries a filter; the process
// exits soon after, as the filter now covers all of its threads.
func probeTSync(sf *SeccompFeatures, deadline time.Time) {
	f := &sf.TSyncListener
	t, err := startFilteredThread(unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		switch {
		case errors.Is(err, unix.EINVAL):
			f.Detail = "the kernel rejects TSYNC_ESRCH with NEW_LISTENER (EINVAL)"
		case errors.Is(err, unix.ESRCH):
			f.Detail = "TSYNC could not synchronise another thread (ESRCH)"
		case errors.Is(err, unix.EBUSY):
			sf.ListenerBusy = true
			f.Detail = "not probed: EBUSY: " + ebusyDetail
		default:
			f.Detail = fmt.Sprintf("loading a filter with TSYNC|TSYNC_ESRCH|NEW_LISTENER: %v", err)
		}
		return
	}
	defer t.stop()

	// A second locked goroutine is on a different OS thread than t's, which
	// is still locked to its own goroutine.
	other := &filteredThread{listener: t.listener, calls: make(chan struct{}), results: make(chan callResult, 1)}
	tids := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread carries the filter too
		tids <- unix.Gettid()
		for range other.calls {
			r, _, errno := unix.Syscall(probeNr, 0, 0, 0)
			other.results <- callResult{val: r, errno: errno}
		}
	}()
	other.tid = <-tids
	defer close(other.calls)

	r, err := roundTrip(other, deadline, respEPERM)
	if err == nil {
		err = checkResult(r, unix.EPERM, 0)
	}
	if err != nil {
		f.Detail = fmt.Sprintf("filter loaded on thread %d, but on thread %d: %v", t.tid, other.tid, err)
		return
	}
	*f = Feature{Supported: true, Detail: "a filter loaded on one thread with TSYNC|TSYNC_ESRCH|NEW_LISTENER notified getppid from another"}
}
