package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/config"
	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockConfigs are go-landlock's presets, indexed by ABI - 1.
var landlockConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4,
	landlock.V5, landlock.V6, landlock.V7, landlock.V8,
}

// landlockSpec is the ruleset the init applies to itself in the landlock
// tier, before it installs the exec filter: everything readable and
// executable, writable only below Write.
type landlockSpec struct {
	// Write lists the directories and files that stay writable: the
	// working directory, --rw paths, the git binds and the per-run
	// temporary directory.
	Write []string
	// RestrictTCP refuses the sandbox every TCP connect and bind
	// (--net filter and --net none; ABI 4). With --net filter the
	// supervisor, which Landlock does not restrict, connects the
	// sandbox's sockets to cordon's proxy (supervisor.ConnectGate):
	// a port rule would let a connect to any address at the proxy's
	// port through.
	RestrictTCP bool
	// ReadRoots, when set, replaces "/" as what is readable and
	// executable (landlockCarve): every entry beside the paths deny_read
	// hides, down their parents. ReadDirs are those parents, which may be
	// listed only.
	ReadRoots, ReadDirs []string
}

// wireLandlock is landlockSpec as it travels: paths as bytes.
type wireLandlock struct {
	Write       [][]byte `json:"write"`
	RestrictTCP bool     `json:"restrict_tcp,omitempty"`
	ReadRoots   [][]byte `json:"read_roots,omitempty"`
	ReadDirs    [][]byte `json:"read_dirs,omitempty"`
}

func (l *landlockSpec) wire() *wireLandlock {
	if l == nil {
		return nil
	}
	return &wireLandlock{Write: toBytes(l.Write), RestrictTCP: l.RestrictTCP,
		ReadRoots: toBytes(l.ReadRoots), ReadDirs: toBytes(l.ReadDirs)}
}

func (w *wireLandlock) spec() *landlockSpec {
	if w == nil {
		return nil
	}
	return &landlockSpec{Write: fromBytes(w.Write), RestrictTCP: w.RestrictTCP,
		ReadRoots: fromBytes(w.ReadRoots), ReadDirs: fromBytes(w.ReadDirs)}
}

// Rights a read-only hierarchy keeps: read and run files, list
// directories.
const landlockReadRights = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir

// Rights that apply to a file (the rest only make sense on directories;
// the kernel refuses them in a rule for a file).
const landlockFileRights = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile |
	llsys.AccessFSTruncate | llsys.AccessFSIoctlDev

// landlockDevices are the device files a command writes to as a matter of
// course (bubblewrap's minimal /dev has them writable too); /dev/pts holds
// the terminal.
var landlockDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"}

// applyLandlock restricts the calling process (every thread) to spec. It
// runs in the init before the exec filter is installed, so the command and
// everything it starts inherit the ruleset. Nothing here degrades
// silently: the ruleset is built for exactly the ABI the kernel has (go-
// landlock's best-effort mode is not used), and what that ABI cannot
// restrict is reported by the host before the start (landlockLevel).
func applyLandlock(spec *landlockSpec) error {
	abi := isolation.LandlockABI()
	if abi < 1 {
		return errors.New("landlock is not available on this kernel (needs Linux 5.13 with landlock in the lsm= boot parameter)")
	}
	level := min(abi, isolation.MaxLandlockABI)
	preset := landlockConfigs[level-1]
	fsRights := preset.HandledAccessFS
	args := []any{fsRights}
	if preset.Scoped != 0 {
		args = append(args, preset.Scoped)
	}
	if spec.RestrictTCP {
		if level < 4 {
			return fmt.Errorf("--net filter and --net none in the landlock tier need Landlock ABI 4 (Linux 6.7); this kernel has ABI %d", abi)
		}
		// Handled with no rule: no port is granted. Bind too, so the
		// sandbox cannot serve on a host port (programs of the host
		// may trust what listens on their loopback).
		args = append(args, landlock.AccessNetSet(llsys.AccessNetConnectTCP|llsys.AccessNetBindTCP))
	}
	cfg, err := landlock.NewConfig(args...)
	if err != nil {
		return fmt.Errorf("landlock configuration: %w", err)
	}
	var rules []landlock.Rule
	if len(spec.ReadRoots)+len(spec.ReadDirs) == 0 {
		rules = append(rules, landlock.PathAccess(fsRights&landlockReadRights, "/"))
	}
	for _, p := range spec.ReadRoots {
		r, err := landlockReadRule(p, fsRights)
		if err != nil {
			return err
		}
		if r != nil {
			rules = append(rules, r)
		}
	}
	for _, p := range spec.ReadDirs {
		rules = append(rules, landlock.PathAccess(fsRights&llsys.AccessFSReadDir, p))
	}
	for _, p := range spec.Write {
		r, err := landlockWriteRule(p, fsRights)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	for _, d := range landlockDevices {
		if _, err := os.Stat(d); err == nil {
			rules = append(rules, landlock.PathAccess(fsRights&(landlockFileRights&^llsys.AccessFSExecute), d))
		}
	}
	if fi, err := os.Stat("/dev/pts"); err == nil && fi.IsDir() {
		rules = append(rules, landlock.PathAccess(fsRights&(landlockFileRights&^llsys.AccessFSExecute|llsys.AccessFSReadDir), "/dev/pts"))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("applying the landlock ruleset: %w", err)
	}
	return nil
}

// scopeRuleset returns, when scope is asked for (every tier but none) on a
// kernel with Landlock ABI 6, a ruleset that handles no access right and
// scopes signals only: the layer every command takes between fork and exec,
// so that it cannot signal its init, a session's shim or bubblewrap's pid 1
// (see spawn_unsafe.go). -1 otherwise: below ABI 6 nothing can scope
// signals (the README states what that leaves open). The descriptor is
// close-on-exec, as every Landlock ruleset.
func scopeRuleset(scope bool) (int, error) {
	if !scope || isolation.LandlockABI() < 6 {
		return -1, nil
	}
	fd, err := llsys.LandlockCreateRuleset(&llsys.RulesetAttr{Scoped: llsys.ScopeSignal}, 0)
	if err != nil {
		return -1, fmt.Errorf("creating the landlock signal scope ruleset: %w", err)
	}
	return fd, nil
}

// landlockWriteRule grants every right on a directory, or a file's rights
// on a file.
func landlockWriteRule(path string, fsRights landlock.AccessFSSet) (landlock.Rule, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, fmt.Errorf("writable path %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return landlock.PathAccess(fsRights, path), nil
	}
	return landlock.PathAccess(fsRights&landlockFileRights, path), nil
}

// landlockWritable is the writable set of the landlock tier: what
// bubblewrap would bind writable (the working directory unless it is /,
// --rw paths, the git binds) and the run's temporary directory, sorted and
// without duplicates.
func landlockWritable(dir string, rw []string, tmp string) []string {
	var out []string
	if dir != "" && dir != "/" {
		out = append(out, dir)
	}
	out = append(out, rw...)
	if tmp != "" {
		out = append(out, tmp)
	}
	sort.Strings(out)
	return compactStrings(out)
}

func compactStrings(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// landlockRootWarning is said on every landlock-tier run by root (named
// explicitly: auto refuses it). Capabilities are dropped, but the files
// of the system belong to uid 0, and chmod, utimes and user.* extended
// attributes are not Landlock rights.
const landlockRootWarning = "--isolation landlock as root: " + isolation.RootCannot + "; run cordon as a non-root user to close this"

// resolveIsolation turns auto (or empty) into the tier that works here,
// and returns the line to say when it stepped down from bwrap. Auto never
// steps down to none: with neither bwrap nor Landlock it refuses.
func (sp *startSpec) resolveIsolation(ctx context.Context, log *slog.Logger) (string, error) {
	switch sp.isolation {
	case IsolationBwrap, IsolationNone:
		return "", nil
	case IsolationLandlock:
		if isolation.LandlockABI() < 1 {
			return "", &SetupError{Err: errors.New("--isolation landlock: " + isolation.NewLandlockLevel(0).String()),
				Hint: "use --isolation bwrap, or --isolation none (exec policy only, no filesystem protection)"}
		}
		if os.Geteuid() == 0 {
			return landlockRootWarning, nil
		}
		return "", nil
	case IsolationAuto, "":
	default:
		return "", &SetupError{Err: fmt.Errorf("unknown isolation %q", sp.isolation)}
	}
	c, cached := isolation.ChooseCached(ctx)
	sp.autoBwrap, sp.bwrap = c.Tier == isolation.Bwrap, c.Bwrap
	log.Debug("isolation auto", "tier", c.Tier, "bwrap_failure", c.Why, "landlock_abi", c.LandlockABI, "probe_cached", cached)
	switch c.Tier {
	case isolation.Bwrap:
		sp.isolation = IsolationBwrap
		return "", nil
	case isolation.Landlock:
		sp.isolation = IsolationLandlock
		return c.Note(), nil
	}
	return "", &SetupError{Err: errors.New(c.Refusal()), Hint: c.RefusalFix()}
}

// landlock prepares the landlock tier: it checks what the tier cannot do
// for this run (refusing what it cannot enforce), makes the run's private
// temporary directory, and puts the ruleset into cfg, with TMPDIR in a
// one-shot command's environment. It returns the directory.
func (sp *startSpec) landlock(cfg *configMsg, log *slog.Logger) (string, error) {
	level := isolation.NewLandlockLevel(isolation.LandlockABI())
	if err := landlockKeepsOwnState(sp.llBox); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "cordon-tmp-")
	if err != nil {
		return "", &SetupError{Err: fmt.Errorf("making the run's temporary directory: %w", err)}
	}
	if err := os.Mkdir(filepath.Join(tmp, ".cache"), 0o700); err != nil {
		removeTmp(tmp)
		return "", &SetupError{Err: fmt.Errorf("making the run's cache directory: %w", err)}
	}
	box := sp.llBox
	home := sp.home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if err := landlockAgentCheck(box.Unreadable, home); err != nil {
		removeTmp(tmp)
		return "", err
	}
	spec := &landlockSpec{Write: landlockWritable(box.Dir, box.RW, tmp)}
	if err := landlockCarve(spec, box.Unreadable); err != nil {
		removeTmp(tmp)
		return "", err
	}
	cfg.Landlock = spec
	if !cfg.Session {
		cfg.Env = withTMPDIR(cfg.Env, tmp)
	}
	log.Debug("isolation landlock", "landlock", level.String(), "writable", spec.Write,
		"not_enforced", isolation.LandlockCannot)
	if len(box.Protect) > 0 {
		log.Debug("landlock: these stay writable (Landlock cannot carve them out of a writable directory; creating protected names is still refused)", "paths", box.Protect)
	}
	if len(box.Private) > 0 {
		log.Debug("landlock: these are not private (no mount namespace): read-only host directories; XDG_CACHE_HOME points into TMPDIR", "paths", box.Private)
	}
	if len(box.Unreadable) > 0 {
		log.Debug("landlock: unreadable by carving (every other entry of their parents granted)", "paths", len(box.Unreadable), "read_rules", len(spec.ReadRoots))
	}
	if len(sp.box.Hide)+len(sp.box.HideFiles) > 0 {
		log.Debug("landlock: these stay visible (Landlock cannot hide paths)", "paths", append(append([]string{}, sp.box.Hide...), sp.box.HideFiles...))
	}
	return tmp, nil
}

// withTMPDIR points TMPDIR at the run's private directory dir, and
// XDG_CACHE_HOME at dir/.cache: bubblewrap gives the sandbox a private,
// discarded ~/.cache, which the landlock tier cannot; tools that follow
// XDG (go, pip, and most others) write their caches there instead of
// failing on the read-only one.
func withTMPDIR(env []string, dir string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+dir, "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"))
}

// removeTmp removes the landlock tier's temporary directory ("" is none).
func removeTmp(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// landlockKeepsOwnState refuses a writable set that holds cordon's own
// state: the trust store (which says what policy the next run loads) or a
// daemon's directory (its discovery file says where cordon's client
// connects). The bwrap tier binds them read-only or hides them; Landlock
// cannot take them out of a writable tree, so the run would let the
// workload choose the next run's policy.
func landlockKeepsOwnState(box bwrap.Spec) error {
	opts := config.Options{Dir: box.Dir}
	if box.Dir == "" {
		opts.Dir = "/"
	}
	var own []string
	if store, err := config.TrustStoreFor(opts); err == nil && store.Dir() != "" {
		own = append(own, store.Dir())
	}
	own = append(own, box.Hide...)
	writable := append([]string{}, box.RW...)
	if box.Dir != "" && filepath.Clean(box.Dir) != "/" {
		writable = append(writable, box.Dir)
	}
	for _, o := range own {
		o = canonicalPath(o)
		for _, w := range writable {
			w = canonicalPath(w)
			if under(o, w) {
				return &SetupError{Err: fmt.Errorf("the landlock tier cannot keep %s read-only inside the writable %s (cordon's trust store or daemon state: a command could choose the next run's policy)", o, w),
					Hint: "run from a directory below it (a project, not your home directory), or make bubblewrap work here (cordon doctor says how)"}
			}
		}
	}
	return nil
}

// landlockReadRule grants reading and running below path (a directory) or
// of it (a file). A path gone since the host listed it grants nothing.
func landlockReadRule(path string, fsRights landlock.AccessFSSet) (landlock.Rule, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if err == unix.ENOENT {
			return nil, nil
		}
		return nil, fmt.Errorf("readable path %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return landlock.PathAccess(fsRights&landlockReadRights, path), nil
	}
	return landlock.PathAccess(fsRights&landlockReadRights&landlockFileRights, path), nil
}

// landlockCarve makes the files policy's unreadable paths unreadable the
// only way Landlock can: it grants, so instead of "/" it grants every
// entry beside them, down their parents (which may still be listed). A
// symlink is not granted itself: what it points to is readable or not by
// where that lies. Entries made later in those parents are not readable
// (closed). A path inside the writable set cannot be carved (new files
// there must stay readable): that is refused.
func landlockCarve(spec *landlockSpec, unreadable []bwrap.Unreadable) error {
	if len(unreadable) == 0 {
		return nil
	}
	denied := map[string]bool{}
	parents := map[string]bool{}
	for _, u := range unreadable {
		// By its real path: Landlock decides by where a file is, so a
		// parent that is a symlink must not hide the real one from the
		// walk below.
		p, err := filepath.EvalSymlinks(u.Path)
		if err != nil {
			p = filepath.Clean(u.Path)
		}
		for _, w := range spec.Write {
			if under(p, w) || under(w, p) {
				return &SetupError{Err: fmt.Errorf("the landlock tier cannot make %s unreadable: it lies in (or holds) the writable %s, and Landlock cannot take reading back from part of a writable tree", p, w),
					Hint: "narrow the deny_read rule to paths outside the writable directories, or make bubblewrap work here (cordon doctor says how)"}
			}
		}
		denied[p] = true
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			parents[d] = true
			if d == "/" {
				break
			}
		}
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		spec.ReadDirs = append(spec.ReadDirs, dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return &SetupError{Err: fmt.Errorf("listing %s to keep what deny_read hides in it unreadable: %w", dir, err)}
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case denied[p]:
			case e.Type()&os.ModeSymlink != 0:
			case parents[p] && e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			default:
				spec.ReadRoots = append(spec.ReadRoots, p)
			}
		}
		return nil
	}
	return walk("/")
}

// canonicalPath is p with every symlink resolved, so that two names of one
// place compare equal. A path that does not exist (yet) keeps its missing
// tail below its deepest existing, resolved parent.
func canonicalPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, rest := p, ""
	for dir != "/" && dir != "." {
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
	}
	return p
}

// canonicalBox resolves every path of a layout to where it really is: the
// working directory's bind, the writable and read-only binds (--rw, --ro,
// the files policy's, git's), the private directories, what is protected,
// unreadable or hidden. The landlock tier decides by where a file really
// is, and compares these paths to one another. bubblewrap mounts a bind
// where its path leads while bwrap.Spec orders binds, and finds which bind
// holds a protected path, by the paths as given: a working directory
// reached through a symlink held none of the protected paths the files walk
// found (they are real), and a bind through a planted symlink (a policy's
// allow_write path a run replaced with a link to the repository) sorted
// after the read-only binds it then covered (red teams of this stop).
// Resolved, the order and the holding are those of the mounts. The
// command's own working directory (configMsg.Dir) stays as given.
func canonicalBox(box bwrap.Spec) bwrap.Spec {
	if box.Dir != "" {
		box.Dir = canonicalPath(box.Dir)
	}
	box.RW = canonicalPaths(box.RW)
	box.RO = canonicalPaths(box.RO)
	box.ROTry = canonicalPaths(box.ROTry)
	box.Private = canonicalPaths(box.Private)
	box.Hide = canonicalPaths(box.Hide)
	box.HideFiles = canonicalPaths(box.HideFiles)
	box.Protect = canonicalPaths(box.Protect)
	if box.Unreadable != nil {
		u := make([]bwrap.Unreadable, len(box.Unreadable))
		for i, x := range box.Unreadable {
			u[i] = bwrap.Unreadable{Path: canonicalPath(x.Path), Dir: x.Dir}
		}
		box.Unreadable = u
	}
	return box
}

// canonicalPaths is canonicalPath of each of ps, in a new slice.
func canonicalPaths(ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = canonicalPath(p)
	}
	return out
}
