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
type member struct {
	pid int
	fd  int
}

// walkTree returns the live descendants of root (not root itself), parents
// before children. Each member's pidfd is opened before its parent is
// checked: the child's /proc entry must name the parent, and the parent
// (its pidfd) must still be alive after that read. A pid that died and was
// reused in between fails one of the two checks, so only processes that
// were in the tree while this walk looked at them are returned. Zombies
// count as dead and are skipped.
func walkTree(root int, rootFD *pidFD) []member {
	if root <= 0 || rootFD == nil || !rootFD.alive() {
		return nil
	}
	var out []member
	type level struct {
		pid   int
		alive func() bool
	}
	queue := []level{{root, rootFD.alive}}
	for len(queue) > 0 && len(out) < 1<<16 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range proc.Children(parent.pid) {
			fd, err := unix.PidfdOpen(c, 0)
			if err != nil {
				continue
			}
			st, err := proc.ReadStat(c)
			if err != nil || st.PPid != parent.pid || st.State == 'Z' || st.State == 'X' || !parent.alive() || !proc.PidfdAlive(fd) {
				unix.Close(fd)
				continue
			}
			out = append(out, member{pid: c, fd: fd})
			cfd := fd
			queue = append(queue, level{c, func() bool { return proc.PidfdAlive(cfd) }})
		}
	}
	return out
}

// signalMembers sends each signal, in order, to every member, and closes
// their pidfds. It returns how many members there were.
func signalMembers(ms []member, sigs ...syscall.Signal) int {
	for _, m := range ms {
		for _, sig := range sigs {
			_ = unix.PidfdSendSignal(m.fd, sig, nil, 0)
		}
	}
	for _, m := range ms {
		unix.Close(m.fd)
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
