package proc

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Member is a live process found by Descendants, with a pidfd the caller
// closes.
type Member struct {
	Pid int
	FD  int
}

// maxMembers bounds one walk.
const maxMembers = 1 << 16

// Descendants returns the live descendants of root (not root itself),
// parents before children; alive reports whether root still is the process
// the caller means. Each member's pidfd is opened before its parent is
// checked: the child's /proc entry must name the parent, and the parent must
// still be alive after that read. A pid that died and was reused in between
// fails one of the two checks, so only processes that were in the tree while
// the walk looked at them are returned. A process counts as live until its
// whole thread group has exited (its pidfd polls readable): one whose leader
// thread alone exited ("Z" in /proc) is a member. skip, when set, leaves out
// a child of root and its subtree.
func Descendants(root int, alive func() bool, skip func(pid int) bool) []Member {
	if root <= 0 || !alive() {
		return nil
	}
	var out []Member
	type level struct {
		pid   int
		alive func() bool
	}
	queue := []level{{root, alive}}
	for len(queue) > 0 && len(out) < maxMembers {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range Children(parent.pid) {
			if parent.pid == root && skip != nil && skip(c) {
				continue
			}
			fd, err := unix.PidfdOpen(c, 0)
			if err != nil {
				continue
			}
			// Liveness is the pidfd's, never the state letter: a process
			// whose main thread exited while another runs on reads "Z" in
			// /proc, yet lives, forks, and dies of a SIGKILL to its pidfd.
			st, err := ReadStat(c)
			if err != nil || st.PPid != parent.pid || !parent.alive() || !PidfdAlive(fd) {
				unix.Close(fd)
				continue
			}
			out = append(out, Member{Pid: c, FD: fd})
			cfd := fd
			queue = append(queue, level{c, func() bool { return PidfdAlive(cfd) }})
		}
	}
	return out
}

// KillDescendants SIGKILLs every descendant of the calling process, which
// must be a child subreaper (every orphan of its tree re-parents to it), and
// reaps its children, until none is left but those skip names (children of
// its own that are not the tree's; skip may be nil). Each pass kills the whole
// tree found by one walk, not only the direct children: a chain of
// processes that regrows at its bottom as its top is killed loses every link
// at once, and what was forked during the walk is found, re-parented here,
// by the next. It gives up after bound, or after a second in which every kill
// was refused (EPERM: a process it may not signal), and says why.
func KillDescendants(skip func(pid int) bool, bound time.Duration) error {
	self := os.Getpid()
	always := func() bool { return true }
	deadline := time.Now().Add(bound)
	var refusedSince time.Time
	for {
		ms := Descendants(self, always, skip)
		var refused []int
		for _, m := range ms {
			if err := unix.PidfdSendSignal(m.FD, unix.SIGKILL, nil, 0); err == unix.EPERM {
				refused = append(refused, m.Pid)
			}
			unix.Close(m.FD)
		}
		// The caller's own children, read failing closed: a /proc it cannot
		// read (no descriptor left, say) is never taken for an empty tree.
		// Those that are dead are reaped; the rest are left for the next
		// pass.
		kids, err := ChildrenErr(self)
		reaped, left := 0, 0
		for _, c := range kids {
			if skip != nil && skip(c) {
				continue
			}
			var ws unix.WaitStatus
			if pid, werr := unix.Wait4(c, &ws, unix.WNOHANG, nil); werr == nil && pid == c {
				reaped++
			} else {
				left++
			}
		}
		if err == nil && left == 0 && len(ms) == 0 {
			return nil
		}
		if err != nil && time.Now().After(deadline) {
			return fmt.Errorf("cannot list the processes left: %w", err)
		}
		switch {
		case len(refused) == 0 || len(refused) < len(ms) || reaped > 0:
			refusedSince = time.Time{}
		case refusedSince.IsZero():
			refusedSince = time.Now()
		case time.Since(refusedSince) > time.Second:
			return fmt.Errorf("cannot kill processes %v: %w", refused, unix.EPERM)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still alive after %v: %d left", bound, left)
		}
		if reaped == 0 {
			time.Sleep(time.Millisecond) // dying processes: wait, do not spin
		}
	}
}
