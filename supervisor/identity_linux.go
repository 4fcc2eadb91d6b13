package supervisor

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/proc"
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
	// unsealed says the file is a memfd not sealed with F_SEAL_WRITE and
	// F_SEAL_SHRINK (see memfdSealed): a
	// shared writable mapping of it (which exec does not refuse for a memfd,
	// as it does with ETXTBSY for a file) can rewrite the program after its
	// exec was checked and verified, while it runs. Such a program never
	// runs (judge.decide). With the seal, no writable mapping exists (the
	// seal cannot be added while one does) and none can be made; seals are
	// never removed.
	unsealed bool
	// mapped says the file is a process's image (/proc/PID/exe at its exec
	// event): the file a loader mapped, which is never a #! script
	// (binfmt_script and binfmt_misc hand the exec to an interpreter and
	// never become the image), so its head need not be read.
	mapped bool
	// named says path is the name pathNames remembered, not one the
	// kernel rendered now: only the check's, for an exec its event
	// verifies.
	named bool
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
//
// names, when set, may supply the canonical path instead of the kernel
// rendering it (target.named; see pathNames): only for the supervisor's
// check, and never for a magic link's file.
func openTarget(pid, root int, abs string, names *pathNames) (target, syscall.Errno) {
	t := target{pid: pid, fd: -1}
	if !strings.HasPrefix(abs, "/") {
		return t, unix.EPERM
	}
	if self, ok := selfPath(pid, root, abs); ok {
		abs = self
	}
	var fd int
	var err error
	key := abs // no name is remembered for a magic link's file
	if rest, ok := strings.CutPrefix(abs, "/proc/"); ok && procMagic(rest) {
		fd, err = openProcMagic(root, rest)
		key = ""
	} else {
		how := inRoot
		fd, err = proc.Openat2(root, abs, &how)
	}
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.ENAMETOOLONG, unix.EACCES:
		return t, err.(syscall.Errno)
	default:
		return t, unix.EPERM
	}
	t, errno := statFile(pid, fd)
	if errno != 0 {
		return t, errno
	}
	if p, ok := names.get(root, key, t.id); ok {
		t.path, t.named = p, true
	} else {
		t.name(names, key)
	}
	return t, 0
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
	pfs, err := proc.Openat2(root, "proc", &how)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfs)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(pfs, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		return -1, unix.EPERM
	}
	// procMagic allowed digits, "task", "exe" and "fd" only: the one link
	// followed is the last component.
	return unix.Openat(pfs, rest, unix.O_PATH|unix.O_CLOEXEC, 0)
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
	t, errno := statFile(pid, fd)
	if errno == 0 {
		t.name(nil, "")
	}
	return t, errno
}

// statFile is statTarget without the canonical path: the file's identity
// and whether the sandbox can write it (openTarget may take the path from
// pathNames).
func statFile(pid, fd int) (target, syscall.Errno) {
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
	return t, 0
}

// name renders t's canonical path from its descriptor (and remembers it in
// names for called, when both are set). For an fd opened inside the
// sandbox's mount namespace the kernel renders the path as the sandbox
// sees it.
//
// A file with no path of its own gets none: the policy then decides it by
// identity alone, never by a name (policy: a Known file's name is its
// Resolved path, never the path called). That is a memfd, whose link text
// is "/memfd:" + a name its maker chose ("x/../../usr/bin/true" cleaned to
// a path an allow rule names: a red team ran its own binary under allow
// "/usr/bin/*" so), a deleted file (its old path and " (deleted)"), and
// one whose path is longer than the kernel renders (readlink fails:
// ENAMETOOLONG).
func (t *target) name(names *pathNames, called string) {
	t.path, t.named = "", false
	if p, err := readlinkSelfFD(t.fd); err == nil {
		switch {
		case strings.HasPrefix(p, "/memfd:"):
			t.writable = true
			t.unsealed = !memfdSealed(t.fd)
		case strings.HasSuffix(p, " (deleted)") && unlinked(t.fd):
		case strings.HasPrefix(p, "/"):
			t.path = p
			names.put(called, t.id, p, t.writable)
		}
	}
}

// unlinked reports whether fd's file has no name left (a link count of 0).
func unlinked(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) != nil || st.Nlink == 0
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
	lists   map[string]*dirListing     // guarded by mu: PATH directories' names (see Lookup)
	pre     *Prelisted                 // listings read on the host as the sandbox started (Prelist), or nil
	where   map[[2]uint64]string       // guarded by mu: a path of each file Lookup found
	digests map[policy.FileID][32]byte // guarded by mu
	// writable is Options.Writable: where the sandbox can write when its
	// mounts do not say (the landlock tier). Set before the first
	// decision, then read-only.
	writable []string
}

type lookupEntry struct {
	ids []policy.FileID
	at  time.Time
	// paths[i] are the candidate paths (PATH directory + name) that led to
	// ids[i], for LookupVouched; vouched is its answer, made on first use.
	paths   [][]string
	vouched []policy.FileID
	checked bool // vouched is made
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
		lists:      map[string]*dirListing{},
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
//
// A bare name (or glob) is looked for in every directory of the PATH.
// Rather than trying every name in every directory (a few hundred openat2
// calls for the built-in deny list, and a directory read per glob per
// directory), each directory is read once (listDir) and only the names it
// holds are opened; a directory that is another by a second name (/bin on
// a merged /usr) is skipped. A listing is a snapshot like the answers
// themselves: an answer built from one is dated at the listing's time, so
// it expires lookupTTL after the directory was read, as before.
func (f *files) Lookup(name string) []policy.FileID {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.lookups[name]; ok && time.Since(e.at) < lookupTTL {
		return e.ids
	}
	var ids []policy.FileID
	var paths [][]string
	at := time.Now()
	root, err := unix.Open(f.rootPath(), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		// Not an answer about the name (the sandbox's root is gone or
		// not there yet): nothing is cached, the next Lookup tries again.
		return nil
	}
	{
		defer unix.Close(root)
		var cands []string
		if strings.HasPrefix(name, "/") {
			cands = f.expand(root, name, &at)
		} else if !strings.Contains(name, "/") {
			glob := strings.ContainsAny(name, "*?[")
			var dirs [][2]uint64
			for _, d := range f.searchPath {
				l := f.listDir(root, d)
				if l == nil {
					// Not a directory the sandbox can list: tried by
					// name, as a shell's PATH search would.
					if !glob {
						cands = append(cands, filepath.Join(d, name))
					}
					continue
				}
				if l.at.Before(at) {
					at = l.at
				}
				if slices.Contains(dirs, l.key) {
					continue // the same directory by another name (/bin, /usr/bin)
				}
				dirs = append(dirs, l.key)
				if !glob {
					if _, ok := l.names[name]; ok {
						cands = append(cands, filepath.Join(d, name))
					}
					continue
				}
				cands = append(cands, l.match(d, name)...)
			}
		}
		seen := map[[2]uint64]int{}
		for _, c := range cands {
			how := inRoot
			fd, err := proc.Openat2(root, c, &how)
			if err != nil {
				continue
			}
			id, mode, err := fstatID(fd)
			unix.Close(fd)
			key := [2]uint64{id.Dev, id.Ino}
			if err != nil || mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			if i, ok := seen[key]; ok {
				paths[i] = append(paths[i], c)
				continue
			}
			seen[key] = len(ids)
			f.where[key] = c
			ids = append(ids, id)
			paths = append(paths, []string{c})
		}
	}
	f.lookups[name] = lookupEntry{ids: ids, at: at, paths: paths}
	return ids
}

// LookupVouched implements policy.Vouching: Lookup's files for name,
// without those the sandbox could have put under the name itself. A file
// counts when one of the paths it was found by lies on read-only mounts
// all the way (walkReadOnly: every directory, every symlink followed, the
// file): a PATH directory the sandbox can write (a virtualenv's bin,
// node_modules/.bin, the working directory) could hold a copy of python
// named ls, or a symlink to it, and an allow rule for ls must not take
// that for ls. Deny rules still use every file (Lookup).
//
// Mount flags bound what the sandbox can write only when its root is
// read-only (bubblewrap's tier). In the landlock tier the root is the
// host's, writable as a mount, and Landlock decides what is written: there
// the walk asks instead whether each directory and the file lie beneath
// the tier's writable set (Options.Writable, outsideWritable). A root
// that is writable with no writable set given (--isolation none, where the
// workload can write whatever its user can; tests' host views) vouches for
// every file, as before (README: --isolation none).
//
// It is made on first use from the answer Lookup cached, and dated with
// it: it expires when that answer does.
func (f *files) LookupVouched(name string) []policy.FileID {
	f.Lookup(name) // a fresh answer, or none
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.lookups[name]
	if !ok || time.Since(e.at) >= lookupTTL {
		return nil // no answer (see Lookup): nothing vouched for
	}
	if e.checked {
		return e.vouched
	}
	root, err := unix.Open(f.rootPath(), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	held := f.heldTest(root)
	if held == nil {
		e.vouched = e.ids
	} else {
		e.vouched = nil
		for i, id := range e.ids {
			for _, c := range e.paths[i] {
				if walkHeld(root, c, held) {
					e.vouched = append(e.vouched, id)
					break
				}
			}
		}
	}
	e.checked = true
	f.lookups[name] = e
	return e.vouched
}

// heldTest returns the test walkHeld applies to what the sandbox cannot
// change, seen from its root root: read-only mounts where the root is one
// (bubblewrap's tier), else what lies outside the tier's writable set (the
// landlock tier, whose mounts are the host's), else nil: nothing (the
// none tier).
func (f *files) heldTest(root int) func(fd int) bool {
	if readOnlyMount(root) {
		return readOnlyMount
	}
	if f.writable != nil {
		return outsideWritable(f.writable)
	}
	return nil
}

// dirListing is the names one PATH directory held when it was read, as
// the sandbox sees it.
type dirListing struct {
	key   [2]uint64 // the directory's device and inode
	names map[string]struct{}
	all   []string // the same names, for globs (a slice is cheaper to range over than a map)
	at    time.Time
}

// Prelisted holds directory listings read on the host while a sandbox
// starts (Prelist), for the sandbox's first decision: reading the PATH and
// the dynamic loader's directories is most of what that decision costs,
// and on the host it overlaps bubblewrap's start instead of delaying the
// command. A listing is used only for the directory it was read from: the
// sandbox's directory of the same name must have the same device and inode
// (see listDir); it expires lookupTTL after it was read, like any other.
type Prelisted struct {
	done  chan struct{}
	lists map[string]*dirListing // set before done is closed, read-only after
}

// Prelist starts reading, on another goroutine, the directories the
// supervisor would read to look up pol's programs on searchPath (the
// command's PATH) in the host's root. Pass the result as
// Options.Prelisted.
func Prelist(pol *policy.Policy, searchPath string) *Prelisted {
	p := &Prelisted{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		fs := newFiles(newSandboxView(0), searchPath)
		root, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			return
		}
		defer unix.Close(root)
		fs.mu.Lock()
		defer fs.mu.Unlock()
		// Only the directories Lookup would read: the programs' own
		// files are opened in the sandbox's root at the first decision
		// (opening them here too would be work thrown away, competing
		// with bubblewrap for the CPUs).
		at := time.Now()
		bare := false
		for _, name := range pol.Programs() {
			if strings.HasPrefix(name, "/") {
				fs.expand(root, name, &at)
			} else if !strings.Contains(name, "/") {
				bare = true
			}
		}
		if bare {
			for _, d := range fs.searchPath {
				fs.listDir(root, d)
			}
		}
		p.lists = fs.lists
	}()
	return p
}

// Prewarmed is a sandbox's file cache whose program lookups began as soon
// as the sandbox's init was known (Prewarm), before the command's first
// exec: the first decision asks whether the program is any rule's program
// under another name (Lookup of every name pol.Programs lists), about 140
// opens in the sandbox's root when cold, which would otherwise sit between
// the init's fork and the command's exec. The supervisor adopts the cache
// (Options.Prewarmed) when it is for the same root and PATH.
//
// The answers are the ones the first decision would have got, by the same
// code (Lookup, in the sandbox's root through /proc/PID/root, dated when
// each directory was read and kept lookupTTL like any other): the init's
// root is the sandbox's final root (bubblewrap runs the init after its
// last mount; cordon mounts nothing later), and until the host says go,
// nothing in the sandbox runs but the init, which writes no file. What
// can change meanwhile is only what the host changes in a bound
// directory, which a cached answer never sees within lookupTTL anyway;
// and the earlier date makes an answer expire earlier, never later.
type Prewarmed struct {
	fs         *files
	rootPid    int
	searchPath string
	never      []string // Options.NeverRun and Writable as given, which
	writable   []string // adopt compares with the supervisor's
	// ready is closed once fs's NeverRun identities and real writable
	// paths are set; done once every name was looked up.
	ready, done chan struct{}
}

// Prewarm starts looking up, on another goroutine, every program pol's
// rules name (pol.Programs) on opts.SearchPath in the root of process
// rootPid (0: cordon's own root, the HostView tiers), using
// opts.Prelisted's listings where they are the sandbox's own directories.
// The same goroutine first works out what New would from opts.NeverRun
// and opts.Writable, so that the supervisor made when the listener
// arrives waits for none of it. Pass the result as Options.Prewarmed,
// with the same NeverRun and Writable.
func Prewarm(pol *policy.Policy, rootPid int, opts Options) *Prewarmed {
	fs := newFiles(newSandboxView(rootPid), opts.SearchPath)
	fs.pre = opts.Prelisted
	w := &Prewarmed{fs: fs, rootPid: rootPid, searchPath: opts.SearchPath,
		never: slices.Clone(opts.NeverRun), writable: slices.Clone(opts.Writable),
		ready: make(chan struct{}), done: make(chan struct{})}
	names := pol.Programs()
	go func() {
		defer close(w.done)
		// Read by decisions only, which come after adopt (ready).
		fs.neverRun = neverRun(w.never)
		fs.writable = realWritable(w.writable)
		close(w.ready)
		for _, n := range names {
			// One name at a time, each under the cache's lock: a
			// decision that needs a name not reached yet looks it up
			// itself between two, instead of waiting for them all.
			fs.Lookup(n)
		}
	}()
	return w
}

// adopt returns the prewarmed cache for a supervisor of root rootPid with
// opts, or nil when w is nil or was made for another root, PATH, NeverRun
// or writable set. It does not wait for the lookups (a decision takes
// the cache's lock between two of them), only for the sets Prewarm
// works out first.
func (w *Prewarmed) adopt(rootPid int, opts Options) *files {
	if w == nil || w.rootPid != rootPid || w.searchPath != opts.SearchPath ||
		!slices.Equal(w.never, opts.NeverRun) || !slices.Equal(w.writable, opts.Writable) {
		return nil
	}
	<-w.ready
	return w.fs
}

// listing returns the prelisted listing of dir, or nil when there is none
// or the prelisting has not finished (the caller reads dir itself rather
// than wait).
func (p *Prelisted) listing(dir string) *dirListing {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.lists[dir]
	default:
		return nil
	}
}

// match returns the names in l that match the glob element pattern, joined
// to dir, sorted as filepath.Glob sorts them.
func (l *dirListing) match(dir, pattern string) []string {
	// A name can match only if it starts with the pattern's literal
	// prefix (ld- of ld-*.so*, python3. of python3.*): checked first, it
	// spares filepath.Match for nearly every name of a big directory.
	prefix := pattern
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		prefix = pattern[:i]
	}
	var ms []string
	for _, n := range l.all {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		if ok, _ := filepath.Match(pattern, n); ok {
			ms = append(ms, filepath.Join(dir, n))
		}
	}
	slices.Sort(ms)
	return ms
}

// listDir returns dir's listing, read in the sandbox's root at most
// lookupTTL ago, or nil when dir is not a directory cordon can read there.
// f.mu is held.
func (f *files) listDir(root int, dir string) *dirListing {
	if l, ok := f.lists[dir]; ok && time.Since(l.at) < lookupTTL {
		return l
	}
	delete(f.lists, dir)
	at := time.Now()
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: inRoot.Resolve}
	fd, err := proc.Openat2(root, dir, &how)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil
	}
	key := [2]uint64{st.Dev, st.Ino}
	if o := f.pre.listing(dir); o != nil && o.key == key && time.Since(o.at) < lookupTTL {
		// Read on the host while the sandbox started, and the sandbox's
		// dir is that very directory (same device and inode, so the same
		// entries: a mount inside it can cover a name but not add one).
		f.lists[dir] = o
		return o
	}
	for _, o := range f.lists {
		if o.key == key && time.Since(o.at) < lookupTTL {
			// The same directory by another name (/bin on a merged
			// /usr): one read, and the same snapshot time.
			f.lists[dir] = o
			return o
		}
	}
	l := &dirListing{key: key, at: at}
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil // a listing cut short would hide names: not used
		}
		if n <= 0 {
			break
		}
		// One string per read: the names are slices of it, not one
		// allocation each (a PATH directory holds a thousand names).
		b, str := buf[:n], string(buf[:n])
		for off := 0; len(b)-off >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[off+16 : off+18]))
			if reclen < 19 || reclen > len(b)-off {
				return nil
			}
			nm := str[off+19 : off+reclen]
			if i := strings.IndexByte(nm, 0); i >= 0 {
				nm = nm[:i]
			}
			if nm != "." && nm != ".." {
				l.all = append(l.all, nm)
			}
			off += reclen
		}
	}
	l.names = make(map[string]struct{}, len(l.all))
	for _, nm := range l.all {
		l.names[nm] = struct{}{}
	}
	f.lists[dir] = l
	return l
}

// expand returns pattern itself, or its matches in the sandbox's view when
// it holds glob metacharacters (the dynamic loader's /lib*/ld-*.so*, say).
// Each element with a metacharacter is matched against the listing of the
// directories matched so far (listDir, read in the sandbox's root, so a
// directory several patterns share is read once), as filepath.Glob would
// match it. f.mu is held; at is moved back to the oldest listing's time.
func (f *files) expand(root int, pattern string, at *time.Time) []string {
	if !strings.ContainsAny(pattern, "*?[") {
		return []string{pattern}
	}
	if strings.Contains(pattern, "\\") {
		return nil // no rule escapes; a pattern that does matches nothing
	}
	cur := []string{"/"}
	elems := strings.Split(strings.Trim(pattern, "/"), "/")
	for i, e := range elems {
		if e == "" {
			continue
		}
		if !strings.ContainsAny(e, "*?[") {
			for j := range cur {
				cur[j] = filepath.Join(cur[j], e)
			}
			continue
		}
		var next []string
		for _, d := range cur {
			l := f.listDir(root, d)
			if l == nil {
				continue // not a directory the sandbox can read
			}
			if l.at.Before(*at) {
				*at = l.at
			}
			next = append(next, l.match(d, e)...)
		}
		cur = next
		if len(cur) == 0 || i == len(elems)-1 {
			break
		}
	}
	return cur
}

// Digest implements policy.Files: SHA-256 of the file's content, cached by
// the whole FileID so a file rewritten in place is hashed again, and only
// for files on devices no mount of the sandbox can write (see below). The
// cache is a shortcut for the check, not a proof: a writer outside the
// sandbox changes a file through a shared mapping without a new FileID
// (see recordingFiles.Digest). The image at an exec event (mapped) is
// always hashed from the file the kernel mapped, whose content nothing can
// change while it is being executed (the kernel refuses writers to it,
// ETXTBSY), and that digest replaces the cached one.
func (f *files) Digest(id policy.FileID) ([32]byte, bool) {
	cur := f.cur()
	f.mu.Lock()
	defer f.mu.Unlock()
	image := cur != nil && cur.mapped && cur.fd >= 0 && cur.id == id
	if d, ok := f.digests[id]; ok && !image {
		return d, true
	}
	if id.Size > maxDigestSize {
		return [32]byte{}, false
	}
	var file *os.File
	p, ok := f.where[[2]uint64{id.Dev, id.Ino}]
	if cur != nil && cur.id == id && cur.fd < 0 && cur.path != "" {
		// The exec's file, remembered and not opened (judge.open): by
		// its name, which must still lead to it (checked below).
		p, ok = cur.path, true
	}
	if cur != nil && cur.fd >= 0 && cur.id == id {
		// Re-open the exec's own O_PATH fd for reading.
		fh, err := os.Open("/proc/self/fd/" + strconv.Itoa(cur.fd))
		if err != nil {
			return [32]byte{}, false
		}
		file = fh
	} else if ok {
		root, err := unix.Open(f.rootPath(), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			return [32]byte{}, false
		}
		fd, err := proc.Openat2(root, p, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: inRoot.Resolve})
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
	if !contentStable(int(file.Fd())) {
		return [32]byte{}, false
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

// contentStable reports whether what fd's file reads is what the kernel
// maps and runs, for as long as it runs, so that a digest of it says what
// runs. Only on the filesystems known to keep a file's content in the
// file, on the one device st_dev names (a list, so that anything else
// fails closed): not FUSE, whose
// server answers each reader as it likes (with direct I/O reads that skip
// the page cache exec's faults fill, a red team's server gave cordon one
// program and the kernel another), network and cluster filesystems, or
// overlayfs, whose file being executed is refused writers (ETXTBSY) while
// the layer's file it is read from is not (a red team rewrote a copy of
// ls's code in the lower layer while it ran, from a second sandbox); and,
// for those on a block device, not one whose blocks change beneath the
// filesystem (blockUnstable: a program is mapped, not read whole, at its
// exec, so a page evicted after the exec event is read again from the
// device when it faults; a red team rewrote a loop device's backing file
// under a copy of ls so, and its own code ran under an allowlist of ls).
// Not when any of it cannot be read.
func contentStable(fd int) bool {
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if unix.Fstatfs(fd, &sfs) != nil || unix.Fstat(fd, &st) != nil {
		return false
	}
	switch uint32(sfs.Type) {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		return true // the page cache is the storage
	case unix.BTRFS_SUPER_MAGIC, zfsMagic:
		// Their device numbers are not their disks': a pool on a loop
		// device is not recognised.
		return true
	case unix.XFS_SUPER_MAGIC:
		// A realtime file's data is on the realtime device, not st_dev's.
		if xflags, ok := fsXflags(fd); !ok || xflags&fsXflagRealtime != 0 {
			return false
		}
	case unix.EXT4_SUPER_MAGIC, unix.SQUASHFS_MAGIC, unix.CRAMFS_MAGIC, unix.ISOFS_SUPER_MAGIC,
		unix.UDF_SUPER_MAGIC, unix.MSDOS_SUPER_MAGIC, unix.EXFAT_SUPER_MAGIC, unix.NILFS_SUPER_MAGIC,
		unix.REISERFS_SUPER_MAGIC, ntfs3Magic, hfsplusMagic, jfsMagic:
	default:
		// Not erofs, f2fs or bcachefs either: each can keep a file's data
		// on devices other than st_dev's (a red team put an erofs file's
		// data on an extra loop device, device=, and rewrote it there).
		return false
	}
	return !blockUnstable(st.Dev)
}

// fsXflags returns fd's file's FS_IOC_FSGETXATTR flags (struct fsxattr's
// fsx_xflags).
func fsXflags(fd int) (uint32, bool) {
	var fsx struct {
		xflags, extsize, nextents, projid, cowextsize uint32
		_                                             [8]byte
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIocFsGetxattr, uintptr(unsafe.Pointer(&fsx)))
	return fsx.xflags, errno == 0
}

const (
	fsIocFsGetxattr = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsXflagRealtime = 0x1        // FS_XFLAG_REALTIME
)

// Filesystem types golang.org/x/sys/unix does not name (their own
// headers).
const (
	zfsMagic     = 0x2fc12fc1
	ntfs3Magic   = 0x7366746e
	hfsplusMagic = 0x482b
	jfsMagic     = 0x3153464a
)

// blockUnstable reports whether the block device dev is one whose blocks
// can change under its filesystem with no write through it: a loop device
// (its backing file can be written directly), a network or userspace block
// device (nbd, ublk, rbd, drbd), or a partition, device-mapper or md device
// built on one. A device with no block device in /sys (tmpfs, overlayfs,
// btrfs's anonymous device numbers) is not looked into: btrfs on a loop
// device is not recognised.
func blockUnstable(dev uint64) bool {
	p, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(dev), unix.Minor(dev)))
	if err != nil {
		return false
	}
	return sysBlockUnstable(p, 0)
}

// sysBlockUnstable is blockUnstable for the device at p in /sys, depth
// devices down a stack.
func sysBlockUnstable(p string, depth int) bool {
	if depth > 8 {
		return true // deeper than any stack worth trusting
	}
	for _, d := range []string{p, filepath.Dir(p)} { // a partition's disk is its directory's parent
		if _, err := os.Stat(filepath.Join(d, "loop")); err == nil {
			return true
		}
		name := filepath.Base(d)
		for _, prefix := range []string{"nbd", "ublkb", "rbd", "drbd"} {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
	}
	slaves, err := os.ReadDir(filepath.Join(p, "slaves"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	for _, sl := range slaves {
		q, err := filepath.EvalSymlinks(filepath.Join(p, "slaves", sl.Name()))
		if err != nil || sysBlockUnstable(q, depth+1) {
			return true
		}
	}
	return false
}

// Resolve implements policy.Resolver: path as the current exec's caller
// would open it (relative to its working directory, in its root). The
// dynamic loader opens the program after the exec was decided, so a program
// that could be replaced by then does not count as identified: every
// directory walked, every symlink followed and the file itself must lie on
// read-only mounts (walkReadOnly).
func (f *files) Resolve(path string) (policy.Exec, bool) {
	cur := f.cur()
	if cur == nil || !strings.Contains(path, "/") {
		// A name with no slash the loader looks for in its library
		// paths, not in the working directory.
		return policy.Exec{}, false
	}
	root, err := f.sandbox.openRoot(cur.pid)
	if err != nil {
		return policy.Exec{}, false
	}
	defer f.sandbox.release(root)
	abs, errno := absPath(cur.pid, root, unix.AT_FDCWD, path)
	if errno != 0 {
		return policy.Exec{}, false
	}
	t, errno := openTarget(cur.pid, root, abs, nil)
	if errno != 0 {
		return policy.Exec{}, false
	}
	defer unix.Close(t.fd)
	if !walkReadOnly(root, abs) || f.neverRun[[2]uint64{t.id.Dev, t.id.Ino}] {
		return policy.Exec{}, false
	}
	// The loader maps the program itself, and nothing refuses writers to
	// it while it runs (the kernel does so for the image it maps only): a
	// second name on a writable mount would let the sandbox rewrite it
	// after it was decided (a red team hard-linked one into the working
	// directory beforehand). One name, on read-only mounts, leaves writing
	// it to what runs outside the sandbox.
	var st unix.Stat_t
	if unix.Fstat(t.fd, &st) != nil || st.Nlink != 1 {
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

// memfdSealed reports whether the memfd fd (O_PATH) carries F_SEAL_WRITE
// and F_SEAL_SHRINK: without the second, truncating it to zero and back
// replaces the running program with zeros (a red team crashed an allowed
// sleep so).
// fcntl does not read seals through O_PATH: it is reopened read-only
// through /proc/self/fd. Anything it cannot tell reads as unsealed.
func memfdSealed(fd int) bool {
	dir, name := selfFD(fd)
	rd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(rd)
	seals, err := unix.FcntlInt(uintptr(rd), unix.F_GET_SEALS, 0)
	const need = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK
	return err == nil && seals&need == need
}
