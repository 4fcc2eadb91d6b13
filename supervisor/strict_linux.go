package supervisor

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// kcmpVM is KCMP_VM from linux/kcmp.h: do two tasks share an address space?
const kcmpVM = 1

// raceable says why the caller of an exec could change its argv or path
// after the check without ptrace verification, or "" when it cannot:
//   - it has other threads, or is traced;
//   - another process may share its memory (see memoryPeer): the filter
//     lets memory be shared only by threads and by plain vfork, but a vfork
//     parent is suspended only until its own vfork child execs or dies, and
//     that child need not be the caller (P vforks C, C vforks the caller,
//     the caller kills C: P runs again on the caller's memory, and the
//     caller, reparented, no longer has P among its ancestors);
//   - a byte of the path, of the argv pointer array or of an argv string
//     (each checked whole, NUL included, since a string may begin in one
//     mapping and end in the next) lies outside private anonymous memory,
//     or in a private file mapping whose file the sandbox could write: a
//     page of such a mapping that was never written follows the page
//     cache, so a write(2) to the file changes it;
//   - a byte lies in memory the kernel itself may replace with zeros and
//     cordon cannot write the checked bytes back into (see settle):
//     a MAP_DROPPABLE mapping, a read-only anonymous one, a failed write.
//
// When it returns "", the checked bytes have just been written back into
// the caller's writable private memory, so pages the caller marked
// MADV_FREE hold them until the kernel reads them again.
//
// Nothing in the sandbox can write another process's memory otherwise
// (ptrace and process_vm_writev are refused, /proc is read-only). A caller
// that passes needs no ptrace verification; one that fails gets it, or is
// refused in strict mode.
//
// trusted is a task whose memory the caller may share: cordon's own init,
// whose spawns are vfork children sharing its (multithreaded) memory.
// compat says the caller runs 32-bit code (4-byte pointers), whose old
// mmap the filter cannot read (see settle).
func raceable(pid int, trusted int, ranges []span, sv *sandboxView, compat bool) string {
	st, err := proc.ReadStatus(pid)
	if err != nil {
		return "cannot read the caller's status: " + err.Error()
	}
	if st.TracerPid != 0 {
		return fmt.Sprintf("the caller is traced by process %d, which can rewrite its arguments", st.TracerPid)
	}
	if st.Threads != 1 {
		return fmt.Sprintf("the caller has %d threads", st.Threads)
	}
	if why := sv.memoryPeer(pid, st, trusted); why != "" {
		return why
	}
	a, why, pieces, ok := unsafeRangeQuery(pid, ranges, sv)
	if !ok {
		a, why, pieces = unsafeRange("/proc/"+strconv.Itoa(pid)+"/maps", ranges, sv)
	}
	if why == "" {
		a, why = settle(pid, pieces, compat && droppableKernel())
	}
	if why != "" {
		return fmt.Sprintf("exec arguments at %#x %s", a, why)
	}
	return ""
}

// maxPeerScan bounds how many processes memoryPeer looks at; a sandbox with
// more gets ptrace verification (or strict mode's refusal) instead.
const maxPeerScan = 2048

// memoryPeer says why a process other than the caller (pid, whose
// /proc/PID/status gave st) may share its memory, or "" when none can.
//
// Every process of the sandbox is listed from the sandbox's own proc
// (readdir lists every pid that exists throughout, wherever in the process
// tree it is or moves to), and its address-space layout (the start and end
// of code, data, heap, stack, arguments and environment in /proc/PID/stat,
// set at exec and unchangeable without CAP_SYS_RESOURCE) compared with the
// caller's: a process sharing the caller's memory has the same layout. A
// process with the same layout is then compared with kcmp(KCMP_VM) (a fork
// child keeps its parent's layout until it execs, without sharing its
// memory: a shell's & subshells, make -j): a separate copy is no peer, nor
// the parent when it is the trusted init; any other, or one that cannot be
// compared (its host pid not found, an error), is taken as a peer. New
// sharers can only be made by tasks already sharing the memory; the one way
// to hide one from the listing, a pid number wrapping around behind it, is
// caught by the sandbox's ns_last_pid going down (see readLastPid).
func (v *sandboxView) memoryPeer(pid int, st proc.Status, trusted int) string {
	// A candidate that exits while it is being checked may have vforked a
	// sharer born after the listing: list again (a few times at most).
	var why string
	for range maxPeerPasses {
		var again bool
		if why, again = v.memoryPeerPass(pid, st, trusted); !again {
			return why
		}
	}
	return why
}

// maxPeerPasses bounds memoryPeer's listings when candidates keep exiting
// or pids keep wrapping.
const maxPeerPasses = 3

// memoryPeerPass is one listing of memoryPeer; again says a candidate
// exited while it was checked, or pid numbers wrapped around during the
// listing, and why is then the refusal if no pass is left.
func (v *sandboxView) memoryPeerPass(pid int, st proc.Status, trusted int) (why string, again bool) {
	v.init()
	if v.err != nil {
		return "cannot list the sandbox's processes: " + v.err.Error(), false
	}
	if st.NSTgid <= 0 {
		return "cannot find the caller in the sandbox's pid namespace", false
	}
	procDir, err := v.openProc()
	if err != nil {
		return "cannot list the sandbox's processes: " + err.Error(), false
	}
	defer unix.Close(procDir)
	self, err := readStatAt(procDir, st.NSTgid)
	if err != nil {
		return "cannot read the caller's memory layout: " + err.Error(), false
	}
	trustedNS := -1
	if trusted > 0 {
		if t, err := proc.ReadStatus(trusted); err == nil && t.NSTgid > 0 {
			trustedNS = t.NSTgid
		}
	}
	before, err1 := readLastPid(v, procDir)
	pids, err2 := listSandboxPids(procDir, maxPeerScan)
	if err1 != nil || err2 != nil {
		return "cannot list the sandbox's processes: " + errors.Join(err1, err2).Error(), false
	}
	var (
		hosts *hostPids // taken at the first candidate
		fresh bool      // hosts was walked in this decision
	)
	for _, p := range pids {
		if p == st.NSTgid {
			continue
		}
		l, err := readStatAt(procDir, p)
		if err != nil {
			continue // gone
		}
		if l.State == 'Z' || l.State == 'X' || l.Layout == ([10]uint64{}) {
			// A thread group whose main thread exited is listed under it,
			// and its stat and kcmp then describe that thread, which has
			// no memory: the group's live threads (any memory, the
			// caller's included) cannot be told apart. Only a group with
			// no live thread left is past sharing anything.
			// Threads counts the zombie leader itself until it is
			// released (then 0, or no line once its signal handlers are
			// detached: fs/proc/array.c task_state): 2 or more means
			// live threads.
			b, err := readAt(procDir, strconv.Itoa(p)+"/status")
			if err != nil {
				continue // gone
			}
			n := proc.ParseStatus(b).Threads
			if n <= 1 {
				continue
			}
			return fmt.Sprintf("process %d of the sandbox runs %d threads without its main thread: their memory cannot be compared with the caller's", p, n-1), false
		}
		if l.Layout != self.Layout {
			continue // another address space
		}
		if p == self.PPid {
			// Its parent: forked from it (a copy of its memory), vforked
			// from it (sharing it), or its reaper since it was orphaned.
			// st.PPid is the same process only if it has the same pid
			// here: it may have been reparented between the two reads.
			if parent, err := proc.ReadStatus(st.PPid); err == nil && parent.NSTgid == p {
				if same, err := kcmpEqual(pid, st.PPid, kcmpVM); err == nil && !same {
					continue // a copy
				}
				if p == trustedNS {
					continue // the init's own spawn: trusted code
				}
			}
		}
		// Any other process with the caller's layout: a fork sibling or
		// cousin that has not exec'd yet (every & of a shell), or a vfork
		// sharer. kcmp tells them apart, given its pid on the host.
		if hosts == nil {
			hosts, fresh = v.hostPids(pid, nil)
		}
		distinct, identified := hosts.distinctMemory(pid, p, l.StartTime)
		if !identified && !fresh {
			// Not in the map kept from an earlier decision (born since,
			// or its pid reused): walk the tree again, once.
			hosts, fresh = v.hostPids(pid, hosts)
			distinct, _ = hosts.distinctMemory(pid, p, l.StartTime)
		}
		if distinct {
			continue
		}
		if now, err := readStatAt(procDir, p); err != nil || now.StartTime != l.StartTime || now.State == 'Z' || now.State == 'X' {
			return fmt.Sprintf("process %d of the sandbox, which had the caller's memory layout, exited while it was checked", p), true
		}
		return fmt.Sprintf("process %d of the sandbox may share the caller's memory", p), false
	}
	after, err := readLastPid(v, procDir)
	if err != nil {
		return "cannot tell whether pid numbers wrapped around while the sandbox's processes were listed: " + err.Error(), false
	}
	if after < before {
		// Listed again: a wrap is rare (every pid_max processes of the
		// sandbox's pid namespace: the host's too when it shares it),
		// and a pass that lists the processes with no wrap behind it is
		// the proof either way. Three wraps in a row refuse.
		return "pid numbers wrapped around while the sandbox's processes were listed", true
	}
	return "", false
}

// readLastPid is (*sandboxView).lastPid; tests replace it to make pids
// wrap.
var readLastPid = (*sandboxView).lastPid

// lastPid reads the last pid allocated in the sandbox's pid namespace.
// The kernel answers a read of ns_last_pid for the pid namespace of the
// task that reads it, whichever proc it is read from: when the sandbox has
// a namespace of its own (bubblewrap's tier), a process in it must read it
// (v.nsLastPid, the init's answer); otherwise the sandbox's namespace is
// the supervisor's, and dir's (the sandbox's proc) file tells.
func (v *sandboxView) lastPid(dir int) (int, error) {
	if v.nsLastPid != nil {
		return v.nsLastPid()
	}
	return lastPid(dir)
}

// hostPids maps the pids of the caller's pid namespace to the host's (the
// supervisor's), so that kcmp, which takes the supervisor's pids, can look
// at a process found in the sandbox's proc.
type hostPids struct {
	same bool        // the caller's pid namespace is the supervisor's
	ns   map[int]int // sandbox pid -> host pid
	err  error       // why the map could not be made
}

// sandboxHostPids maps the pids of caller's pid namespace. When that is not
// the supervisor's own, every process of it descends from its init (pid 1
// there: orphans are reparented to it or to a subreaper below it), found
// up caller's parents, and the tree is walked down from there through the
// host's task/*/children, each process's NStgid giving its sandbox pid. A
// process moving (reparented) or born during the walk may be missed; a
// missed candidate is refused.
func sandboxHostPids(caller int) *hostPids {
	self, err1 := pidNS("/proc/self/ns/pid")
	theirs, err2 := pidNS("/proc/" + strconv.Itoa(caller) + "/ns/pid")
	if err := errors.Join(err1, err2); err != nil {
		return &hostPids{err: err}
	}
	if self == theirs {
		return &hostPids{same: true}
	}
	init := caller
	for depth := 0; ; depth++ {
		st, err := proc.ReadStatus(init)
		if err != nil {
			return &hostPids{err: fmt.Errorf("finding the sandbox's init: %w", err)}
		}
		if st.NSTgid == 1 {
			if ns, err := pidNS("/proc/" + strconv.Itoa(init) + "/ns/pid"); err != nil || ns != theirs {
				return &hostPids{err: errors.New("the sandbox's init is not in the caller's pid namespace")}
			}
			break
		}
		if st.PPid <= 0 || depth > maxPeerScan {
			return &hostPids{err: errors.New("the sandbox's init is not among the caller's ancestors")}
		}
		init = st.PPid
	}
	m := map[int]int{1: init}
	queue := []int{init}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		for _, c := range proc.Children(h) {
			st, err := proc.ReadStatus(c)
			if err != nil || st.NSTgid <= 0 {
				continue // gone
			}
			if _, dup := m[st.NSTgid]; dup {
				continue // seen (moved during the walk)
			}
			if len(m) > maxPeerScan {
				return &hostPids{err: fmt.Errorf("more than %d processes", maxPeerScan)}
			}
			m[st.NSTgid] = c
			queue = append(queue, c)
		}
	}
	return &hostPids{ns: m}
}

// hostPids returns the sandbox's pid map kept from an earlier decision
// (fresh false), or walks the tree (fresh true) when there is none or the
// kept one is stale, and keeps the result. A kept map is only a guess:
// distinctMemory checks every pid it gives.
func (v *sandboxView) hostPids(caller int, stale *hostPids) (h *hostPids, fresh bool) {
	v.hostMu.Lock()
	if v.hosts != nil && v.hosts != stale {
		h = v.hosts
	}
	v.hostMu.Unlock()
	if h != nil {
		return h, false
	}
	h = sandboxHostPids(caller)
	if h.err == nil {
		v.hostMu.Lock()
		v.hosts = h
		v.hostMu.Unlock()
	}
	return h, true
}

// pidNS names the pid namespace at path (an ns/pid link).
func pidNS(path string) ([2]uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return [2]uint64{}, fmt.Errorf("reading a pid namespace: %w", err)
	}
	return [2]uint64{st.Dev, st.Ino}, nil
}

// distinctMemory reports whether the sandbox's process p, which started at
// start (its stat in the sandbox's proc), is proven by kcmp(KCMP_VM) not to
// share caller's address space. After kcmp its host pid must still name p
// (its NStgid) and the same start time: that process held the pid since
// it started, before the listing, so kcmp looked at it and not at a
// process reusing the pid or one a stale map names. identified says that
// it did.
func (h *hostPids) distinctMemory(caller, p int, start uint64) (distinct, identified bool) {
	if h.err != nil {
		return false, false
	}
	hp := p
	if !h.same {
		var ok bool
		if hp, ok = h.ns[p]; !ok {
			return false, false
		}
	}
	shared, err := kcmpEqual(caller, hp, kcmpVM)
	st, err1 := proc.ReadStatus(hp)
	s, err2 := proc.ReadStat(hp)
	if err1 != nil || err2 != nil || st.NSTgid != p || s.StartTime != start {
		return false, false
	}
	return err == nil && !shared, true
}

// readStatAt reads PID/stat below the proc directory dir.
func readStatAt(dir, pid int) (proc.Stat, error) {
	b, err := readAt(dir, strconv.Itoa(pid)+"/stat")
	if err != nil {
		return proc.Stat{}, err
	}
	return proc.ParseStat(b)
}

// lastPid reads the last pid allocated in the supervisor's own pid
// namespace (not necessarily that of the proc dir is: see
// (*sandboxView).lastPid).
func lastPid(dir int) (int, error) {
	b, err := readAt(dir, "sys/kernel/ns_last_pid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// listSandboxPids is listPids, a variable for memoryPeer's tests: their
// sandbox is the host, whose other processes (another package's tests run at
// the same time) must not decide them.
var listSandboxPids = listPids

// listPids lists the processes in the proc directory dir, at most limit.
func listPids(dir, limit int) ([]int, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var pids []int
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return pids, nil
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if p, err := strconv.Atoi(name); err == nil && p > 0 {
				pids = append(pids, p)
			}
		}
		if len(pids) > limit {
			return nil, fmt.Errorf("more than %d processes", limit)
		}
	}
}

// readAt reads a small file below the directory dir.
func readAt(dir int, name string) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 1024)
	n := 0
	for {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// kcmpEqual reports whether tasks a and b share the kernel resource typ
// (kcmp(2)); an error means it cannot be told.
func kcmpEqual(a, b, typ int) (bool, error) {
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), uintptr(typ), 0, 0, 0)
	if e != 0 {
		return false, os.NewSyscallError("kcmp", e)
	}
	return r == 0, nil
}

// span is a byte range [lo, hi) of a caller's memory.
type span struct {
	lo, hi uint64
	// data is what the check read there (hi-lo bytes), to be written back
	// (see settle); nil for a range that is only located.
	data []byte
}

// piece is the part of a checked range that lies in one private writable
// mapping, or in a private read-only anonymous one: memory the kernel may
// replace with zeros after the check (see settle).
type piece struct {
	span
	anon     bool // the mapping is anonymous (no file behind it)
	writable bool // the mapping is writable, so the check's bytes can be written back
}

// mapping is one line of /proc/PID/maps, reduced to what unsafeRange needs.
type mapping struct {
	span
	// safe: private, and anonymous or backed by a file on a device the
	// sandbox cannot write.
	safe     bool
	anon     bool // inode 0: no file behind it
	writable bool
}

// cut appends to pieces the part [at, end) of r when it lies in memory
// settle must look at: any private writable mapping (its pages may have
// been marked MADV_FREE, or be copies of a file's) and a private read-only
// anonymous one.
func cut(pieces []piece, r span, at, end uint64, anon, writable bool) []piece {
	if !writable && !anon {
		return pieces // a read-only private file mapping: the file's pages, which MADV_FREE cannot touch
	}
	if end > r.hi {
		end = r.hi
	}
	p := piece{span: span{lo: at, hi: end}, anon: anon, writable: writable}
	if uint64(len(r.data)) == r.hi-r.lo {
		p.data = r.data[at-r.lo : end-r.lo]
	}
	return append(pieces, p)
}

// unsafeRange returns the first address of ranges that lies in memory that
// could change without the caller writing it, and why; "" when there is
// none. Every byte must lie in a mapping that is safe; the mappings a range
// spans must follow each other without a gap. It also returns the pieces of
// the ranges settle must write back or refuse.
func unsafeRange(maps string, ranges []span, sv *sandboxView) (uint64, string, []piece) {
	m, err := readMaps(maps, sv)
	if err != nil {
		if len(ranges) > 0 {
			return ranges[0].lo, "cannot be located: " + err.Error(), nil
		}
		return 0, "cannot be located: " + err.Error(), nil
	}
	var pieces []piece
	for _, r := range ranges {
		at := r.lo
		for at < r.hi {
			i := sort.Search(len(m), func(i int) bool { return m[i].hi > at })
			if i == len(m) || m[i].lo > at {
				return at, "lie outside any mapping", nil
			}
			if !m[i].safe {
				return at, "lie in memory another process or a file write could change", nil
			}
			pieces = cut(pieces, r, at, m[i].hi, m[i].anon, m[i].writable)
			at = m[i].hi
		}
	}
	return 0, "", pieces
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
		mp := mapping{span: span{lo: l, hi: h}, anon: fields[4] == "0", writable: fields[1][1] == 'w'}
		if fields[1][3] == 'p' {
			if mp.anon {
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
// argv pointer array with its NULL; each with the bytes the check read
// there, as the kernel will read them on CONTINUE.
func argRanges(d *Verdict, ptrs []uint64, ptrSize int) []span {
	out := make([]span, 0, len(ptrs)+2)
	out = append(out, span{d.pathAddr, d.pathAddr + uint64(len(d.Exec.Path)) + 1, cstring(d.Exec.Path)})
	if d.argvAddr != 0 {
		n := uint64((len(ptrs) + 1) * ptrSize)
		out = append(out, span{d.argvAddr, d.argvAddr + n, encodePointers(ptrs, ptrSize)})
		for i, p := range ptrs {
			if i < len(d.Exec.Argv) {
				out = append(out, span{p, p + uint64(len(d.Exec.Argv[i])) + 1, cstring(d.Exec.Argv[i])})
			}
		}
	}
	return out
}

// cstring is s with its NUL, as it lies in the caller's memory.
func cstring(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// encodePointers is the pointer array ptrs with its NULL, ptrSize bytes
// each in the machine's byte order, as readPointers read it.
func encodePointers(ptrs []uint64, ptrSize int) []byte {
	b := make([]byte, (len(ptrs)+1)*ptrSize)
	for i, p := range ptrs {
		if ptrSize == 8 {
			binary.NativeEndian.PutUint64(b[i*8:], p)
		} else {
			binary.NativeEndian.PutUint32(b[i*4:], uint32(p))
		}
	}
	return b
}

// settle makes the pieces of an exec's arguments that lie in memory the
// kernel itself may replace with zeros hold, until the kernel reads them
// again on CONTINUE, exactly the bytes the check read; it returns the first
// address it cannot make so, and why ("" when all are).
//
// Private anonymous memory is written only by the caller, but the kernel
// may drop two kinds of its pages under memory pressure, and they read back
// as zeros ("push"+"x" on such a page becomes "push"):
//   - a clean page the caller marked MADV_FREE (mm/rmap.c,
//     try_to_unmap_one: a lazily freed folio that is not dirty is
//     discarded, a dirty one becomes a normal anonymous page again);
//   - any page of a MAP_DROPPABLE mapping (Linux 6.11+), dirty or not.
//
// So the checked bytes are written back with process_vm_writev: the write
// dirties each page (a page dropped between the read and the write gets
// the checked bytes back), and the caller, single-threaded, stopped in
// execve and sharing its memory with no one (see raceable), cannot mark it
// lazily free again. Memory that cannot be written back is refused: a
// read-only anonymous mapping (it may hold a lazily freed page), a
// droppable mapping (writing does not keep its pages) and any failed
// write. Read-only private file mappings are left alone: MADV_FREE refuses
// them, and their pages are the file's.
//
// Droppable mappings cannot be made by the sandbox's 64-bit callers: the
// seccomp filter refuses MAP_DROPPABLE in mmap's flags (and i386's mmap2).
// i386's old mmap takes its flags in memory, out of the filter's reach, so
// for a 32-bit caller scanDroppable asks for the mappings to be checked in
// /proc/PID/smaps (0.07 to 1 ms).
func settle(pid int, pieces []piece, scanDroppable bool) (uint64, string) {
	if len(pieces) == 0 {
		return 0, ""
	}
	for _, p := range pieces {
		if !p.writable {
			return p.lo, "lie in read-only anonymous memory, which the kernel may discard (MADV_FREE) after the check"
		}
		if uint64(len(p.data)) != p.hi-p.lo {
			return p.lo, "cannot be written back: what the check read there is not known"
		}
	}
	if scanDroppable {
		if a, why := droppable("/proc/"+strconv.Itoa(pid)+"/smaps", pieces); why != "" {
			return a, why
		}
	}
	if err := writeBack(pid, pieces); err != nil {
		return pieces[0].lo, "cannot be written back after the check (the kernel may discard lazily freed memory): " + err.Error()
	}
	return 0, ""
}

// mapDroppable is MAP_DROPPABLE (include/uapi/linux/mman.h, Linux 6.11+).
const mapDroppable = 0x08

// droppableKernel reports whether the kernel can make MAP_DROPPABLE
// mappings, found once by making one. Reading /proc/PID/smaps is most of
// the cost of strict mode's memory check (0.07 to 1 ms: the kernel walks
// the pages of every mapping up to the last one read), so it is skipped only
// where the kernel rejects the flag (older than 6.11, or without
// VM_DROPPABLE: 32-bit); any other answer counts as "can" (fail closed).
var droppableKernel = sync.OnceValue(func() bool {
	r, _, e := unix.Syscall6(unix.SYS_MMAP, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE,
		mapDroppable|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	if e == 0 {
		_, _, _ = unix.Syscall(unix.SYS_MUNMAP, r, pageSize, 0)
		return true
	}
	return e != unix.EINVAL && e != unix.EOPNOTSUPP
})

// droppable returns the first address of pieces' anonymous memory that lies
// in a MAP_DROPPABLE mapping, and why; "" when none does. Only
// /proc/PID/smaps tells (VmFlags "dp"): PROCMAP_QUERY's flags are only
// read, write, execute and shared. smaps is read up to the last mapping a
// piece lies in, and every such mapping must be found in it (fail closed).
func droppable(smaps string, pieces []piece) (uint64, string) {
	var starts []uint64 // the anonymous pieces' first addresses, sorted
	for _, p := range pieces {
		if p.anon {
			starts = append(starts, p.lo)
		}
	}
	if len(starts) == 0 {
		return 0, ""
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	f, err := os.Open(smaps)
	if err != nil {
		return starts[0], "cannot be checked for MAP_DROPPABLE: " + err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	// Small reads: the kernel formats (and walks the pages of) only as many
	// mappings as fill one read, so a scan that stops early costs less.
	sc.Buffer(make([]byte, pageSize), 1<<20)
	next := 0         // the first of starts not yet found in a mapping
	var lo, hi uint64 // the current mapping
	wanted := false   // the current mapping holds pieces
	for next < len(starts) && sc.Scan() {
		line := sc.Text()
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if !wanted {
				continue
			}
			if slices.Contains(strings.Fields(flags), "dp") {
				return starts[next], "lie in a MAP_DROPPABLE mapping, which the kernel may discard after the check"
			}
			for next < len(starts) && starts[next] < hi {
				next++
			}
			wanted = false
			continue
		}
		// 7ffd1c9e3000-7ffd1ca04000 rw-p 00000000 00:00 0   [stack]
		first, _, _ := strings.Cut(line, " ")
		l, h, ok := strings.Cut(first, "-")
		if !ok || strings.HasSuffix(first, ":") {
			continue
		}
		l64, err1 := strconv.ParseUint(l, 16, 64)
		h64, err2 := strconv.ParseUint(h, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		lo, hi = l64, h64
		if starts[next] < lo {
			break // a piece in no mapping: not what was checked
		}
		wanted = starts[next] < hi
	}
	if err := sc.Err(); err != nil {
		return starts[next%len(starts)], "cannot be checked for MAP_DROPPABLE: " + err.Error()
	}
	if next < len(starts) {
		return starts[next], "cannot be checked for MAP_DROPPABLE: not found in " + smaps
	}
	return 0, ""
}
