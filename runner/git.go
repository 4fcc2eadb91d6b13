package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"golang.org/x/sys/unix"
)

// gitView is what the sandbox needs so that git works in a working
// directory whose git directory lies outside the writable tree (a linked
// worktree, a submodule, a subdirectory of a repository), and what must
// stay read-only in every git directory the sandbox can write:
//
//   - A linked worktree's own gitdir (<common>/worktrees/<name>: HEAD,
//     index, logs/HEAD, rebase state) is bound writable. Its commondir and
//     gitdir files, which tell the user's git where the repository is, are
//     protected.
//   - The common directory is not bound: it is replaced by a private tmpfs
//     (bwrap.Spec.Private) into which its objects/, refs/ and logs/ are
//     bound writable and everything else it holds (config, hooks, info,
//     packed-refs, the main worktree's HEAD and index, other worktrees)
//     read-only. git's lock files in it (packed-refs.lock, taken for every
//     ref deletion) are created in the tmpfs; so is anything else the
//     workload creates there (hooks/, commondir, a config put in place by
//     rename), and none of it reaches the host. What git cannot do there
//     is rewrite packed-refs itself (pack-refs, deleting a packed ref):
//     that would need the host directory writable, which would let the
//     workload create hooks/ or commondir for the user's next git command.
//   - A submodule's git directory (<super>/.git/modules/<name>, when cordon
//     runs in the submodule) is its own common directory and keeps its
//     HEAD and index at its top, which git rewrites by rename: it is bound
//     writable, as it is when cordon runs in the superproject, with its
//     config and hooks protected.
//   - A repository's .git directory outside the writable tree (cordon run
//     in a subdirectory) is not bound: the repository may be far wider
//     than what the user made writable (a home directory kept in git).
//
// The files are parsed, never handed to git: git on the host would read
// the repository's config (core.fsmonitor runs a program). A .git file is
// the workload's to write, so each link it names is checked from the other
// side before anything is bound: a worktree's gitdir must name this .git
// file back, a submodule's gitdir must name this directory as its
// core.worktree. Anything that does not check out binds nothing (git then
// fails read-only in the sandbox, as it did without this).
type gitView struct {
	rw, ro, private, protect []string
	// roMust are bound read-only, and bwrap fails if one is missing.
	roMust []string
	// why says what was found, or why nothing was bound, for --debug.
	why string
	// err is set when cordon could not look at something it must (a path
	// it cannot read in a writable tree): the start fails, closed.
	err error
	// inWritable reports whether a path lies in a writable tree (set by
	// gitBindsFor; nil: none is).
	inWritable func(string) bool
	// home expands ~/ in config paths.
	home string
	// stateDir is the git directory holding this working tree's
	// operation state (rebase-merge/, sequencer/), when the sandbox can
	// write it.
	stateDir string
	// newRepos is set when the policy lets the sandbox create .git
	// ('!.git'): submodules' git directories may then be added too.
	newRepos bool
}

// fail records the first error that stops the start.
func (v *gitView) fail(err error) {
	if v.err == nil {
		v.err = err
	}
}

// lookErr is the start-up failure for a path cordon cannot look at: in a
// writable tree it may have been made so (chmod 000) by an earlier run,
// to hide a hook or a config from the protection.
func lookErr(p string, err error) error {
	return &SetupError{Err: fmt.Errorf("cannot look at %s to protect git's hooks and config: %w", p, err),
		Hint: "a path cordon must check cannot be read (an earlier run may have changed its mode): check it and restore its permissions (chmod u+rwx), then run again"}
}

// gitBindsFor computes the gitView for a sandbox whose working directory is
// dir and whose other writable binds are rw.
func gitBindsFor(dir string, rw []string, home string, newRepos bool) gitView {
	v := gitView{home: home, newRepos: newRepos}
	if dir == "" || filepath.Clean(dir) == "/" {
		return v
	}
	// Paths are compared resolved: the links git writes are.
	dir = mustReal(dir)
	inWritable := inTrees(append([]string{dir}, rw...))
	v.inWritable = inWritable
	top, dotgit, fi, ok, err := findDotGit(dir)
	if err != nil {
		return gitView{err: lookErr(dotgit, err)}
	}
	if !ok {
		v.why = "no git repository"
		return v
	}
	// The user's own configs apply in this repository too: each that
	// lies in a writable tree (the working directory is home) is
	// protected like .git/config, and what they point at inside the
	// writable trees like what the repository's config points at (a
	// global core.hooksPath of .githooks, an include into a dotfiles
	// checkout the sandbox writes).
	globals := []string{"/etc/gitconfig"}
	if home != "" {
		globals = append(globals, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config/git/config"))
	}
	for _, c := range globals {
		if inWritable(mustReal(c)) {
			v.protectIfExists(c)
		}
		v.protectConfigTargets(c, dotgit, 0)
	}
	switch {
	case fi.IsDir():
		if inWritable(dotgit) {
			v.protectGitdir(dotgit)
			v.why = "repository's git directory " + dotgit + " is in the writable tree"
			v.stateDir = dotgit
			return v
		}
		// cordon runs below the repository's top. The repository may be
		// far wider than what the user made writable (a home directory
		// kept in git): nothing is bound; run cordon at the top.
		v.why = "repository's git directory " + dotgit + " is outside the writable tree (cordon runs in a subdirectory): nothing bound"
	case fi.Mode().IsRegular():
		gitdir, err := readGitFile(dotgit)
		if errors.Is(err, os.ErrPermission) {
			return gitView{err: lookErr(dotgit, err)}
		}
		if err != nil {
			return gitView{why: err.Error(), err: v.err}
		}
		// The .git file decides where the user's git looks next time.
		if inWritable(dotgit) {
			v.protect = append(v.protect, dotgit)
		}
		if inWritable(gitdir) {
			v.protectGitdir(gitdir)
			v.why = "git directory " + gitdir + " is in the writable tree"
			v.stateDir = gitdir
			return v
		}
		if _, err := os.Lstat(filepath.Join(gitdir, "commondir")); err == nil {
			if err := v.linkedWorktree(dotgit, gitdir, inWritable); err != nil {
				return gitView{why: err.Error(), protect: v.protect, err: v.err}
			}
			v.why = "linked worktree: gitdir " + gitdir
			v.stateDir = gitdir
			return v
		}
		if err := checkSubmodule(top, gitdir); err != nil {
			return gitView{why: err.Error(), protect: v.protect, err: v.err}
		}
		if err := v.ownCommon(gitdir); err != nil {
			return gitView{why: err.Error(), protect: v.protect, err: v.err}
		}
		v.why = "submodule: gitdir " + gitdir
		v.stateDir = gitdir
	default:
		v.why = dotgit + " is neither a directory nor a regular file: nothing bound"
	}
	return v
}

// inTrees returns a test of whether a (resolved) path lies in one of
// trees.
func inTrees(trees []string) func(string) bool {
	var real []string
	for _, w := range trees {
		real = append(real, mustReal(w))
	}
	return func(p string) bool {
		for _, w := range real {
			if under(p, w) {
				return true
			}
		}
		return false
	}
}

// nestedGit protects, in each of the .git directories the files walk found
// in the writable trees (other repositories checked out inside the working
// directory: a directory of projects, vendored clones), what protectGitdir
// protects in the working directory's own: the user runs git there too.
func nestedGit(dirs, trees []string, home string, newRepos bool) gitView {
	v := gitView{home: home, newRepos: newRepos, inWritable: inTrees(trees)}
	for _, d := range dirs {
		// A .git directory, or one found by its content (HEAD, objects,
		// refs: findMatches); a submodule's under .git/modules is
		// locked with modules/ (lockModules).
		if filepath.Base(d) == ".git" || !strings.Contains(d, "/.git/modules/") {
			v.protectGitdir(d)
		}
	}
	return v
}

// findDotGit looks for .git in dir and its parents, as git does.
// Any error but "does not exist" is returned: a .git the caller cannot
// look at is not the same as none.
func findDotGit(dir string) (top, dotgit string, fi os.FileInfo, ok bool, err error) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		fi, err := os.Lstat(p)
		if err == nil {
			return d, p, fi, true, nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", p, nil, false, err
		}
		if d == "/" {
			return "", "", nil, false, nil
		}
	}
}

// readGitFile reads a "gitdir: PATH" file (relative paths are relative to
// the file's directory) and returns PATH, resolved and clean.
func readGitFile(p string) (string, error) {
	b, err := readSmall(p)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || target == "" {
		return "", fmt.Errorf("%s does not say \"gitdir: PATH\"", p)
	}
	return resolveFrom(filepath.Dir(p), target)
}

// readSmall reads a link file; anything large is not one.
func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 4097)
	n, err := f.Read(b)
	if n == len(b) {
		return nil, errors.New("too large for a link file")
	}
	if n == 0 && err != nil {
		return nil, err
	}
	return b[:n], nil
}

// resolveFrom makes target absolute (relative to base) and resolves its
// symbolic links, so that comparisons and binds name the real directory.
func resolveFrom(base, target string) (string, error) {
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(base, target)
	}
	r, err := filepath.EvalSymlinks(target)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", target, err)
	}
	return filepath.Clean(r), nil
}

// isGitdir reports whether d has what every git directory has.
func isGitdir(d string) bool {
	for _, e := range []struct {
		name string
		dir  bool
	}{{"HEAD", false}, {"objects", true}, {"refs", true}} {
		fi, err := os.Lstat(filepath.Join(d, e.name))
		if err != nil || fi.IsDir() != e.dir {
			return false
		}
	}
	return true
}

// gitWouldTake reports whether git would take d for a git directory
// (its is_git_directory): HEAD a file or a symlink (git reads a link into
// refs/), objects and refs anything it can search (access X_OK: a link to a
// directory, even an executable file). What decides protection must not
// be narrower than git: a red team planted each of those and had the
// host's git run the config. isGitdir is the strict test, for what may be
// skipped as git's own data.
func gitWouldTake(d string) bool {
	fi, err := os.Lstat(filepath.Join(d, "HEAD"))
	if err != nil || !(fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0) {
		return false
	}
	for _, name := range []string{"objects", "refs"} {
		if syscall.Access(filepath.Join(d, name), 1 /* X_OK */) != nil {
			return false
		}
	}
	return true
}

// linkedWorktree fills v for a linked worktree whose .git file is dotgit
// and whose gitdir is gitdir.
func (v *gitView) linkedWorktree(dotgit, gitdir string, inWritable func(string) bool) error {
	b, err := readSmall(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return fmt.Errorf("reading %s/commondir: %w", gitdir, err)
	}
	common, err := resolveFrom(gitdir, strings.TrimRight(string(b), "\r\n"))
	if err != nil {
		return err
	}
	// The gitdir is the common dir's worktrees/NAME, and names this .git
	// file back: a .git file the workload rewrote to name another
	// directory (another worktree's, any repository's) binds nothing.
	if filepath.Dir(gitdir) != filepath.Join(common, "worktrees") || !isGitdir(common) {
		return fmt.Errorf("%s is not a worktree of %s: nothing bound", gitdir, common)
	}
	back, err := readSmall(filepath.Join(gitdir, "gitdir"))
	if err != nil {
		return fmt.Errorf("reading %s/gitdir: %w", gitdir, err)
	}
	backPath, err := resolveFrom(gitdir, strings.TrimRight(string(back), "\r\n"))
	if err != nil || backPath != mustReal(dotgit) {
		return fmt.Errorf("%s/gitdir does not name %s back: nothing bound", gitdir, dotgit)
	}
	v.rw = append(v.rw, gitdir)
	for _, name := range []string{"commondir", "gitdir"} {
		v.protect = append(v.protect, filepath.Join(gitdir, name))
	}
	if v.worktreeConfig(common) {
		ensureEmptyFile(filepath.Join(gitdir, "config.worktree"))
	}
	v.protectIfExists(filepath.Join(gitdir, "config.worktree"))
	v.protectConfigTargets(filepath.Join(gitdir, "config.worktree"), gitdir, 0)
	v.lockModules(gitdir)
	if inWritable(common) {
		v.protectGitdir(common)
		return nil
	}
	return v.privateCommon(common, gitdir)
}

// privateCommon replaces common by a private view (see gitView): objects,
// refs and logs writable, everything else read-only, keep (the worktree's
// own gitdir, bound writable by the caller) left to its bind.
func (v *gitView) privateCommon(common, keep string) error {
	// git creates logs/ on the first reflog entry: created in the private
	// view, reflogs would be discarded with it. packed-refs must exist to
	// be bound read-only: created in the view, git pack-refs (which gc
	// runs) would write the refs there and delete the loose ones on the
	// host, losing every branch. An empty packed-refs is what git reads
	// when there is none. If either cannot be made, nothing is bound.
	if err := os.Mkdir(filepath.Join(common, "logs"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating %s/logs: %w: nothing bound", common, err)
	}
	if f, err := os.OpenFile(filepath.Join(common, "packed-refs"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating %s/packed-refs: %w: nothing bound", common, err)
	}
	if fi, err := os.Lstat(filepath.Join(common, "packed-refs")); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s/packed-refs is not a regular file: nothing bound", common)
	}
	entries, err := os.ReadDir(common)
	if err != nil {
		return fmt.Errorf("reading %s: %w", common, err)
	}
	v.private = append(v.private, common)
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(common, name)
		switch name {
		case "objects", "refs", "logs":
			v.rw = append(v.rw, p)
		case "packed-refs":
			// Not ROTry: without it in place, the view is unsafe.
			v.roMust = append(v.roMust, p)
		default:
			if p != keep {
				v.ro = append(v.ro, p)
			}
		}
	}
	return nil
}

// ownCommon fills v for a git directory that is its own common directory,
// outside the writable tree: bound writable with its config, hooks and
// link files protected (what a run at the repository's top gets).
func (v *gitView) ownCommon(gitdir string) error {
	if !isGitdir(gitdir) {
		return fmt.Errorf("%s is not a git directory: nothing bound", gitdir)
	}
	// hooks/ must exist to be protected: git init makes it, but a clone
	// of a submodule may not have one, and the workload could create it.
	if err := os.Mkdir(filepath.Join(gitdir, "hooks"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating %s/hooks to protect it: %w: nothing bound", gitdir, err)
	}
	v.rw = append(v.rw, gitdir)
	v.protectGitdir(gitdir)
	return nil
}

// checkSubmodule checks that gitdir is the git directory of the submodule
// checked out at top: it has core.worktree naming top (the user's git
// sets it when it absorbs a submodule's git directory; the workload
// cannot write it, config being protected wherever it can write).
func checkSubmodule(top, gitdir string) error {
	if !isGitdir(gitdir) {
		return fmt.Errorf("%s is not a git directory: nothing bound", gitdir)
	}
	wt, ok := configValue(filepath.Join(gitdir, "config"), "core", "worktree")
	if !ok {
		return fmt.Errorf("%s has no core.worktree naming %s: nothing bound", gitdir, top)
	}
	p, err := resolveFrom(gitdir, wt)
	if err != nil || p != mustReal(top) {
		return fmt.Errorf("%s's core.worktree does not name %s: nothing bound", gitdir, top)
	}
	return nil
}

// mustReal resolves p's symbolic links, or returns it clean.
func mustReal(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return filepath.Clean(r)
	}
	return filepath.Clean(p)
}

// protectGitdir protects, in a git directory the sandbox can write, what
// the user's git runs or follows: config, hooks, its link files, and the
// same in its submodules' and worktrees' git directories.
func (v *gitView) protectGitdir(d string) {
	// info/ is left writable: its attributes and excludes can do nothing
	// the working tree's .gitattributes and .gitignore cannot.
	if v.worktreeConfig(d) {
		ensureEmptyFile(filepath.Join(d, "config.worktree"))
	}
	for _, name := range []string{"config", "hooks", "commondir", "config.worktree"} {
		v.protectIfExists(filepath.Join(d, name))
	}
	v.protectHookLinks(filepath.Join(d, "hooks"))
	for _, name := range []string{"config", "config.worktree"} {
		v.protectConfigTargets(filepath.Join(d, name), d, 0)
	}
	v.lockModules(d)
	wts, err := os.ReadDir(filepath.Join(d, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		v.fail(lookErr(filepath.Join(d, "worktrees"), err))
	}
	for _, w := range wts {
		for _, name := range []string{"commondir", "gitdir", "config.worktree"} {
			v.protectIfExists(filepath.Join(d, "worktrees", w.Name(), name))
		}
		v.protectConfigTargets(filepath.Join(d, "worktrees", w.Name(), "config.worktree"), d, 0)
	}
}

// protectConfigTargets protects, in the writable trees, what the config
// file names that git runs or reads as config: core.hooksPath (a hooks
// directory such as .husky, made if missing so that it can be protected,
// as git would), and include.path / includeIf.*.path (files read as
// config, followed to a bound depth; an empty one is made for a missing
// target, which git reads as nothing). gitdir is the git directory the
// config belongs to: a relative hooksPath is relative to its working
// tree's top (its parent, for a .git directory).
func (v *gitView) protectConfigTargets(config, gitdir string, depth int) {
	if depth > 8 || v.inWritable == nil {
		return
	}
	b, err := os.ReadFile(config)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			v.fail(lookErr(config, err))
		}
		return
	}
	for _, kv := range configEntries(b) {
		switch {
		case kv.section == "core" && kv.key == "hookspath" && kv.value != "":
			// Where it really leads (a link the sandbox planted on the way
			// must not take what cordon makes outside the writable trees).
			p := canonicalPath(v.expand(kv.value, filepath.Dir(gitdir)))
			if !v.inWritable(p) {
				continue
			}
			if err := os.MkdirAll(p, 0o755); err != nil {
				v.fail(lookErr(p, err))
				continue
			}
			p = mustReal(p)
			v.protectIfExists(p)
			v.protectHookLinks(p)
		case kv.key == "path" && kv.value != "" && (kv.section == "include" || strings.HasPrefix(kv.section, "includeif ")):
			p := canonicalPath(v.expand(kv.value, filepath.Dir(config)))
			if !v.inWritable(p) {
				continue
			}
			// Made (with its directory) when missing: the sandbox must
			// not be the one to create it.
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				ensureEmptyFile(p)
			}
			if _, err := os.Stat(p); err != nil {
				v.fail(&SetupError{Err: fmt.Errorf("%s includes %s, which cordon cannot make or look at to protect it: %w", config, p, err),
					Hint: "create it (an empty file is read as nothing) or remove the include, then run again"})
				continue
			}
			p = mustReal(p)
			v.protectIfExists(p)
			v.protectConfigTargets(p, gitdir, depth+1)
		}
	}
}

// expand makes a config path absolute: ~/ is the caller's home, a
// relative path is relative to base.
func (v *gitView) expand(p, base string) string {
	if strings.HasPrefix(p, "~/") && v.home != "" {
		return filepath.Join(v.home, p[2:])
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// protectHookLinks protects the targets of hooks that are symbolic links
// into a writable tree (hooks/pre-commit -> ../../scripts/pre-commit): the
// link is read-only, but what git runs through it would not be.
func (v *gitView) protectHookLinks(dir string) {
	if v.inWritable == nil {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			v.fail(lookErr(dir, err))
		}
		return
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, e.Name())
		t, err := filepath.EvalSymlinks(link)
		if err != nil {
			// A dangling hook link whose target the sandbox could create
			// is refused rather than left open.
			target, rerr := os.Readlink(link)
			if rerr == nil && !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			if rerr != nil || v.inWritable(mustReal(filepath.Dir(target))) {
				v.fail(&SetupError{Err: fmt.Errorf("hook %s points at %s, which does not exist and the sandbox could create", link, target),
					Hint: "create the hook's target or remove the link, then run again"})
			}
			continue
		}
		if v.inWritable(t) {
			v.protectIfExists(t)
		}
	}
}

type configEntry struct{ section, key, value string }

// configEntries lists a git config file's entries in order: section
// lowercased with its subsection kept as written ("includeif \"gitdir:x\""),
// key lowercased, value unquoted. Enough for the keys read here.
func configEntries(b []byte) []configEntry {
	var out []configEntry
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			sec := strings.TrimSpace(line[1:end])
			name, sub, hasSub := strings.Cut(sec, " ")
			cur = strings.ToLower(name)
			if hasSub {
				cur += " " + strings.TrimSpace(sub)
			} else if n, s, ok := strings.Cut(name, "."); ok {
				cur = strings.ToLower(n) + " " + s
			}
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		k, val, hasEq := strings.Cut(line, "=")
		e := configEntry{section: cur, key: strings.ToLower(strings.TrimSpace(k))}
		if hasEq {
			val = strings.TrimSpace(val)
			if i := strings.IndexAny(val, "#;"); i >= 0 && !strings.HasPrefix(val, `"`) {
				val = strings.TrimSpace(val[:i])
			}
			e.value = strings.Trim(val, `"`)
		}
		out = append(out, e)
	}
	return out
}

// ensureEmptyFile creates p empty unless it exists. With
// extensions.worktreeConfig the user's git reads config.worktree as
// config: it must exist to be protected, and an empty one says nothing.
func ensureEmptyFile(p string) {
	// Where p really leads, and through no link made since.
	how := unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC, Mode: 0o644, Resolve: unix.RESOLVE_NO_SYMLINKS}
	if fd, err := proc.Openat2(unix.AT_FDCWD, canonicalPath(p), &how); err == nil {
		unix.Close(fd)
	}
}

// lockModules keeps the sandbox from planting a submodule's git directory
// in d/modules: the user's git reuses an existing modules/NAME (git
// submodule update --init), with its config and hooks, once a gitlink and
// .gitmodules name it. Unless the policy allows new repositories ('!.git'),
// modules/ is bound read-only (made, empty, when missing, as hooks/ is) and
// each submodule git directory already in it is bound writable again, its
// config and hooks protected: committing in a submodule works, adding one
// inside the sandbox does not.
func (v *gitView) lockModules(d string) {
	m := filepath.Join(d, "modules")
	if !v.newRepos {
		if err := os.Mkdir(m, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			v.fail(lookErr(m, err))
			return
		}
		fi, err := os.Lstat(m)
		if err != nil || !fi.IsDir() {
			v.fail(&SetupError{Err: fmt.Errorf("%s is not a directory", m), Hint: "remove it (git keeps submodules' git directories there), then run again"})
			return
		}
		v.roMust = append(v.roMust, m)
	}
	v.protectModules(m, 0)
}

// protectModules protects the git directories under a modules/ directory.
// A submodule's name may hold slashes, so a directory that is not a git
// directory is searched further (to a bound depth).
func (v *gitView) protectModules(dir string, depth int) {
	if depth > 8 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			v.fail(lookErr(dir, err))
		}
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if isGitdir(p) {
			if !v.newRepos {
				// Bound writable again below the read-only modules/
				// (lockModules): git commits in it.
				v.rw = append(v.rw, p)
			}
			v.protectGitdir(p)
		} else {
			v.protectModules(p, depth+1)
		}
	}
}

func (v *gitView) protectIfExists(p string) {
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		v.fail(lookErr(p, err))
		return
	}
	if err == nil && !slices.Contains(v.protect, p) {
		v.protect = append(v.protect, p)
	}
}

// worktreeConfig reports whether common's config turns on
// extensions.worktreeConfig. A config cordon cannot read fails the start.
func (gv *gitView) worktreeConfig(common string) bool {
	cfg := filepath.Join(common, "config")
	if _, err := os.ReadFile(cfg); err != nil && !errors.Is(err, os.ErrNotExist) {
		gv.fail(lookErr(cfg, err))
		return false
	}
	v, ok := configValue(cfg, "extensions", "worktreeconfig")
	if !ok {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1", "":
		return true
	}
	return false
}

// configValue reads the last value of section.key from a git config file
// (section and key compared case-insensitively, no subsections; read with
// configEntries, the one reader of git config files here).
func configValue(file, section, key string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	var val string
	found := false
	for _, e := range configEntries(b) {
		if e.section == strings.ToLower(section) && e.key == strings.ToLower(key) {
			val, found = e.value, true
		}
	}
	return val, found
}

// describe is the view for --debug.
func (v gitView) describe() []any {
	return []any{"found", v.why, "rw", v.rw, "ro", append(append([]string{}, v.roMust...), v.ro...),
		"private", v.private, "protect", v.protect}
}

// gitQueue remembers the files in which git queues commands for a stopped
// operation (an interactive rebase's todo list, the sequencer's) as they
// were when the sandbox started, so that cordon can say at the end when
// the sandbox left exec lines queued there: the user's own git runs them,
// outside any sandbox, on git rebase --continue. Nothing stops the
// sandbox from writing them (git needs to); this only tells the user.
type gitQueue struct {
	dir    string
	before map[string]string
}

var gitQueueFiles = []string{"rebase-merge/git-rebase-todo", "sequencer/todo"}

func newGitQueue(dir string) *gitQueue {
	if dir == "" {
		return nil
	}
	q := &gitQueue{dir: dir, before: map[string]string{}}
	for _, f := range gitQueueFiles {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		q.before[f] = string(b)
	}
	return q
}

// left returns a warning for each queue file that changed during the run
// and now holds exec lines.
func (q *gitQueue) left() []string {
	if q == nil {
		return nil
	}
	var out []string
	for _, f := range gitQueueFiles {
		p := filepath.Join(q.dir, f)
		b, err := os.ReadFile(p)
		if err != nil || string(b) == q.before[f] {
			continue
		}
		var cmds []string
		for _, line := range strings.Split(string(b), "\n") {
			w := strings.Fields(line)
			if len(w) > 1 && (w[0] == "exec" || w[0] == "x") {
				cmds = append(cmds, strings.Join(w[1:], " "))
			}
		}
		if len(cmds) > 0 {
			out = append(out, fmt.Sprintf("%s holds %d exec line(s) the sandbox left queued (first: %q); your git runs them outside the sandbox on --continue: review them (git rebase --edit-todo) or abort (git rebase --abort)", p, len(cmds), cmds[0]))
		}
	}
	return out
}
