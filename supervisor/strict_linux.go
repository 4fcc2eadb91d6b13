package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kcmpVM is KCMP_VM from linux/kcmp.h: do two tasks share an address space?
const kcmpVM = 1

// raceable says why the caller of an exec could change its argv or path
// after the check without ptrace verification, or "" when it cannot:
//   - it has other threads;
//   - another task shares its memory (CLONE_VM without CLONE_THREAD);
//   - the path, the argv array or an argv string lies in a shared mapping
//     another process could write.
//
// A /proc/PID/mem writer needs ptrace access to the caller; where strict
// mode is in force because ptrace is not available, that access is
// refused to the sandbox too.
//
// trusted is a task whose memory the caller may share: cordon's own init,
// whose spawns are vfork children sharing its (multithreaded) memory.
func raceable(pid int, trusted int, addrs []uint64) string {
	proc := "/proc/" + strconv.Itoa(pid)
	if trusted > 0 && kcmp(pid, trusted, kcmpVM) {
		return "" // the init's own spawn: trusted code
	}
	if tp := procStatusField(proc+"/status", "TracerPid"); tp != "0" {
		return fmt.Sprintf("the caller is traced by process %s, which can rewrite its arguments", tp)
	}
	if n := procStatusField(proc+"/status", "Threads"); n != "1" {
		return fmt.Sprintf("the caller has %s threads", n)
	}
	if peer := memoryPeer(pid); peer > 0 && !suspendedVforkParent(pid, peer) {
		return fmt.Sprintf("process %d shares the caller's memory", peer)
	}
	if a, ok := sharedAddr(proc+"/maps", addrs); ok {
		return fmt.Sprintf("exec arguments at %#x lie in shared memory", a)
	}
	return ""
}

// suspendedVforkParent reports whether peer is the caller's parent with a
// single thread: a vfork parent is suspended until its child execs, so with
// no other thread nothing in the shared memory can run (shells spawn
// commands this way).
func suspendedVforkParent(pid, peer int) bool {
	ppid := procStatusField("/proc/"+strconv.Itoa(pid)+"/status", "PPid")
	return ppid == strconv.Itoa(peer) && procStatusField("/proc/"+strconv.Itoa(peer)+"/status", "Threads") == "1"
}

func kcmp(a, b, typ int) bool {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), uintptr(typ), 0, 0, 0)
	return e == 0 && r == 0
}

func procStatusField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// memoryPeer returns another process in the caller's pid namespace that
// shares its address space, or 0.
func memoryPeer(pid int) int {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return 0
	}
	tgid, _ := strconv.Atoi(procStatusField("/proc/"+strconv.Itoa(pid)+"/status", "Tgid"))
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		other, err := strconv.Atoi(e.Name())
		if err != nil || other == tgid {
			continue
		}
		if o, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || o != ns {
			continue
		}
		if kcmp(pid, other, kcmpVM) {
			return other
		}
	}
	return 0
}

// sharedAddr reports the first address that lies in a shared mapping.
func sharedAddr(maps string, addrs []uint64) (uint64, bool) {
	f, err := os.Open(maps)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	type span struct{ lo, hi uint64 }
	var shared []span
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || len(fields[1]) < 4 || fields[1][3] != 's' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			shared = append(shared, span{l, h})
		}
	}
	for _, a := range addrs {
		for _, s := range shared {
			if a >= s.lo && a < s.hi {
				return a, true
			}
		}
	}
	return 0, false
}
