package supervisor

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// target is the executable an exec names, opened in the caller's root.
type target struct {
	pid      int  // the caller
	writable bool // on a mount the sandbox can write, or in memory
	fd       int  // O_PATH, or -1 when it could not be opened for a reason other than the ones the kernel would report
	id       policy.FileID
	path     string // canonical absolute path in the sandbox's view (symlinks followed)
	// mapped says the file is a process's image (/proc/PID/exe at its exec
	// event): the file a loader mapped, which is never a #! script
	// (binfmt_script and binfmt_misc hand the exec to an interpreter and
	// never become the image), so its head need not be read.
	mapped bool
}

// inRoot is how every file cordon looks at on the sandbox's behalf is
// opened: relative to the sandbox's root, so absolute symlinks resolve as
// they do for the caller and never on the host.
var inRoot = unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}

// openTarget opens abs (an absolute path in the caller's root, from absPath)
// as the kernel will when the caller runs it, and says what the kernel
// would say about running it before the policy is asked: ENOENT when it
// does not exist, EACCES when it is not a regular file with an execute bit.
// Shells probe every PATH entry with execve; those probes must fail the
// normal way, with no denial printed. root is the caller's root, from
// sandboxView.openRoot.
//
// A path through which the caller names itself (/proc/self/exe,
// /dev/fd/N) is looked up as the caller's own /proc entry; a /proc/PID/exe
// or /proc/PID/fd/N magic link is followed to the file it stands for, as
// the kernel does. When the file cannot be identified for any other reason
// the answer is EPERM: fail closed, never a decision by name.
func openTarget(pid, root int, abs string) (target, syscall.Errno) {
	t := target{pid: pid, fd: -1}
	if !strings.HasPrefix(abs, "/") {
		return t, unix.EPERM
	}
	if self, ok := selfPath(pid, root, abs); ok {
		abs = self
	}
	var fd int
	var err error
	if rest, ok := strings.CutPrefix(abs, "/proc/"); ok && procMagic(rest) {
		fd, err = openProcMagic(root, rest)
	} else {
		how := inRoot
		fd, err = unix.Openat2(root, abs, &how)
	}
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.ENAMETOOLONG, unix.EACCES:
		return t, err.(syscall.Errno)
	default:
		return t, unix.EPERM
	}
	return statTarget(pid, fd)
}

// procMagic reports whether rest (a path below /proc) is exactly a
// process's exe or one of its descriptors: PID/exe, PID/fd/N, and the same
// below PID/task/TID. Nothing may follow the magic link: what comes after
// one would be looked up in cordon's root, not the caller's.
func procMagic(rest string) bool {
	parts := strings.Split(rest, "/")
	if len(parts) >= 3 && parts[1] == "task" && digits(parts[0]) && digits(parts[2]) {
		parts = parts[2:]
	}
	switch {
	case len(parts) == 2 && digits(parts[0]) && parts[1] == "exe":
		return true
	case len(parts) == 3 && digits(parts[0]) && parts[1] == "fd" && digits(parts[2]):
		return true
	}
	return false
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// openProcMagic opens the file behind the magic link /proc/REST in the
// caller's root: the sandbox's own proc, where pids are the sandbox's.
func openProcMagic(root int, rest string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_DIRECTORY, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS}
	proc, err := unix.Openat2(root, "proc", &how)
	if err != nil {
		return -1, err
	}
	defer unix.Close(proc)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(proc, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		return -1, unix.EPERM
	}
	// procMagic allowed digits, "task", "exe" and "fd" only: the one link
	// followed is the last component.
	return unix.Openat(proc, rest, unix.O_PATH|unix.O_CLOEXEC, 0)
}

// openTargetFD opens the file behind the caller's descriptor fd (fexecve,
// execveat with AT_EMPTY_PATH): a memfd or a deleted file has no path, and
// is judged by what it is.
func openTargetFD(pid int, fd int32) (target, syscall.Errno) {
	f, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(int(fd)), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return target{pid: pid, fd: -1}, unix.EBADF // no such descriptor: what the kernel says
		}
		return target{pid: pid, fd: -1}, unix.EPERM
	}
	return statTarget(pid, f)
}

// statTarget checks an opened target as the kernel would and fills in its
// identity and canonical path. It takes ownership of fd.
func statTarget(pid, fd int) (target, syscall.Errno) {
	t := target{pid: pid, fd: -1}
	id, mode, err := fstatID(fd)
	if err != nil {
		unix.Close(fd)
		return t, unix.EPERM
	}
	if mode&unix.S_IFMT != unix.S_IFREG || mode&0o111 == 0 {
		unix.Close(fd)
		return t, unix.EACCES
	}
	t.fd, t.id = fd, id
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) == nil && sfs.Flags&unix.ST_RDONLY == 0 {
		t.writable = true // per-mount flags: the sandbox's own view
	}
	// For an fd opened inside the sandbox's mount namespace the kernel
	// renders the path as the sandbox sees it.
	if p, err := readlinkSelfFD(fd); err == nil {
		if strings.HasPrefix(p, "/memfd:") {
			t.writable = true
		}
		if strings.HasPrefix(p, "/") {
			t.path = p
		}
	}
	return t, 0
}

// readlinkSelfFD reads /proc/self/fd/FD with one readlinkat into a stack
// buffer for the usual short path (os.Readlink starts with a heap buffer
// and allocates the name as well).
func readlinkSelfFD(fd int) (string, error) {
	dir, name := selfFD(fd)
	var buf [512]byte
	n, err := unix.Readlinkat(dir, name, buf[:])
	if err != nil {
		return "", err
	}
	if n < len(buf) {
		return string(buf[:n]), nil
	}
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)) // longer than the buffer: it may have been cut
}

// ownFDs is cordon's own /proc/self/fd (O_PATH), opened when the process
// starts and never closed, so that it is no descriptor a run leaves
// behind: every exec names its file through it twice at the notification
// and twice at the exec event (readlinkSelfFD, readHead), and a lookup
// from it skips /proc, self and fd (about 1 µs each time). It cannot go
// stale: "self" was resolved to this process when it was opened, and a
// process keeps its pid (Go never forks without exec; O_CLOEXEC keeps it
// out of what cordon runs). -1 when it could not be opened (no /proc yet):
// the full path is used.
var ownFDs = func() int {
	fd, err := unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}()

// selfFD returns a directory descriptor and a name relative to it for
// cordon's own descriptor fd in /proc.
func selfFD(fd int) (int, string) {
	if ownFDs >= 0 {
		return ownFDs, strconv.Itoa(fd)
	}
	return unix.AT_FDCWD, "/proc/self/fd/" + strconv.Itoa(fd)
}

func fstatID(fd int) (policy.FileID, uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return policy.FileID{}, 0, err
	}
	return policy.FileID{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}, st.Mode, nil
}

const (
	// lookupTTL bounds how long a Lookup answer is reused: a program
	// installed on the PATH later is found within this time. Refreshing
	// costs a few ms (every rule's program on every PATH directory), so
	// not too often.
	lookupTTL = 30 * time.Second
	// maxDigestSize bounds what is hashed to recognise a renamed copy.
	maxDigestSize = 512 << 20
	// maxCached bounds the digest and path caches.
	maxCached = 4096
)

// files implements policy.Files for one sandbox: what a program name stands
// for on the sandbox's PATH, and what files contain. Everything is cached in
// a fileCache that the supervisor's and the tracer's views share; nothing
// is resolved or hashed unless a decision needs it. Each view has its own
// current exec (the decisions on the two threads are independent).
type files struct {
	*fileCache
	curMu   sync.Mutex
	current *target // guarded by curMu: the exec being decided
}

// fileCache is what every view of a sandbox's files shares.
type fileCache struct {
	rootPid    int // a process whose root is the sandbox's root
	sandbox    *sandboxView
	searchPath []string // the command's PATH
	// neverRun holds the device and inode of files that never run
	// (Options.NeverRun). Set before the first decision, then read-only.
	neverRun map[[2]uint64]bool

	mu      sync.Mutex
	lookups map[string]lookupEntry     // guarded by mu
	where   map[[2]uint64]string       // guarded by mu: a path of each file Lookup found
	digests map[policy.FileID][32]byte // guarded by mu
}

type lookupEntry struct {
	ids []policy.FileID
	at  time.Time
}

func newFiles(sandbox *sandboxView, searchPath string) *files {
	rootPid := sandbox.ref
	if searchPath == "" {
		searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	var dirs []string
	for _, d := range filepath.SplitList(searchPath) {
		if strings.HasPrefix(d, "/") {
			dirs = append(dirs, d)
		}
	}
	return &files{fileCache: &fileCache{
		rootPid:    rootPid,
		sandbox:    sandbox,
		searchPath: dirs,
		lookups:    map[string]lookupEntry{},
		where:      map[[2]uint64]string{},
		digests:    map[policy.FileID][32]byte{},
	}}
}

// view returns another view of the same caches, with its own current exec.
func (f *files) view() *files { return &files{fileCache: f.fileCache} }

func (f *files) setCurrent(t *target) {
	f.curMu.Lock()
	f.current = t
	f.curMu.Unlock()
}

func (f *files) cur() *target {
	f.curMu.Lock()
	defer f.curMu.Unlock()
	return f.current
}

func (f *files) rootPath() string {
	if f.rootPid <= 0 {
		return "/"
	}
	return "/proc/" + strconv.Itoa(f.rootPid) + "/root"
}

// Lookup implements policy.Files.
func (f *files) Lookup(name string) []policy.FileID {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.lookups[name]; ok && time.Since(e.at) < lookupTTL {
		return e.ids
	}
	var cands []string
	if strings.HasPrefix(name, "/") {
		cands = f.expand(name)
	} else if !strings.Contains(name, "/") {
		for _, d := range f.searchPath {
			cands = append(cands, f.expand(filepath.Join(d, name))...)
		}
	}
	var ids []policy.FileID
	root, err := unix.Open(f.rootPath(), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err == nil {
		defer unix.Close(root)
		seen := map[[2]uint64]bool{}
		for _, c := range cands {
			how := inRoot
			fd, err := unix.Openat2(root, c, &how)
			if err != nil {
				continue
			}
			id, mode, err := fstatID(fd)
			unix.Close(fd)
			key := [2]uint64{id.Dev, id.Ino}
			if err != nil || mode&unix.S_IFMT != unix.S_IFREG || seen[key] {
				continue
			}
			seen[key] = true
			f.where[key] = c
			ids = append(ids, id)
		}
	}
	f.lookups[name] = lookupEntry{ids: ids, at: time.Now()}
	return ids
}

// expand returns pattern itself, or its matches in the sandbox's view when
// it holds glob metacharacters.
func (f *files) expand(pattern string) []string {
	if !strings.ContainsAny(pattern, "*?[") {
		return []string{pattern}
	}
	prefix := strings.TrimSuffix(f.rootPath(), "/")
	matches, _ := filepath.Glob(prefix + pattern)
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, strings.TrimPrefix(m, prefix))
	}
	return out
}

// Digest implements policy.Files: SHA-256 of the file's content, cached by
// the whole FileID so a file rewritten in place is hashed again, and only
// for files on devices no mount of the sandbox can write (see below).
func (f *files) Digest(id policy.FileID) ([32]byte, bool) {
	cur := f.cur()
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.digests[id]; ok {
		return d, true
	}
	if id.Size > maxDigestSize {
		return [32]byte{}, false
	}
	var file *os.File
	if cur != nil && cur.fd >= 0 && cur.id == id {
		// Re-open the exec's own O_PATH fd for reading.
		fh, err := os.Open("/proc/self/fd/" + strconv.Itoa(cur.fd))
		if err != nil {
			return [32]byte{}, false
		}
		file = fh
	} else if p, ok := f.where[[2]uint64{id.Dev, id.Ino}]; ok {
		root, err := unix.Open(f.rootPath(), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			return [32]byte{}, false
		}
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: inRoot.Resolve})
		unix.Close(root)
		if err != nil {
			return [32]byte{}, false
		}
		file = os.NewFile(uintptr(fd), p)
	} else {
		return [32]byte{}, false
	}
	defer file.Close()
	got, _, err := fstatID(int(file.Fd()))
	if err != nil || got != id {
		return [32]byte{}, false // replaced since it was looked at
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(file, maxDigestSize+1)); err != nil {
		return [32]byte{}, false
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	if f.sandbox.writableDevice(id.Dev) {
		// A file the sandbox can write may change without a new mtime or
		// ctime: stores through a shared writable mapping after its first
		// write fault update neither. Hash it again every time.
		return sum, true
	}
	if len(f.digests) >= maxCached {
		// The workload chooses how many distinct files it runs: start over
		// rather than grow without bound.
		clear(f.digests)
	}
	f.digests[id] = sum
	return sum, true
}

// Resolve implements policy.Resolver: path as the current exec's caller
// would open it (relative to its working directory, in its root). The
// dynamic loader opens the program after the exec was decided, so a program
// that could be replaced by then does not count as identified: every
// directory walked, every symlink followed and the file itself must lie on
// read-only mounts (walkReadOnly).
func (f *files) Resolve(path string) (policy.Exec, bool) {
	cur := f.cur()
	if cur == nil || path == "" {
		return policy.Exec{}, false
	}
	root, err := f.sandbox.openRoot(cur.pid)
	if err != nil {
		return policy.Exec{}, false
	}
	defer unix.Close(root)
	abs, errno := absPath(cur.pid, root, unix.AT_FDCWD, path)
	if errno != 0 {
		return policy.Exec{}, false
	}
	t, errno := openTarget(cur.pid, root, abs)
	if errno != 0 {
		return policy.Exec{}, false
	}
	defer unix.Close(t.fd)
	if !walkReadOnly(root, abs) || f.neverRun[[2]uint64{t.id.Dev, t.id.Ino}] {
		return policy.Exec{}, false
	}
	f.mu.Lock()
	if len(f.where) >= maxCached {
		clear(f.where)
	}
	f.where[[2]uint64{t.id.Dev, t.id.Ino}] = t.path
	f.mu.Unlock()
	return policy.Exec{Path: path, Resolved: t.path, File: t.id, Known: true, Writable: t.writable}, true
}

// neverRun returns the device and inode of each file in paths, and of the
// regular files directly in each directory among them.
func neverRun(paths []string) map[[2]uint64]bool {
	ids := map[[2]uint64]bool{}
	add := func(p string) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			ids[[2]uint64{st.Dev, st.Ino}] = true
		}
	}
	for _, p := range paths {
		add(p)
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries {
				add(filepath.Join(p, e.Name()))
			}
		}
	}
	return ids
}
