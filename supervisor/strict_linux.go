package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"sort"
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
//   - a byte of the path, of the argv pointer array or of an argv string
//     (each checked whole, NUL included, since a string may begin in one
//     mapping and end in the next) lies outside private anonymous memory,
//     or in a private file mapping whose file the sandbox could write: a
//     page of such a mapping that was never written follows the page
//     cache, so a write(2) to the file changes it.
//
// Nothing in the sandbox can write another process's memory otherwise
// (ptrace and process_vm_writev are refused, /proc is read-only). A caller
// that passes needs no ptrace verification; one that fails gets it, or is
// refused in strict mode.
//
// trusted is a task whose memory the caller may share: cordon's own init,
// whose spawns are vfork children sharing its (multithreaded) memory.
func raceable(pid int, trusted int, ranges []span, sv *sandboxView) string {
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
	if a, why := unsafeRange("/proc/"+strconv.Itoa(pid)+"/maps", ranges, sv); why != "" {
		return fmt.Sprintf("exec arguments at %#x %s", a, why)
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

// span is a byte range [lo, hi) of a caller's memory.
type span struct{ lo, hi uint64 }

// mapping is one line of /proc/PID/maps, reduced to what unsafeRange needs.
type mapping struct {
	span
	// safe: private, and anonymous or backed by a file on a device the
	// sandbox cannot write.
	safe bool
}

// unsafeRange returns the first address of ranges that lies in memory that
// could change without the caller writing it, and why; "" when there is
// none. Every byte must lie in a mapping that is safe; the mappings a range
// spans must follow each other without a gap.
func unsafeRange(maps string, ranges []span, sv *sandboxView) (uint64, string) {
	m, err := readMaps(maps, sv)
	if err != nil {
		if len(ranges) > 0 {
			return ranges[0].lo, "cannot be located: " + err.Error()
		}
		return 0, "cannot be located: " + err.Error()
	}
	for _, r := range ranges {
		at := r.lo
		for at < r.hi {
			i := sort.Search(len(m), func(i int) bool { return m[i].hi > at })
			if i == len(m) || m[i].lo > at {
				return at, "lie outside any mapping"
			}
			if !m[i].safe {
				return at, "lie in memory another process or a file write could change"
			}
			at = m[i].hi
		}
	}
	return 0, ""
}

// readMaps reads a maps file in address order.
func readMaps(path string, sv *sandboxView) ([]mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 7f2c4a000000-7f2c4a021000 r--p 00000000 08:01 1835263  /usr/lib/x86_64-linux-gnu/libc.so.6
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || len(fields[1]) < 4 {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		mp := mapping{span: span{l, h}}
		if fields[1][3] == 'p' {
			if fields[4] == "0" {
				mp.safe = true // private anonymous: only the caller writes it
			} else if maj, min, ok := strings.Cut(fields[3], ":"); ok {
				ma, err1 := strconv.ParseUint(maj, 16, 32)
				mi, err2 := strconv.ParseUint(min, 16, 32)
				mp.safe = err1 == nil && err2 == nil && !sv.writableDevice(unix.Mkdev(uint32(ma), uint32(mi)))
			}
		}
		out = append(out, mp)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// argRanges returns the byte ranges an exec's arguments occupy in the
// caller's memory: the path and each argv string with its NUL, and the
// argv pointer array with its NULL.
func argRanges(d *Decision, ptrs []uint64, ptrSize int) []span {
	out := make([]span, 0, len(ptrs)+2)
	out = append(out, span{d.pathAddr, d.pathAddr + uint64(len(d.Exec.Path)) + 1})
	if d.argvAddr != 0 {
		out = append(out, span{d.argvAddr, d.argvAddr + uint64((len(ptrs)+1)*ptrSize)})
		for i, p := range ptrs {
			if i < len(d.Exec.Argv) {
				out = append(out, span{p, p + uint64(len(d.Exec.Argv[i])) + 1})
			}
		}
	}
	return out
}
