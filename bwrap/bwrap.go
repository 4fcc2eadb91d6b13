package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// Net selects the sandbox's network view.
type Net string

const (
	// NetHost shares the host's network namespace.
	NetHost Net = "host"
	// NetNone gives the sandbox an empty network namespace (loopback only).
	NetNone Net = "none"
	// NetFilter is NetNone to bubblewrap; cordon's proxy, on the
	// sandbox's loopback, is the only way out (see package netproxy).
	NetFilter Net = "filter"
)

// ParseNet parses the --net flag's value.
func ParseNet(s string) (Net, error) {
	switch Net(s) {
	case NetHost, NetNone, NetFilter:
		return Net(s), nil
	}
	return "", fmt.Errorf("unknown network mode %q (want host, none or filter)", s)
}

// ErrNotFound is returned by Find when no bwrap binary is on PATH.
var ErrNotFound = errors.New("bubblewrap (bwrap) not found on PATH; install it: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora), sudo pacman -S bubblewrap (Arch)")

// ErrUntrusted is returned (wrapped, with what was skipped and why) by Find
// when every bwrap on PATH is one it will not run.
var ErrUntrusted = errors.New("no trusted bubblewrap on PATH")

// Find returns the bubblewrap cordon runs: the first bwrap on PATH that
// nobody but root can replace (trusted), as its resolved path. cordon runs it
// on the host, outside any sandbox, so one the sandbox could have put on
// the PATH (an activated virtualenv's bin, node_modules/.bin, ~/.local/bin,
// all writable by the workload when they are in its writable tree) would
// run the next sandbox's workload as the user, unconfined: such a file is
// skipped, and when no trusted one is found the error names what was
// skipped and why. Relative PATH entries are never searched.
func Find() (string, error) {
	var skipped []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "bwrap")
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		resolved, err := trusted(p)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		return resolved, nil
	}
	if len(skipped) > 0 {
		return "", fmt.Errorf("%w: %s; cordon runs bubblewrap only from a path that "+
			"root owns and nobody else can write (the distribution's package installs /usr/bin/bwrap: sudo apt-get "+
			"install bubblewrap), since a copy the sandbox could write would run outside it", ErrUntrusted, strings.Join(skipped, "; "))
	}
	return "", ErrNotFound
}

// rootDirs are where cordon takes bubblewrap from: where a distribution
// installs it. A root sandbox writes files that root owns, so ownership
// cannot tell them from the system's, wherever it may write (a working
// directory under /usr, as a container's /usr/src/app, or /usr/local/bin,
// /opt/x/bin on another user's PATH); a root run refuses to make these
// writable (RootDirHeld), and no user's cordon takes one from elsewhere.
var rootDirs = []string{"/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/nix/store/", "/gnu/store/"}

// RootDirHeld says where a sandbox run by root, writing the real path w
// (a working directory or a writable bind, symlinks resolved), could leave
// a bubblewrap Find would take: w is, holds or lies inside a store of
// rootDirs, holds one of the others, or is the bwrap in one. It returns
// that directory, or "". For any other user a sandbox's files are that
// user's, and Find takes none of them.
func RootDirHeld(w string) string {
	w = filepath.Clean(w)
	for _, d := range rootDirs {
		store := strings.HasSuffix(d, "/store/")
		d = filepath.Clean(d)
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real // /bin is /usr/bin on a merged /usr
		}
		if strictlyUnder(d, w) || w == d || (store && strictlyUnder(w, d)) || w == filepath.Join(d, "bwrap") {
			return d
		}
	}
	return ""
}

// trusted returns p's resolved path when it is bubblewrap that only root
// can change: an ELF file named bwrap (a root-owned program of another
// name reached through a planted symlink, mvn or npx reading the working
// directory's configuration, must not stand in for it), writable by no
// group or other, in directories that are root's and writable by nobody
// else or sticky (/tmp: then only an entry's owner, root here, can replace
// it); and only in rootDirs (directly, or anywhere below the stores),
// whoever runs cordon.
func trusted(p string) (string, error) {
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s: %v", p, err)
	}
	resolved, err = filepath.Abs(resolved)
	if err != nil {
		return "", fmt.Errorf("%s: %v", p, err)
	}
	if filepath.Base(resolved) != "bwrap" {
		return "", fmt.Errorf("%s: leads to %s, which is not bubblewrap", p, resolved)
	}
	if !slices.ContainsFunc(rootDirs, func(d string) bool {
		rest, ok := strings.CutPrefix(resolved, d)
		return ok && (!strings.Contains(rest, "/") || strings.HasSuffix(d, "/store/"))
	}) {
		return "", fmt.Errorf("%s: %s is not in the system's directories (%s), where no sandbox run by root could have written it",
			p, resolved, strings.Join(rootDirs, ", "))
	}
	for c := resolved; ; c = filepath.Dir(c) {
		fi, err := os.Lstat(c)
		if err != nil {
			return "", fmt.Errorf("%s: %v", p, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "", fmt.Errorf("%s: cannot read the owner of %s", p, c)
		}
		switch {
		case st.Uid != 0:
			return "", fmt.Errorf("%s: %s belongs to uid %d, not root", p, c, st.Uid)
		case fi.Mode()&os.ModeSymlink != 0:
			return "", fmt.Errorf("%s: %s changed while it was checked", p, c)
		case fi.Mode().Perm()&0o022 != 0 && (c == resolved || fi.Mode()&os.ModeSticky == 0):
			return "", fmt.Errorf("%s: %s is writable by others than root (mode %v)", p, c, fi.Mode())
		}
		if c == "/" {
			// Read only once its owners are known to be root.
			if head, err := readHead4(resolved); err != nil || string(head) != "\x7fELF" {
				return "", fmt.Errorf("%s: %s is not an executable bubblewrap (ELF) file", p, resolved)
			}
			return resolved, nil
		}
	}
}

// Spec describes one sandbox.
type Spec struct {
	// Dir is the working directory; it is bound writable unless it is "/".
	Dir string
	// RW and RO are extra paths bound read-write and read-only at the same
	// place inside the sandbox.
	RW, RO []string
	// ROTry are bound read-only like RO, but one that no longer exists
	// when bwrap starts is left out (bwrap --ro-bind-try): entries of a
	// directory listed at start that another program may remove meanwhile.
	ROTry []string
	// Net is the network mode; empty means NetHost.
	Net Net
	// Exe is the absolute path of a file that must be visible inside the
	// sandbox at the same path (cordon's own binary, which plays the init).
	// It is bound last, so it shows through a private /tmp.
	Exe string
	// Command is what bwrap runs inside the sandbox.
	Command []string
	// Hide lists directories covered by an empty tmpfs, and HideFiles files
	// covered by /dev/null, after every bind: the sandbox cannot see or
	// connect to what they hold (the cordon daemon's socket and token; a
	// Unix socket on a read-only mount is still connectable). Each path must
	// exist.
	Hide, HideFiles []string
	// Protect lists existing files and directories the sandbox must not
	// change, remove or replace although a writable bind holds them (the
	// policy files the next run would load, the trust store). Each is bound
	// read-only onto itself, and every directory between it and the
	// writable bind that holds it is bound onto itself, writable as before:
	// a mount point cannot be renamed or removed, so no parent can be moved
	// aside and replaced either. Paths no writable bind holds are left out.
	Protect []string
	// Private lists directories replaced by an empty, writable tmpfs
	// that is discarded with the sandbox, mounted in depth order with the
	// binds, so binds below it (RW, RO) show through it. It gives a view
	// whose own directory is writable without that directory on the host
	// being so: a name created in it never reaches the host (a git common
	// directory whose lock files must be creatable, while hooks/ or
	// commondir created beside them must not reach the user's git).
	Private []string
	// Unreadable lists files and directories the sandbox must not read,
	// each covered after every bind by an empty object of mode 000 on a
	// read-only mount: the sandbox has no capabilities, so opening it fails
	// with EACCES even for uid 0, and its mode cannot be changed (EROFS). A
	// directory gets a tmpfs; a file gets UnreadableFile, an empty file of
	// mode 000 on the host, bound over it.
	Unreadable     []Unreadable
	UnreadableFile string
	// Privileged means bwrap runs as root. bwrap then keeps the caller's
	// capabilities in the sandbox unless told otherwise, which would let
	// the command remount, trace or escape; Args drops them all.
	Privileged bool
}

// Args returns bwrap's arguments (without the program name) for s.
//
// The layout: read-only root, fresh /proc, minimal /dev, private /tmp, the
// working directory writable, extra binds in the order given, a new pid
// namespace whose init dies with bwrap. No --new-session: on a terminal the
// launcher manages the foreground process group instead, and the seccomp
// filter refuses TIOCSTI/TIOCLINUX.
func (s *Spec) Args() ([]string, error) {
	if len(s.Command) == 0 {
		return nil, errors.New("bwrap spec: empty command")
	}
	a := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		// Read-only /proc: no process can write another's memory through
		// /proc/PID/mem (and so change an allowed program's arguments
		// after cordon checked them).
		"--remount-ro", "/proc",
		"--tmpfs", "/tmp",
	}
	for _, b := range s.binds() {
		if b.op == "--tmpfs" {
			a = append(a, b.op, b.path)
			continue
		}
		a = append(a, b.op, b.path, b.path)
	}
	// After every bind, so no bind of a parent (or a protected parent's
	// read-only self-bind) can cover them again.
	for _, u := range s.Unreadable {
		if s.inUnreadableDir(u.Path) {
			continue // --deny-read D and D/file: D's tmpfs covers both
		}
		if u.Dir {
			a = append(a, "--perms", "0000", "--tmpfs", u.Path, "--remount-ro", u.Path)
			continue
		}
		if s.UnreadableFile == "" {
			return nil, fmt.Errorf("bwrap spec: unreadable file %s without a placeholder", u.Path)
		}
		a = append(a, "--ro-bind", s.UnreadableFile, u.Path)
	}
	for _, p := range s.Hide {
		a = append(a, "--tmpfs", p)
	}
	for _, p := range s.HideFiles {
		a = append(a, "--ro-bind", "/dev/null", p)
	}
	if s.Exe != "" {
		a = append(a, "--ro-bind", s.Exe, s.Exe)
	}
	a = append(a, "--unshare-pid", "--die-with-parent")
	if s.Privileged {
		a = append(a, "--cap-drop", "ALL")
	}
	switch s.Net {
	case NetNone, NetFilter:
		a = append(a, "--unshare-net")
	case NetHost, "":
	default:
		return nil, fmt.Errorf("bwrap spec: unknown network mode %q", s.Net)
	}
	if s.Dir != "" {
		a = append(a, "--chdir", s.Dir)
	}
	a = append(a, "--")
	return append(a, s.Command...), nil
}

// binds is the spec's binds and private tmpfs mounts in the order they are
// mounted, each path once per change of what is mounted there.
func (s *Spec) binds() []bind {
	// A bind hides whatever was mounted below its path before it, so
	// parents go first: --ro ~ must not cover a writable working directory
	// or --rw ~/.cache. Binds of equal depth keep their order (a later --ro
	// of the same path wins).
	var binds []bind
	if s.Dir != "" && filepath.Clean(s.Dir) != "/" {
		binds = append(binds, bind{"--bind", s.Dir})
	}
	for _, p := range s.RW {
		binds = append(binds, bind{"--bind", p})
	}
	for _, p := range s.RO {
		binds = append(binds, bind{"--ro-bind", p})
	}
	for _, p := range s.ROTry {
		binds = append(binds, bind{"--ro-bind-try", p})
	}
	for _, p := range s.Private {
		binds = append(binds, bind{"--tmpfs", p})
	}
	binds = protect(binds, s.Protect)
	// An unreadable or hidden path's parents are pinned as a protected
	// path's are: a parent moved aside in one run (mv ~/.ssh ~/.s; the
	// daemon directory's parent, which a red team renamed so that the next
	// run neither hid it nor found it where the daemon's clients look)
	// would otherwise take it out from under the rule for the next.
	var covered []string
	for _, u := range s.Unreadable {
		if !s.inUnreadableDir(u.Path) { // covered by its directory: no parent to pin
			covered = append(covered, u.Path)
		}
	}
	covered = append(append(covered, s.Hide...), s.HideFiles...)
	binds = pinParents(binds, covered)
	sort.SliceStable(binds, func(i, j int) bool { return binds[i].depth() < binds[j].depth() })
	// A path two rules ask for alike (a git directory's config, protected
	// by the git layout and by the files policy) is mounted once: each
	// read-only bind costs bubblewrap a mount and a remount (0.1-0.2 ms
	// here). Only a repeat of the last bind at that path goes, so a later
	// --ro-bind of a path still wins over its earlier --bind; binds of a
	// path's parents all sort before it, so nothing lands between.
	lastOp := make(map[string]string, len(binds))
	out := binds[:0]
	for _, b := range binds {
		p := filepath.Clean(b.path)
		if lastOp[p] == b.op {
			continue
		}
		lastOp[p] = b.op
		out = append(out, b)
	}
	return out
}

// WritablePaths lists the paths the spec binds writable (the working
// directory, --rw and the files policy's writable binds, the parents it
// pins), each where its last bind is a writable one and no hidden
// directory covers it: each must be a mount point in the sandbox with the
// file it had when the spec was made (the runner checks, checkLayout).
func (s *Spec) WritablePaths() []string {
	var out []string
	for _, b := range s.lastBinds() {
		if b.op == "--bind" && !s.hidden(b.path) {
			out = append(out, b.path)
		}
	}
	return out
}

// lastBinds is, for each path the spec binds (cleaned, in the order of its
// first bind), the last bind at that path: what is mounted there in the end.
func (s *Spec) lastBinds() []bind {
	at := map[string]int{}
	var out []bind
	for _, b := range s.binds() {
		p := filepath.Clean(b.path)
		if i, ok := at[p]; ok {
			out[i].op = b.op
			continue
		}
		at[p] = len(out)
		out = append(out, bind{b.op, p})
	}
	return out
}

// hidden reports whether a tmpfs mounted after every bind covers p: a
// hidden directory's, at p or above it, or an unreadable directory's above
// it (at p, the unreadable directory is its own cover).
func (s *Spec) hidden(p string) bool {
	return slices.ContainsFunc(s.Hide, func(h string) bool { return p == filepath.Clean(h) }) || s.hiddenBelow(p)
}

// hiddenBelow is hidden for the directories strictly above p only.
func (s *Spec) hiddenBelow(p string) bool {
	return slices.ContainsFunc(s.Hide, func(h string) bool { return strictlyUnder(p, h) }) || s.inUnreadableDir(p)
}

// inUnreadableDir reports whether p lies strictly inside an unreadable
// directory: its read-only empty tmpfs leaves nothing of p (and no place
// for a cover of p).
func (s *Spec) inUnreadableDir(p string) bool {
	return slices.ContainsFunc(s.Unreadable, func(u Unreadable) bool { return u.Dir && strictlyUnder(p, u.Path) })
}

// strictlyUnder reports whether p lies below the directory d.
func strictlyUnder(p, d string) bool {
	return strings.HasPrefix(filepath.Clean(p), strings.TrimSuffix(filepath.Clean(d), "/")+"/")
}

// ReadOnlyPaths lists the paths the spec makes read-only inside the sandbox
// that nothing mounted later at the same path makes writable again: the
// read-only binds (must; try: those bound only if they still exist), the
// protected paths' own binds, the unreadable covers. A layout bubblewrap set
// up as asked has each on a read-only mount; one whose path changed between
// the spec and bubblewrap's mount (a link swapped in by another sandbox)
// may not (the runner checks, checkLayout).
func (s *Spec) ReadOnlyPaths() (must, try []string) {
	// What a hidden directory's empty tmpfs covers is not there at all.
	for _, b := range s.lastBinds() {
		switch {
		case s.hidden(b.path):
		case b.op == "--ro-bind":
			must = append(must, b.path)
		case b.op == "--ro-bind-try":
			try = append(try, b.path)
		}
	}
	for _, u := range s.Unreadable {
		if p := filepath.Clean(u.Path); !s.hidden(p) {
			must = append(must, p)
		}
	}
	return must, try
}

// CoverKind says what a Cover puts over its path.
type CoverKind int

const (
	// CoverFile is UnreadableFile bound read-only over an unreadable file.
	CoverFile CoverKind = iota
	// CoverEmptyDir is the read-only tmpfs of mode 0000 over an
	// unreadable directory.
	CoverEmptyDir
	// CoverTmpfs is the empty tmpfs over a Hide directory.
	CoverTmpfs
	// CoverNull is /dev/null bound over a HideFiles file.
	CoverNull
)

// Cover is a path the spec covers so that the sandbox cannot read what is
// there, and with what.
type Cover struct {
	Path string
	Kind CoverKind
}

// Covers lists the paths the spec covers (Unreadable, Hide, Private, HideFiles),
// each with what must be found there in the sandbox, but for a path inside
// another covered directory: the tmpfs over that directory leaves nothing
// of it. Being read-only is not the proof of a cover: a file the sandbox
// sees read-only anyway is as readable as before when the cover landed
// elsewhere (a directory on the path swapped for a link while bubblewrap
// mounted it); what is at the path must be the cover itself (the runner
// checks, checkLayout).
func (s *Spec) Covers() []Cover {
	var all []Cover
	for _, u := range s.Unreadable {
		k := CoverFile
		if u.Dir {
			k = CoverEmptyDir
		}
		all = append(all, Cover{filepath.Clean(u.Path), k})
	}
	for _, p := range s.Hide {
		all = append(all, Cover{filepath.Clean(p), CoverTmpfs})
	}
	// A Private directory's tmpfs, where nothing later binds the same path:
	// redirected, the sandbox would write the host's directory instead.
	for _, b := range s.lastBinds() {
		if b.op == "--tmpfs" {
			all = append(all, Cover{b.path, CoverTmpfs})
		}
	}
	for _, p := range s.HideFiles {
		all = append(all, Cover{filepath.Clean(p), CoverNull})
	}
	out := make([]Cover, 0, len(all))
	for _, c := range all {
		// Not strictly inside a hidden or unreadable directory, whose
		// tmpfs comes after every bind. A Private directory's does not
		// count: it is mounted with the binds, in depth order, and a
		// bind below it (with a cover on it) shows through.
		if !s.hiddenBelow(c.Path) {
			out = append(out, c)
		}
	}
	return out
}

type bind struct{ op, path string }

// Unreadable is one path covered by an empty object of mode 000.
type Unreadable struct {
	Path string
	Dir  bool
}

// protect appends to binds what Spec.Protect asks for: for each path that
// a writable bind holds (the deepest bind containing it decides, the last
// of equal ones, as mounts do), a writable self-bind of every directory
// between that bind and the path, then a read-only bind of the path. The
// caller sorts by depth, so each pin lands before anything below it.
func protect(binds []bind, paths []string) []bind {
	return pin(binds, paths, true)
}

// pinParents appends, for each path a writable bind holds, the writable
// self-binds of every directory between that bind and the path (as
// protect does), but not a bind of the path itself: the caller covers it.
func pinParents(binds []bind, paths []string) []bind {
	return pin(binds, paths, false)
}

// pin is protect and pinParents. The paths go shallowest first, and each
// one's holder is looked for among every bind so far, the ones pin added
// included: a path inside another protected path is held by that path's
// read-only bind, and nothing is pinned for it (a writable pin of the
// protected directory, sorted after its read-only bind at the same depth,
// would make it writable again: deny_write on D and on D/file left all of
// D writable but D/file).
func pin(binds []bind, paths []string, self bool) []bind {
	pinned := make(map[string]bool)
	for _, b := range binds {
		if b.op == "--bind" {
			pinned[filepath.Clean(b.path)] = true
		}
	}
	order := make([]string, len(paths))
	for i, p := range paths {
		order[i] = filepath.Clean(p)
	}
	sort.SliceStable(order, func(i, j int) bool { return bind{path: order[i]}.depth() < bind{path: order[j]}.depth() })
	for _, p := range order {
		holder := -1
		for i, b := range binds {
			bp := filepath.Clean(b.path)
			if (p == bp || strictlyUnder(p, bp)) &&
				(holder < 0 || b.depth() >= binds[holder].depth()) {
				holder = i
			}
		}
		if holder < 0 || binds[holder].op != "--bind" {
			continue
		}
		root := filepath.Clean(binds[holder].path)
		var pins []string
		for d := filepath.Dir(p); d != root && len(d) > len(root); d = filepath.Dir(d) {
			pins = append(pins, d)
		}
		for _, d := range pins {
			if !pinned[d] {
				pinned[d] = true
				binds = append(binds, bind{"--bind", d})
			}
		}
		if self {
			binds = append(binds, bind{"--ro-bind", p})
		}
	}
	return binds
}

func (b bind) depth() int {
	return strings.Count(strings.TrimSuffix(filepath.Clean(b.path), "/"), "/")
}

// Describe renders argv for debug output, quoting words that need it.
func Describe(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`") {
			b.WriteString(fmt.Sprintf("%q", w))
		} else {
			b.WriteString(w)
		}
	}
	return b.String()
}

// readHead4 returns the first four bytes of the file at p.
func readHead4(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 4)
	_, err = io.ReadFull(f, b)
	return b, err
}
