package sandbox

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// pidFD is a pidfd shared by goroutines: signals through it reach exactly
// the process it was opened for, or nothing (ESRCH) once that process is
// gone, never a process that reused its pid.
type pidFD struct {
	mu sync.RWMutex
	fd int // guarded by mu; -1 once closed
}

func newPidFD(fd int) *pidFD { return &pidFD{fd: fd} }

func (p *pidFD) signal(sig syscall.Signal) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.fd < 0 {
		return unix.ESRCH
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// alive reports whether the process has not exited yet (a zombie has).
func (p *pidFD) alive() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.fd >= 0 && proc.PidfdAlive(p.fd)
}

// hostPid is the process's pid in cordon's pid namespace, or 0 once it has
// been reaped.
func (p *pidFD) hostPid() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.fd < 0 {
		return 0
	}
	return pidOfFD(p.fd)
}

func (p *pidFD) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// pidOfFD reads the pid behind a pidfd from /proc/self/fdinfo ("Pid:" is
// -1 once the process has been reaped).
func pidOfFD(fd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			if n < 0 {
				return 0
			}
			return n
		}
	}
	return 0
}

// member is a verified live process of a tree, with a pidfd the caller
// closes.
type member = proc.Member

// walkTree returns the live descendants of root (not root itself), parents
// before children, each proven still in the tree when the walk saw it
// (proc.Descendants, the walk the bare tiers' init and cordon use too).
func walkTree(root int, rootFD *pidFD) []member {
	if rootFD == nil {
		return nil
	}
	return proc.Descendants(root, rootFD.alive, nil)
}

// signalMembers sends each signal, in order, to every member, and closes
// their pidfds. It returns how many members there were.
func signalMembers(ms []member, sigs ...syscall.Signal) int {
	for _, m := range ms {
		for _, sig := range sigs {
			_ = unix.PidfdSendSignal(m.FD, sig, nil, 0)
		}
	}
	for _, m := range ms {
		unix.Close(m.FD)
	}
	return len(ms)
}

// nsChain returns the pids, in the sandbox's pid namespace, of pid and its
// ancestors up to (not including) stop, nearest first.
func nsChain(pid, stop int) []int {
	var out []int
	for depth := 0; depth < 256 && pid > 1 && pid != stop; depth++ {
		st, err := proc.ReadStatus(pid)
		if err != nil {
			break
		}
		ns, ppid := st.NSPid, st.PPid
		if ns > 0 {
			out = append(out, ns)
		}
		pid = ppid
	}
	return out
}

// waitPidFD waits until the process behind fd has exited or ctx is done.
// It owns fd and closes it. The pidfd is polled through the runtime's
// poller, so the wait holds no thread.
func waitPidFD(ctx context.Context, fd int) error {
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		// Not pollable here: fall back to polling.
		for proc.PidfdAlive(fd) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		return nil
	}
	err = rc.Read(func(fd uintptr) bool { return !proc.PidfdAlive(int(fd)) })
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ctx.Err()
	}
	return err
}
