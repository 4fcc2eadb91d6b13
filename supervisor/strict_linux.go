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
//   - it has other threads, or is traced;
//   - a process sharing its memory can run: the filter lets memory be
//     shared only by threads and by plain vfork (the parent is suspended
//     until the child execs), so this walks the vfork ancestors that share
//     the caller's memory and requires each to be single-threaded;
//   - the path, the argv array or an argv string lies in a shared mapping
//     another process could write.
//
// Nothing in the sandbox can write another process's memory otherwise
// (ptrace and process_vm_writev are refused, /proc is read-only). A caller
// that passes needs no ptrace verification; one that fails gets it, or is
// refused in strict mode.
//
// trusted is a task whose memory the caller may share: cordon's own init,
// whose spawns are vfork children sharing its (multithreaded) memory.
func raceable(pid int, trusted int, addrs []uint64) string {
	st := readStatus(pid)
	if st.tracer != 0 {
		return fmt.Sprintf("the caller is traced by process %d, which can rewrite its arguments", st.tracer)
	}
	if st.threads != 1 {
		return fmt.Sprintf("the caller has %d threads", st.threads)
	}
	for p := st.ppid; p > 1 && kcmp(pid, p, kcmpVM); {
		if p == trusted {
			break // the init's own spawn: trusted code
		}
		ps := readStatus(p)
		if ps.threads != 1 || ps.tracer != 0 {
			return fmt.Sprintf("process %d shares the caller's memory and has %d threads", p, ps.threads)
		}
		p = ps.ppid
	}
	if a, ok := sharedAddr("/proc/"+strconv.Itoa(pid)+"/maps", addrs); ok {
		return fmt.Sprintf("exec arguments at %#x lie in shared memory", a)
	}
	return ""
}

// procStatus is what raceable reads of /proc/PID/status.
type procStatus struct {
	threads, tracer, ppid int
}

// readStatus reads Threads, TracerPid and PPid in one pass. A field that
// cannot be read reads as -1, which no check accepts.
func readStatus(pid int) procStatus {
	st := procStatus{threads: -1, tracer: -1, ppid: -1}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return st
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		switch k {
		case "Threads":
			st.threads = n
		case "TracerPid":
			st.tracer = n
		case "PPid":
			st.ppid = n
		}
	}
	return st
}

func kcmp(a, b, typ int) bool {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), uintptr(typ), 0, 0, 0)
	return e == 0 && r == 0
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
