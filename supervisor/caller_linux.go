package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// errForeign is why an exec whose caller is not in the sandbox's own mount
// namespace and root is refused: its paths would not mean what they mean in
// the sandbox, so nothing it asks to run can be identified.
var errForeign = errors.New("the caller is in a mount namespace or root of its own, where cordon cannot tell what a path names")

// Reasons an exec is refused before the policy could judge it.
const (
	reasonForeign      = "built-in: the caller is in a mount namespace or root of its own, where paths mean something else"
	reasonNoDir        = "built-in: the caller's working directory cannot be identified in the sandbox"
	reasonUnidentified = "built-in: cannot identify the program"
	reasonUnreadable   = "built-in: cannot read the program to tell whether it is a #! script"
	reasonNeverRun     = "built-in: cordon's policy files and trust store never run"
	reasonUnsealed     = "built-in: a program in memory (memfd) runs only when sealed against writes and shrinking (F_SEAL_WRITE, F_SEAL_SHRINK): otherwise it can be rewritten or truncated while it runs"
)

// sandboxView is what every caller is checked against before anything it
// names is looked up: the sandbox's mount namespace and root directory, and
// the devices mounted writable there. Nothing inside the sandbox can create
// or join a namespace (the filter refuses unshare, setns and clone with
// namespace flags) or change its root (no capabilities), so all of this is
// fixed for the sandbox's life, and a caller elsewhere is refused.
type sandboxView struct {
	ref int // a process in the sandbox (its init), or 0: cordon's own view

	once     sync.Once
	err      error
	mntNS    string
	root     [2]uint64       // device and inode of the root directory
	devState map[uint64]bool // every device mounted in the sandbox: true when some mount of it is writable

	// rootMnt is the unique id of the mount that is the sandbox's root
	// (STATX_MNT_ID_UNIQUE, Linux 6.8+: 64 bits, never reused), or 0 when
	// the kernel does not report one; then every caller's root is opened
	// and its mount namespace read (openRootSlow).
	rootMnt uint64
	// rootMu guards rootFD against Close: a descriptor number closed while
	// a decision resolves paths from it (the receive loop, the tracer,
	// Recognize's lookups on other goroutines) could name another file by
	// then. rootFD is handed out itself, not a duplicate (a dup and a
	// close in every decision, about 1.5 µs of it), and counted in users
	// until released: close only marks the view closed while any hand-out
	// is out, and the last release closes it.
	rootMu sync.RWMutex
	rootFD int  // guarded by rootMu: the sandbox's root (O_PATH), or -1
	users  int  // guarded by rootMu: hand-outs of rootFD not yet released
	closed bool // guarded by rootMu

	// hosts is the last map of the sandbox's pids to the host's that
	// strict mode's memoryPeer walked (guarded by hostMu), kept so that a
	// decision walks the tree only when a candidate is missing from it.
	hostMu sync.Mutex
	hosts  *hostPids

	// nsLastPid, when set, reads the last pid allocated in the sandbox's
	// own pid namespace (Options.LastPid); see lastPid.
	nsLastPid func() (int, error)
}

func newSandboxView(rootPid int) *sandboxView { return &sandboxView{ref: rootPid, rootFD: -1} }

// openProc opens the sandbox's proc (O_PATH directory), where its pids are
// listed. No descriptor is kept between calls: a supervisor abandoned by a
// bounded teardown must not leave one behind.
func (v *sandboxView) openProc() (int, error) {
	fd, err := unix.Open(v.refProc()+"/root/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the sandbox's proc: %w", err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1, errors.New("the sandbox's /proc is not a proc file system")
	}
	return fd, nil
}

func (v *sandboxView) refProc() string {
	if v.ref <= 0 {
		return "/proc/self"
	}
	return "/proc/" + strconv.Itoa(v.ref)
}

func (v *sandboxView) init() {
	v.once.Do(func() {
		proc := v.refProc()
		ns, err := os.Readlink(proc + "/ns/mnt")
		if err != nil {
			v.err = fmt.Errorf("reading the sandbox's mount namespace: %w", err)
			return
		}
		var st unix.Stat_t
		if err := unix.Stat(proc+"/root", &st); err != nil {
			v.err = fmt.Errorf("reading the sandbox's root: %w", err)
			return
		}
		devs, err := readMountDevices(proc + "/mountinfo")
		if err != nil {
			v.err = err
			return
		}
		v.mntNS, v.root, v.devState = ns, [2]uint64{st.Dev, st.Ino}, devs
		v.holdRoot(proc)
	})
}

// holdRoot opens the sandbox's root once, for openRoot to hand out, when
// the kernel names its mount by a unique id. A root that does not match
// what init read leaves rootMnt zero: every caller then gets the full
// proof.
func (v *sandboxView) holdRoot(proc string) {
	fd, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	mnt, dev, ino, ok := rootStatx(fd, "", unix.AT_EMPTY_PATH)
	if !ok || dev != v.root[0] || ino != v.root[1] {
		unix.Close(fd)
		return
	}
	v.rootMu.Lock()
	defer v.rootMu.Unlock()
	if v.closed {
		// Closed while init ran (New starts it on its own goroutine).
		unix.Close(fd)
		return
	}
	v.rootFD, v.rootMnt = fd, mnt
}

// rootStatx returns the unique mount id, device and inode of what dirfd
// and path name; ok is false when the kernel did not report all three.
func rootStatx(dirfd int, path string, flags int) (mnt, dev, ino uint64, ok bool) {
	var sx unix.Statx_t
	const want = unix.STATX_MNT_ID_UNIQUE | unix.STATX_INO
	if err := unix.Statx(dirfd, path, flags|unix.AT_STATX_SYNC_AS_STAT, want, &sx); err != nil {
		return 0, 0, 0, false
	}
	if sx.Mask&want != want || sx.Mnt_id == 0 {
		return 0, 0, 0, false
	}
	return sx.Mnt_id, unix.Mkdev(sx.Dev_major, sx.Dev_minor), sx.Ino, true
}

// close releases the held root, at once or when the last decision using
// it releases it. Later openRoot and heldRoot calls fail (closed).
func (v *sandboxView) close() {
	v.rootMu.Lock()
	defer v.rootMu.Unlock()
	v.closed = true
	if v.users == 0 && v.rootFD >= 0 {
		unix.Close(v.rootFD)
		v.rootFD = -1
	}
}

// acquire hands out the held root, counted until release.
func (v *sandboxView) acquire() (int, error) {
	v.rootMu.Lock()
	defer v.rootMu.Unlock()
	if v.closed || v.rootFD < 0 {
		return -1, errViewClosed
	}
	v.users++
	return v.rootFD, nil
}

// release gives back a root from openRoot or heldRoot: the held root's
// hand-out is counted back (and the root closed if the view was closed
// meanwhile), any other descriptor (openRootSlow's) closed. While a
// hand-out is out the held root stays open, so no other descriptor can
// have its number.
func (v *sandboxView) release(fd int) {
	if fd < 0 {
		return
	}
	v.rootMu.Lock()
	if fd == v.rootFD && v.users > 0 {
		v.users--
		if v.closed && v.users == 0 {
			unix.Close(v.rootFD)
			v.rootFD = -1
		}
		v.rootMu.Unlock()
		return
	}
	v.rootMu.Unlock()
	unix.Close(fd)
}

// errViewClosed is openRoot's answer after the supervisor closed: nothing
// can be identified any more.
var errViewClosed = errors.New("the supervisor is closed")

// openRoot returns a descriptor (O_PATH, the caller's to release) of pid's
// root directory after proving that it is the sandbox's root. It returns
// errForeign when it is not.
//
// The proof is one statx of /proc/PID/root: the unique id of the mount it
// is on, and its device and inode, must be those of the sandbox's root. A
// mount belongs to one mount namespace and its id is never reused, and a
// directory has one dentry, so the caller's root is then the very mount
// and directory cordon holds: every path resolves from it as from the
// caller's (the mounts a lookup crosses are that mount's children, whatever
// namespace the caller itself is in), and the held root is handed out
// instead of the caller's own. This is stronger than the namespace and
// inode comparison it replaces, which a bind mount of the root directory
// would pass, and it spares the exec path two lookups in /proc (ns/mnt and
// an open), each of which allocates proc inodes for a pid seen for the
// first time: about 8 µs of the decision.
func (v *sandboxView) openRoot(pid int) (int, error) {
	v.init()
	if v.err != nil {
		return -1, v.err
	}
	proc := "/proc/" + strconv.Itoa(pid)
	v.rootMu.RLock()
	closed, rootMnt := v.closed, v.rootMnt
	v.rootMu.RUnlock()
	if closed {
		return -1, errViewClosed
	}
	if rootMnt == 0 {
		return v.openRootSlow(proc)
	}
	mnt, dev, ino, ok := rootStatx(unix.AT_FDCWD, proc+"/root", 0)
	if !ok {
		// The pid is gone (ENOENT, ESRCH) or not ours to look at: the
		// slow path says which.
		return v.openRootSlow(proc)
	}
	if mnt != rootMnt || dev != v.root[0] || ino != v.root[1] {
		return -1, errForeign
	}
	return v.acquire()
}

// heldRoot returns a descriptor (O_PATH, the caller's to release) of the
// sandbox's root as cordon holds it, with no proof about any caller: -1
// when the kernel names no mount by a unique id (then there is no held
// root, and every caller's own root is opened and proven by openRoot), or
// after close.
//
// It is for an exec that will be verified at its exec event: the check
// resolves the caller's paths in the sandbox's root, and the event proves
// the caller's root (openRoot) before anything is decided there, killing
// the task if the proof fails. Every other way out of the check must call
// openRoot before it lets an exec run (see Supervisor.proveRoot).
func (v *sandboxView) heldRoot() int {
	v.init()
	if v.err != nil {
		return -1
	}
	fd, err := v.acquire()
	if err != nil {
		return -1
	}
	return fd
}

// openRootSlow opens proc's root and proves it the sandbox's by its mount
// namespace and its device and inode: for kernels without unique mount ids
// (before 6.8).
func (v *sandboxView) openRootSlow(proc string) (int, error) {
	fd, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	// Read after the open: if pid changed namespace in between (it cannot:
	// see sandboxView), the root opened is still compared below.
	var buf [64]byte // "mnt:[4026531841]"
	n, err := unix.Readlinkat(unix.AT_FDCWD, proc+"/ns/mnt", buf[:])
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	if n >= len(buf) || string(buf[:n]) != v.mntNS || st.Dev != v.root[0] || st.Ino != v.root[1] {
		unix.Close(fd)
		return -1, errForeign
	}
	return fd, nil
}

// writableDevice reports whether a file on device dev could be written from
// inside the sandbox: some mount of that device is writable there, or the
// device is not mounted in the sandbox at all (an overlay's layer, a memfd,
// anything cordon cannot account for).
func (v *sandboxView) writableDevice(dev uint64) bool {
	v.init()
	if v.err != nil {
		return true
	}
	w, mounted := v.devState[dev]
	return w || !mounted
}

// readMountDevices reads a mountinfo file: for every device mounted, whether
// any of its mounts is writable.
func readMountDevices(path string) (map[uint64]bool, error) {
	mounts, err := proc.Mounts(path)
	if err != nil {
		return nil, fmt.Errorf("reading the sandbox's mounts: %w", err)
	}
	devs := map[uint64]bool{}
	for _, m := range mounts {
		devs[m.Dev] = devs[m.Dev] || m.Writable
	}
	return devs, nil
}

// callerDir returns the absolute path, in the caller's root, of the
// directory its relative paths start from: its working directory, or the
// directory behind dirfd. The path is read as a string and then proven to
// name the very directory the caller holds (same device and inode when
// opened from the caller's root), so a directory the string does not reach
// is refused rather than guessed.
func callerDir(pid, root int, dirfd int32) (string, syscall.Errno) {
	link := "/proc/" + strconv.Itoa(pid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	held, err := unix.Open(link, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if dirfd != unix.AT_FDCWD && err == unix.ENOENT {
			return "", unix.EBADF // no such descriptor: what the kernel says
		}
		return "", unix.EPERM
	}
	defer unix.Close(held)
	var want unix.Stat_t
	if unix.Fstat(held, &want) != nil {
		return "", unix.EPERM
	}
	if want.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", unix.ENOTDIR
	}
	dir, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(dir, "/") {
		return "", unix.EPERM
	}
	fd, err := proc.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_DIRECTORY,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return "", unix.EPERM
	}
	defer unix.Close(fd)
	var got unix.Stat_t
	if unix.Fstat(fd, &got) != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		return "", unix.EPERM
	}
	return dir, 0
}

// absPath returns path as an absolute path in pid's root, joined to the
// directory it is relative to. It is not cleaned: "dir/../x" means what the
// kernel makes of it when dir is a symlink, so the string goes to a lookup
// that follows the kernel's rules.
func absPath(pid, root int, dirfd int32, path string) (string, syscall.Errno) {
	if path == "" {
		return "", unix.ENOENT // what execve says; AT_EMPTY_PATH is handled before
	}
	if strings.HasPrefix(path, "/") {
		return path, 0
	}
	dir, errno := callerDir(pid, root, dirfd)
	if errno != 0 {
		return "", errno
	}
	if dir == "/" {
		return "/" + path, 0
	}
	return dir + "/" + path, 0
}

// selfPath rewrites the paths through which a process names itself —
// /proc/self/..., /proc/thread-self/... and /dev/fd/N (when /dev/fd is the
// usual link to /proc/self/fd) — to the caller's own /proc/PID/... in the
// sandbox's proc: looked up by cordon, "self" would be cordon. ok is false
// when p is not such a path.
func selfPath(pid, root int, p string) (string, bool) {
	var rest string
	thread := false
	switch {
	case p == "/proc/self" || strings.HasPrefix(p, "/proc/self/"):
		rest = p[len("/proc/self"):]
	case p == "/proc/thread-self" || strings.HasPrefix(p, "/proc/thread-self/"):
		rest, thread = p[len("/proc/thread-self"):], true
	case strings.HasPrefix(p, "/dev/fd/"):
		buf := make([]byte, 64)
		n, err := unix.Readlinkat(root, "dev/fd", buf)
		if err != nil || string(buf[:n]) != "/proc/self/fd" {
			return "", false
		}
		rest = "/fd/" + p[len("/dev/fd/"):]
	default:
		return "", false
	}
	st, err := proc.ReadStatus(pid)
	tgid, tid := st.NSTgid, st.NSPid
	if err != nil || tgid <= 0 || tid <= 0 {
		return "", false
	}
	if thread {
		return "/proc/" + strconv.Itoa(tgid) + "/task/" + strconv.Itoa(tid) + rest, true
	}
	return "/proc/" + strconv.Itoa(tgid) + rest, true
}
