package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// walkBound bounds how many entries planFiles looks at to expand the
// policy's globs at start. Past it cordon cannot say that every match is
// covered, so the start fails (closed) and says which tree was too big.
const walkBound = 200_000

// privateState lists per-user state that common tools write as a matter of
// course (caches, logs, state files: npm's logs, pip's and go's caches,
// shell and REPL history kept under ~/.local/state). Each that exists is
// covered by a private, empty tmpfs discarded with the sandbox: writes
// succeed, nothing reaches the host (a cache written by the sandbox could
// poison builds run outside it), and the host's content is not visible. The
// named presets (files.writable) bind real caches for users who accept that.
var privateState = []string{"~/.cache", "~/.local/state", "~/.npm/_logs"}

// PrivateState lists the per-user state paths covered by a private tmpfs
// when they exist (as written, with ~).
func PrivateState() []string { return append([]string(nil), privateState...) }

// FileEvent is one thing the files policy did to a sandbox at start, for
// --debug and the audit log.
type FileEvent struct {
	// Action is hide (unreadable), protect (read-only), private (a
	// discarded tmpfs), writable (a preset bound read-write) or created
	// (a directory made on the host so that it can be protected).
	Action string
	Path   string
	// Rule is the pattern that asked for it, RuleID where it was written.
	Rule, RuleID string
}

// fileLayout is what the files policy does to one sandbox.
type fileLayout struct {
	unreadable []bwrap.Unreadable
	protect    []string
	private    []string
	rw, ro     []string
	names      []string
	events     []FileEvent
	// gitDirs are the git directories the walk found in writable trees:
	// named .git, or any other by its content (HEAD, objects, refs).
	gitDirs []string
	// placeholder is the host directory holding the mode-000 file bound
	// over unreadable files; it is removed once the sandbox is set up.
	placeholder string
}

// cleanup removes the placeholder. The sandbox's bind keeps its inode,
// so its mode must never change: it is unlinked as it is (a file of mode
// 000 in a directory cordon owns can be removed).
func (fl *fileLayout) cleanup() {
	if fl != nil && fl.placeholder != "" {
		_ = os.RemoveAll(fl.placeholder)
	}
}

// expandHome turns ~/x into home/x; other paths are returned cleaned.
func expandHome(p, home string) (string, error) {
	if strings.HasPrefix(p, "~/") {
		if home == "" {
			return "", fmt.Errorf("%s: the home directory is unknown (set HOME)", p)
		}
		return filepath.Join(home, p[2:]), nil
	}
	return filepath.Clean(p), nil
}

// under reports whether p is root or lies below it.
func under(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// anchored is a rule with its absolute glob, and the directory to walk to
// find its matches (the glob's fixed prefix).
type anchored struct {
	rule policy.FileRule
	glob string
	base string
	// depth is how many components below base the glob can match (-1:
	// any, for **); 0 for a literal path, which is looked at, not walked.
	depth int
	// name is set for a bare name at any depth (**/NAME): matched against
	// the entry's name alone, which is cheap on a big tree.
	name string
	// literal: name holds no glob metacharacter (.git, cordon.yaml, as
	// every built-in bare name), so it matches only an entry of exactly
	// that name: compared as a string, not through path.Match, for every
	// entry of the walk.
	literal bool
	// last is the glob's last component when it is literal: an entry of
	// another name cannot match, whatever the rest says.
	last string
	read bool
}

// planFiles expands the policy's files part against the host for a sandbox
// shaped like box: it resolves ~ against home, lists the existing paths the
// deny rules match (globs walked from their fixed prefix, a bounded walk),
// refuses binds that conflict with them, creates a missing .git/hooks in
// writable repositories (git would create it anyway) so it can be protected,
// and lists per-user state to cover with a private tmpfs.
func planFiles(fp policy.FilePolicy, box bwrap.Spec, home string, privateTmp bool) (*fileLayout, error) {
	fl := &fileLayout{}
	for _, list := range []struct {
		in  []string
		out *[]string
	}{{fp.AllowWrite, &fl.rw}, {fp.ReadOnly, &fl.ro}} {
		for _, p := range list.in {
			abs, err := expandHome(p, home)
			if err != nil {
				return nil, inputError(err, "give an absolute path")
			}
			*list.out = append(*list.out, abs)
		}
	}
	for _, n := range fp.Writable {
		for _, p := range policy.Presets[n] {
			abs, err := expandHome(p, home)
			if err != nil {
				return nil, inputError(err, "set HOME")
			}
			// A cache that does not exist yet is made, as the tool would:
			// bubblewrap cannot bind what does not exist.
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return nil, inputError(fmt.Errorf("files.writable %s: %w", n, err), "create "+abs+" or leave the preset out")
			}
			fl.rw = append(fl.rw, abs)
			fl.events = append(fl.events, FileEvent{Action: "writable", Path: abs, Rule: n, RuleID: "files.writable"})
		}
	}
	var roots []string
	if box.Dir != "" && filepath.Clean(box.Dir) != "/" {
		roots = append(roots, filepath.Clean(box.Dir))
	}
	for _, p := range append(append([]string(nil), box.RW...), fl.rw...) {
		roots = append(roots, filepath.Clean(p))
	}
	var rules []anchored
	add := func(list []policy.FileRule, read bool) error {
		for _, r := range list {
			g := r.Glob()
			if strings.HasPrefix(g, "/") || strings.HasPrefix(g, "~/") {
				a := policy.AnchorPattern(g, home, "")
				if a == "" {
					// Never dropped silently: a rule that cannot be
					// placed would protect nothing.
					return inputError(fmt.Errorf("%s %q (%s): the home directory is unknown", listName(read), r.Pattern, r.Source), "set HOME")
				}
				rules = append(rules, anchorOf(r, a, "", read))
				continue
			}
			for _, root := range roots {
				name := ""
				if !strings.Contains(g, "/") {
					name = g
				}
				a := anchorOf(r, policy.AnchorPattern(g, home, root), name, read)
				if strings.HasPrefix(g, "**/") {
					// Any depth: matched against the whole path, so a
					// writable tree that is itself inside a match's
					// parents (a bind of a repository's .git directory)
					// is covered too: /**/.git/hooks, walked from root.
					a.glob = path.Join("/", g)
				}
				rules = append(rules, a)
			}
		}
		return nil
	}
	if err := add(fp.DenyRead, true); err != nil {
		return nil, err
	}
	if err := add(fp.DenyWrite, false); err != nil {
		return nil, err
	}
	// A writable bind at or inside what an any-depth rule covers (--rw
	// ../other/.git/hooks, or a link an earlier run planted that leads
	// there) is refused as a bind a rule covers is: the walk matches
	// below a writable tree, never the tree itself or its parents (the
	// working directory may be anywhere).
	for _, root := range roots {
		if box.Dir != "" && root == filepath.Clean(box.Dir) {
			continue
		}
		real := canonicalPath(root)
		for a := real; ; a = filepath.Dir(a) {
			inGitdir := gitWouldTake(filepath.Dir(a)) // once per level, not per rule
			for i := range rules {
				r := &rules[i]
				g := r.rule.Glob()
				if r.rule.Exception() || g == policy.GitName {
					// .git is walked into, its config and hooks covered
					// by their own rules (and by the git layout).
					continue
				}
				var ok bool
				switch {
				case strings.HasPrefix(g, "**/"):
					ok, _ = doublestar.Match(path.Join("/", g), a)
					if !ok && inGitdir {
						// A git directory of another name (bare, separate,
						// a dotfile manager's): its hooks and config are
						// what a .git directory's are.
						ok, _ = doublestar.Match(path.Join("/", g), path.Join("/.git", filepath.Base(a)))
					}
				case !strings.Contains(g, "/"):
					// A bare name (.vscode, .claude): at any depth.
					ok, _ = path.Match(g, filepath.Base(a))
				}
				if ok && !excepted(rules, r.read, a) {
					return nil, bindCovered(r.rule, r.read, a, root)
				}
			}
			if a == "/" || a == "." {
				break
			}
		}
	}
	found, err := findMatches(rules, roots, &fl.gitDirs)
	if err != nil {
		return nil, err
	}
	binds := append(append(append(append([]string(nil), roots...), box.RO...), box.ROTry...), fl.ro...)
	// In the bwrap tier the sandbox's /tmp is its own, empty: what lies
	// under the host's /tmp is out of its sight unless a bind shows it.
	// The landlock tier sees the host's /tmp (privateTmp false), so a
	// deny_read there must be enforced like any other.
	hidden := func(p string) bool {
		if !privateTmp || !under(p, "/tmp") {
			return false
		}
		for _, b := range binds {
			if under(p, filepath.Clean(b)) {
				return false
			}
		}
		return true
	}
	paths := make([]string, 0, len(found))
	for p := range found {
		if !hidden(p) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		m := found[p]
		for _, b := range binds {
			if under(filepath.Clean(b), p) && (m.read || isWritableBind(b, roots)) {
				return nil, bindCovered(m.rule, m.read, b, "")
			}
		}
		if m.read {
			fi, err := os.Stat(p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || !isUnder(p, roots) {
					continue
				}
				return nil, unreadableErr(p, err)
			}
			fl.unreadable = append(fl.unreadable, bwrap.Unreadable{Path: p, Dir: fi.IsDir()})
			fl.events = append(fl.events, FileEvent{Action: "hide", Path: p, Rule: m.rule.Pattern, RuleID: m.rule.Source})
			continue
		}
		if m.created {
			fl.events = append(fl.events, FileEvent{Action: "created", Path: p, Rule: m.rule.Pattern, RuleID: m.rule.Source})
		}
		fl.protect = append(fl.protect, p)
		fl.events = append(fl.events, FileEvent{Action: "protect", Path: p, Rule: m.rule.Pattern, RuleID: m.rule.Source})
	}
	for _, s := range privateState {
		abs, err := expandHome(s, home)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() || hidden(abs) {
			continue
		}
		skip := false
		for _, b := range binds {
			// Already writable (the working directory is home), or
			// bound by the user: theirs to decide.
			if under(abs, filepath.Clean(b)) {
				skip = true
			}
		}
		if !skip {
			fl.private = append(fl.private, abs)
			fl.events = append(fl.events, FileEvent{Action: "private", Path: abs, Rule: "private home state", RuleID: "builtin"})
		}
	}
	fl.names = protectedNames(fp.DenyWrite)
	if len(fl.unreadable) > 0 {
		if err := fl.makePlaceholder(); err != nil {
			return nil, &SetupError{Err: err}
		}
	}
	return fl, nil
}

func listName(read bool) string {
	if read {
		return "deny_read"
	}
	return "deny_write"
}

// protectedNames lists the bare deny_write names the supervisor refuses to
// create, less those a bare exception lifts ("!.vscode" lets the sandbox
// create .vscode directories, e.g. for a git clone of a repository that
// has one).
func protectedNames(rules []policy.FileRule) []string {
	var out []string
	for _, n := range policy.ProtectedNames(rules) {
		lifted := false
		for _, r := range rules {
			if g := r.Glob(); r.Exception() && !strings.Contains(g, "/") {
				if ok, _ := path.Match(g, n); ok || g == n {
					lifted = true
				}
			}
		}
		if !lifted {
			out = append(out, n)
		}
	}
	return out
}

// bindCovered is the start's refusal of a bind that a rule covers: at p,
// which is the bind, or which holds the writable bind root.
func bindCovered(rule policy.FileRule, read bool, p, root string) error {
	what := "deny_write"
	if read {
		what = "deny_read"
	}
	msg := fmt.Sprintf("%s %q (%s) covers %s, which is bound into the sandbox", what, rule.Pattern, rule.Source, p)
	if root != "" {
		msg += " writable as " + root
	}
	return inputError(errors.New(msg), "drop the bind, or narrow the rule (--no-defaults drops the built-in rules)")
}

func isWritableBind(b string, roots []string) bool {
	for _, r := range roots {
		if filepath.Clean(b) == r {
			return true
		}
	}
	return false
}

func anchorOf(r policy.FileRule, glob, name string, read bool) anchored {
	a := anchored{rule: r, glob: glob, name: name, read: read, literal: name != "" && !strings.ContainsAny(name, `*?[\`)}
	// The fixed prefix: the components before the first that globs. A
	// literal path is its own base (SplitPattern would split off its last
	// component and walk its parent: all of HOME for ~/.netrc).
	comps := strings.Split(glob, "/")
	i := 0
	for i < len(comps) && !hasMeta(comps[i]) {
		i++
	}
	a.base = unescape(strings.Join(comps[:i], "/"))
	if a.base == "" {
		a.base = "/"
	}
	rest := comps[i:]
	if l := comps[len(comps)-1]; !hasMeta(l) {
		a.last = unescape(l)
	}
	a.depth = len(rest)
	for _, c := range rest {
		if c == "**" {
			a.depth = -1
		}
	}
	return a
}

// hasMeta reports whether a glob component has an unescaped metacharacter.
func hasMeta(c string) bool {
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '\\':
			i++
		case '*', '?', '[', '{':
			return true
		}
	}
	return false
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

type match struct {
	rule    policy.FileRule
	read    bool
	created bool
}

// findMatches walks each rule's fixed prefix once (rules sharing one share
// the walk) and returns every existing path a rule matches, with the rule.
// A deny_read match wins over a deny_write one for the same path. A
// directory that matches is not walked into: it is covered whole. Inside a
// git directory the walk skips the repository's data (gitBulk) but goes
// into submodules' git directories (modules) and linked worktrees' own
// directories (worktrees). Symlinks are not followed by the walk; a matching symlink stands
// for what it points to, which is what a mount over its path covers.
func findMatches(rules []anchored, roots []string, gitDirs *[]string) (map[string]match, error) {
	// writable reports whether p lies in a tree the sandbox can write,
	// where it could have changed modes for the next run.
	writable := func(p string) bool {
		for _, r := range roots {
			if under(p, r) || under(mustReal(p), mustReal(r)) {
				return true
			}
		}
		return false
	}
	byBase := map[string][]int{}
	depth := map[string]int{} // how deep to walk below each base
	var bases []string
	for i, r := range rules {
		if _, ok := byBase[r.base]; !ok {
			bases = append(bases, r.base)
			depth[r.base] = r.depth
		}
		byBase[r.base] = append(byBase[r.base], i)
		if r.depth < 0 || (depth[r.base] >= 0 && r.depth > depth[r.base]) {
			depth[r.base] = r.depth
		}
	}
	sort.Strings(bases)
	found := map[string]match{}
	record := func(p string, m match) error {
		q, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // dangling: nothing to cover
		}
		if err != nil {
			if writable(p) {
				return unreadableErr(p, err)
			}
			return nil
		}
		p = q
		if old, ok := found[p]; ok && (old.read || !m.read) {
			return nil
		}
		found[p] = m
		return nil
	}
	seen := 0
	for _, base := range bases {
		idx := byBase[base]
		// test matches p against the rules of this base; at the base
		// itself only literal rules count (a relative rule matches below
		// its writable tree, never the tree itself).
		test := func(p, name string) (match, bool) {
			var best *anchored
			for _, i := range idx {
				r := &rules[i]
				if r.rule.Exception() || (p == base && r.depth != 0) {
					continue
				}
				if best != nil && (best.read || !r.read) {
					continue
				}
				ok := false
				if r.literal {
					ok = r.name == name
				} else if r.name != "" {
					ok, _ = path.Match(r.name, name)
				} else if r.last != "" && r.last != name {
					continue
				} else {
					ok, _ = doublestar.Match(r.glob, p)
				}
				if ok && !excepted(rules, r.read, p) {
					best = r
				}
			}
			if best == nil {
				return match{}, false
			}
			return match{rule: best.rule, read: best.read}, true
		}
		readRules := false
		for _, i := range idx {
			readRules = readRules || rules[i].read
		}
		fi, err := os.Lstat(base)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || !writable(base) {
				continue
			}
			return nil, unreadableErr(base, err)
		}
		if m, ok := test(base, filepath.Base(base)); ok {
			if err := record(base, m); err != nil {
				return nil, err
			}
			continue
		}
		if depth[base] == 0 {
			continue
		}
		// A base that is a symlink to a directory (a dotfile manager's
		// ~/.ssh) is walked where it leads; paths are matched as written
		// under base.
		real := base
		if fi.Mode()&fs.ModeSymlink != 0 {
			if real, err = filepath.EvalSymlinks(base); err == nil {
				fi, err = os.Stat(real)
			}
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || !writable(base) {
					continue
				}
				return nil, unreadableErr(base, err)
			}
		}
		if !fi.IsDir() {
			continue
		}
		maxDepth := depth[base]
		baseDepth := strings.Count(filepath.Clean(base), "/")
		if base == "/" {
			baseDepth = 0
		}
		err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			if real != base {
				p = base + strings.TrimPrefix(p, real)
			}
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walked: nothing to cover
				}
				if writable(p) {
					// The sandbox runs as the caller: what the caller
					// cannot read here, an earlier run may have made so
					// (chmod 000) and the next can chmod back. Skipped,
					// its matches would go uncovered.
					return unreadableErr(p, err)
				}
				// Outside every writable tree the sandbox cannot change
				// its mode: unreadable to the caller, unreadable in the
				// sandbox too.
				if d != nil && d.IsDir() && p != base {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() && isGitDir(p) {
				if gitDirs != nil && writable(p) && !slices.Contains(*gitDirs, p) {
					*gitDirs = append(*gitDirs, p)
				}
				// git would make hooks itself; made now, it can be
				// protected before the sandbox could fill it.
				hooks := filepath.Join(p, "hooks")
				if _, err := os.Lstat(hooks); errors.Is(err, fs.ErrNotExist) {
					if hm, ok := test(hooks, "hooks"); ok && !hm.read && os.Mkdir(hooks, 0o755) == nil {
						hm.created = true
						record(hooks, hm)
					}
				}
			}
			if p == base {
				if d.IsDir() && !readRules && gitBulk[filepath.Base(base)] && isGitDir(filepath.Dir(base)) && isGitdir(filepath.Dir(base)) {
					// A git directory's data bound as a writable tree
					// of its own (a linked worktree's common objects,
					// refs and logs: withGit): skipped as it is when
					// the walk reaches it from the repository, for the
					// same reason (see below).
					return fs.SkipDir
				}
				return nil
			}
			if seen++; seen > walkBound {
				return errWalkBound
			}
			name := d.Name()
			if name == "HEAD" && (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && gitDirs != nil {
				// A git directory by its content, whatever its name: a
				// separate one (git init --separate-git-dir), a bare
				// repository, a dotfile manager's: its config and hooks
				// run as the user as a .git directory's do (a red team
				// wrote both so). Protected as nested ones are.
				if dir := filepath.Dir(p); !isGitDir(dir) && gitWouldTake(dir) && writable(dir) && !slices.Contains(*gitDirs, dir) {
					*gitDirs = append(*gitDirs, dir)
					if err := os.Mkdir(filepath.Join(dir, "hooks"), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
						return &SetupError{Err: fmt.Errorf("creating %s/hooks to protect it: %w", dir, err)}
					}
				}
			}
			m, ok := test(p, name)
			if ok && d.IsDir() && !m.read && name == ".git" && m.rule.Glob() == policy.GitName {
				// The bare name .git refuses new repositories and links;
				// an existing .git directory stays writable (git writes
				// it), its config and hooks covered by their own rules,
				// so the walk goes on into it.
				ok = false
			}
			if ok {
				if err := record(p, m); err != nil {
					return err
				}
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() && gitBulk[name] && !readRules && isGitDir(filepath.Dir(p)) && isGitdir(filepath.Dir(p)) {
				// A repository's data: nothing git runs is in it. Only
				// in a directory that is a git directory (a fake
				// x/.git/info/ could hide anything), and never for a
				// deny_read rule (a secret may be moved anywhere).
				return fs.SkipDir
			}
			if d.IsDir() && maxDepth > 0 && strings.Count(p, "/")-baseDepth >= maxDepth {
				return fs.SkipDir // no rule of this base matches deeper
			}
			return nil
		})
		var se *SetupError
		if errors.As(err, &se) {
			return nil, err
		}
		if errors.Is(err, errWalkBound) {
			return nil, inputError(fmt.Errorf("more than %d files under %s to match the files rules against", walkBound, base),
				"run from a smaller directory, or narrow the rules that walk it")
		}
		if err != nil {
			return nil, &SetupError{Err: fmt.Errorf("expanding the files rules under %s: %w", base, err)}
		}
	}
	return found, nil
}

var errWalkBound = errors.New("walk bound")

// unreadableErr is the start-up failure for a path in a writable tree that
// cordon cannot look at: the sandbox runs as the caller, so an earlier run
// may have made it unreadable (chmod 000) to hide what the files rules
// cover, and the next could make it readable again. Closed: no sandbox.
func unreadableErr(p string, err error) error {
	return &SetupError{Err: fmt.Errorf("cannot look at %s to apply the files rules: %w", p, err),
		Hint: "a writable tree holds a path cordon cannot read (an earlier run may have changed its mode): check it and restore its permissions (chmod u+rwx), then run again"}
}

// isUnder reports whether p lies in one of roots.
func isUnder(p string, roots []string) bool {
	for _, r := range roots {
		if under(p, r) {
			return true
		}
	}
	return false
}

// gitBulk names the directories of a git directory that hold its data (and
// nothing git runs): the walk does not go into them. It does go into
// modules (submodules' git directories, with hooks and config of their own)
// and worktrees (linked worktrees' config.worktree).
var gitBulk = map[string]bool{"objects": true, "refs": true, "logs": true, "lfs": true, "rr-cache": true,
	"info": true, "branches": true, "sequencer": true, "rebase-merge": true, "rebase-apply": true}

// isGitDir reports whether dir is a git directory: a .git directory, or a
// submodule's under .git/modules (it has a HEAD).
func isGitDir(dir string) bool {
	if filepath.Base(dir) == ".git" {
		return true
	}
	if !strings.Contains(dir, "/.git/modules/") {
		return false
	}
	fi, err := os.Lstat(filepath.Join(dir, "HEAD"))
	return err == nil && fi.Mode().IsRegular()
}

// excepted reports whether an exception rule of the same list matches p.
// Exceptions may have another fixed prefix than the rule they lift, so all
// are tried.
func excepted(rules []anchored, read bool, p string) bool {
	for i := range rules {
		r := &rules[i]
		if !r.rule.Exception() || r.read != read {
			continue
		}
		if ok, _ := doublestar.Match(r.glob, p); ok {
			return true
		}
	}
	return false
}

// placeholderParents lists where the placeholder's directory is made, in
// order of preference: /dev/shm, a memory file system, where making and
// removing a directory and a file costs ~30 µs against ~200 µs on an ext4
// /tmp, on the start-up's path (the removal too: it runs between the
// handshake and the supervisor's start); then the temporary directory, as
// before. Both are shared directories, world-writable and sticky, where
// MkdirTemp makes a private one (mode 0700, a fresh random name); what is
// bound is the inode, so where it lives changes nothing the sandbox sees
// but a mount's source name. $XDG_RUNTIME_DIR is not used: users bind it
// into sandboxes writable (for the sockets in it) far more often than
// /dev/shm or /tmp, and a sandbox that can write where the placeholder is
// made could change it while another run sets up.
func placeholderParents() []string {
	return []string{"/dev/shm", os.TempDir()}
}

func (fl *fileLayout) makePlaceholder() error {
	var dir string
	var err error
	for _, parent := range placeholderParents() {
		// The first that takes a private directory: a missing or
		// read-only /dev/shm (some containers) falls through to the
		// temporary directory, whose failure is the one reported.
		if dir, err = os.MkdirTemp(parent, "cordon-files-"); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("making the placeholder for unreadable files: %w", err)
	}
	f := filepath.Join(dir, "denied")
	if err := os.WriteFile(f, nil, 0o000); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("making the placeholder for unreadable files: %w", err)
	}
	if err := os.Chmod(f, 0o000); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("making the placeholder for unreadable files: %w", err)
	}
	fl.placeholder = dir
	return nil
}

// apply adds the layout to box.
func (fl *fileLayout) apply(box *bwrap.Spec) {
	box.RW = append(append([]string(nil), box.RW...), fl.rw...)
	box.RO = append(append([]string(nil), box.RO...), fl.ro...)
	box.Protect = append(append([]string(nil), box.Protect...), fl.protect...)
	box.Private = append(append([]string(nil), box.Private...), fl.private...)
	box.Unreadable = append(append([]bwrap.Unreadable(nil), box.Unreadable...), fl.unreadable...)
	if fl.placeholder != "" {
		box.UnreadableFile = filepath.Join(fl.placeholder, "denied")
	}
}

// inputError is a SetupError caused by the caller's input.
func inputError(err error, hint string) error {
	return &SetupError{Err: err, Hint: hint}
}
