package supervisor

import (
	"encoding/binary"
	"slices"
	"strconv"
	"unsafe"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// A dynamic loader run as a program (ld.so PROG) opens PROG itself, after
// its exec event: the check and the event decide PROG as it is then
// (files.Resolve, which requires it on mounts the sandbox cannot write,
// with one name), but anyone outside the sandbox who can write PROG's
// directory (the host, another sandbox of the same user) can rename
// another file in its place before the loader opens it. A red team ran rm
// so under --deny rm, 26 to 100 times in 300 (a rename loop next to a loop
// of ld.so PROG). So an allowed exec whose decision resolved loader
// programs is not let go at its exec event: the tracer follows the
// loader's system calls until it has opened each program decided, in
// order, and checks that the descriptor it got is that very file (its
// whole FileID), or kills it before any instruction of the program runs.
// The loader opens its program, by the path it was given and read-only,
// before any other file it reads (glibc's and musl's; a file it opens to
// write, LD_DEBUG_OUTPUT's, does not count): the first regular file
// opened read-only must be the next program decided, by path and by
// identity, or the loader is killed (a red team pointed LD_DEBUG_OUTPUT at
// a second name of PROG, so that a watch counting any open took it for
// PROG's and let go before the loader opened PROG; a read-only open of
// any other file, LD_AUDIT's library or the cache a bare name is looked up
// in, is a kill now). The content the loader then maps is not pinned as
// the kernel's image is: a writer of PROG's inode outside the sandbox can
// still change it (README, "Also open").
type loaderWatch struct {
	want []loadedProg // the programs decided, outermost loader's first
	n    int          // how many of want were opened
	// open is the open call whose entry was the last stop, if it was one.
	open  *pendingOpen
	stops int
	d     Verdict // the event's decision, for the report of a kill
}

// loadedProg is a program a dynamic loader was decided to run: the path the
// loader was given, the file it led to and that file's canonical path
// (files.Resolve).
type loadedProg struct {
	path, resolved string
	id             policy.FileID
}

// Loaded returns the canonical paths of the programs a dynamic loader run
// as this exec's program was decided to open (ld.so PROG: PROG), outermost
// loader's first; nil for any other exec.
func (d *Verdict) Loaded() []string {
	if len(d.loaded) == 0 {
		return nil
	}
	out := make([]string, len(d.loaded))
	for i, l := range d.loaded {
		out[i] = l.resolved
	}
	return out
}

// sameLoaded reports whether a and b are the same programs, in order.
func sameLoaded(a, b []loadedProg) bool {
	return slices.Equal(a, b)
}

// pendingOpen is an open call seen at its entry: its path and whether it
// opens read-only.
type pendingOpen struct {
	path   string
	rdonly bool
}

// maxLoaderStops bounds the system call stops before the last program is
// opened (a loader makes a handful): past it, the loader is killed.
const maxLoaderStops = 256

// syscallInfo is the kernel's struct ptrace_syscall_info: the head, then at
// an entry stop the call's number and arguments, at an exit stop its
// return value (a0) and whether that is an error.
type syscallInfo struct {
	syscallInfoHead
	a0   uint64
	args [6]uint64
	_    [8]byte
}

const (
	syscallInfoEntry = 1 // PTRACE_SYSCALL_INFO_ENTRY
	syscallInfoExit  = 2 // PTRACE_SYSCALL_INFO_EXIT
)

// watchLoader starts following pid's system calls for the loader programs
// d decided (see loaderWatch); false when it could not.
func (t *tracer) watchLoader(pid int, tr *tracee, d Verdict) bool {
	opts := unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACESYSGOOD
	if unix.PtraceSetOptions(pid, opts) != nil {
		return false
	}
	tr.watch = &loaderWatch{want: d.loaded, d: d}
	if unix.PtraceSyscall(pid, 0) != nil {
		tr.watch = nil
		return false
	}
	return true
}

// watchStop handles a stop of a tracee whose loader is followed.
func (t *tracer) watchStop(pid int, tr *tracee, ws unix.WaitStatus) {
	w := tr.watch
	switch {
	case ws.StopSignal() == unix.SIGTRAP|0x80:
		w.stops++
		if w.stops > maxLoaderStops {
			t.killLoader(pid, tr, "the dynamic loader did not open the program decided")
			return
		}
		var info syscallInfo
		_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(pid),
			unsafe.Sizeof(info), uintptr(unsafe.Pointer(&info)), 0, 0)
		if errno != 0 {
			t.killLoader(pid, tr, "the dynamic loader's system calls could not be read: "+errno.Error())
			return
		}
		switch info.op {
		case syscallInfoEntry:
			w.open = nil
			if p, ok, why := t.openCall(pid, &info); why != "" {
				t.killLoader(pid, tr, why)
				return
			} else if ok {
				w.open = p
			}
		case syscallInfoExit:
			p := w.open
			w.open = nil
			if p != nil && p.rdonly && int64(info.a0) >= 0 {
				id, regular, ok := fdIdentity(pid, int(info.a0))
				if !ok {
					t.killLoader(pid, tr, "what the dynamic loader opened could not be identified")
					return
				}
				if regular {
					if want := w.want[w.n]; p.path != want.path || id != want.id {
						t.killLoader(pid, tr, "the dynamic loader opened another file than the program decided")
						return
					}
					if w.n++; w.n == len(w.want) {
						tr.watch = nil
						t.detach(tr)
						return
					}
				}
			}
		}
		_ = unix.PtraceSyscall(pid, 0)
	case ws.StopSignal() == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_EXEC:
		t.killLoader(pid, tr, "the dynamic loader ran another program before opening the one decided")
	case ws.TrapCause() == unix.PTRACE_EVENT_STOP:
		_ = unix.PtraceSyscall(pid, 0)
	default:
		// Signal-delivery-stop: the signal goes on to the tracee.
		_ = unix.PtraceSyscall(pid, int(ws.StopSignal()))
	}
}

// openCall reads the open, openat or openat2 call at an entry stop: its
// path and whether it opens read-only. ok is false for any other call;
// why is set when an open's arguments cannot be read (fail closed).
func (t *tracer) openCall(pid int, info *syscallInfo) (p *pendingOpen, ok bool, why string) {
	var pathAddr, flags uint64
	switch openKind(info.arch, info.a0) {
	case kindOpen:
		pathAddr, flags = info.args[0], info.args[1]
	case kindOpenat:
		pathAddr, flags = info.args[1], info.args[2]
	case kindOpenat2:
		var how [8]byte
		at := info.args[2]
		if info.arch == unix.AUDIT_ARCH_I386 {
			at &= 0xffffffff
		}
		if n, err := t.mem.readAt(pid, at, how[:]); err != nil || n != len(how) {
			return nil, false, "the dynamic loader's open could not be read"
		}
		pathAddr, flags = info.args[1], binary.NativeEndian.Uint64(how[:])
	default:
		return nil, false, ""
	}
	if info.arch == unix.AUDIT_ARCH_I386 {
		pathAddr &= 0xffffffff
	}
	path, err := t.mem.readString(pid, pathAddr, unix.PathMax, errNameLen)
	if err != nil {
		return nil, false, "the dynamic loader's open could not be read"
	}
	return &pendingOpen{path: path, rdonly: flags&unix.O_ACCMODE == unix.O_RDONLY}, true, ""
}

const (
	kindNone = iota
	kindOpen
	kindOpenat
	kindOpenat2
)

// openKind says which open call nr is in arch's numbering, if any.
func openKind(arch uint32, nr uint64) int {
	switch arch {
	case unix.AUDIT_ARCH_X86_64:
		switch nr &^ x32Bit {
		case 2:
			return kindOpen
		case 257:
			return kindOpenat
		case 437:
			return kindOpenat2
		}
	case unix.AUDIT_ARCH_I386:
		switch nr {
		case 5:
			return kindOpen
		case 295:
			return kindOpenat
		case 437:
			return kindOpenat2
		}
	}
	return kindNone
}

// fdIdentity is the FileID of the file pid's descriptor fd is open on, and
// whether that is a regular file.
func fdIdentity(pid, fd int) (policy.FileID, bool, bool) {
	f, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return policy.FileID{}, false, false
	}
	defer unix.Close(f)
	id, mode, err := fstatID(f)
	if err != nil {
		return policy.FileID{}, false, false
	}
	return id, mode&unix.S_IFMT == unix.S_IFREG, true
}

// killLoader kills a followed loader before its program runs and reports
// why, as a refusal by the loader's rule.
func (t *tracer) killLoader(pid int, tr *tracee, why string) {
	_ = unix.Kill(pid, unix.SIGKILL)
	tr.killed = true
	d := tr.watch.d
	tr.watch = nil
	d.Pid, d.Errno = pid, unix.EPERM
	d.Result = policy.Result{Decision: policy.Deny, Rule: &policy.LoaderRule}
	d.Reason = ReasonChanged + ": " + why
	t.log.Debug("exec changed after check: killed", "pid", pid, "why", why, "ran", FormatArgv(d.Exec.Argv))
	if t.report != nil {
		t.report(&d)
	}
}
