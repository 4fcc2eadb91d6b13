package tests

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitEnv is a scratch HOME with a git identity, so that neither the user's
// configuration nor a missing identity changes what git does; file://
// submodules are allowed (git refuses them by default since 2.38.1).
func gitEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com",
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=protocol.file.allow", "GIT_CONFIG_VALUE_0=always",
		"GIT_CONFIG_KEY_1=init.defaultBranch", "GIT_CONFIG_VALUE_1=main",
	}
}

// hostGit runs git on the host (the test's set-up and checks).
func hostGit(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s in %s: %s", strings.Join(args, " "), dir, out)
	return string(out)
}

// newRepo makes a repository with one commit in dir.
func newRepo(t *testing.T, env []string, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	hostGit(t, env, dir, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("one\n"), 0o644))
	hostGit(t, env, dir, "add", "f")
	hostGit(t, env, dir, "commit", "-qm", "init")
}

// gitWorkout is what an agent does with git: commit, branch, stash (push
// and pop, which deletes refs/stash), rebase. Any failure ends it non-zero.
const gitWorkout = `set -e
base=$(git rev-parse --abbrev-ref HEAD)
echo two >> f; git commit -qam two
git branch feature; git checkout -q feature
echo g > g; git add g; git commit -qm on-feature
echo three >> f; git stash -q; test -z "$(git status --porcelain --untracked-files=no)"
git stash pop -q; test -z "$(git stash list)"
git commit -qam three
git checkout -q "$base"; echo h > h; git add h; git commit -qm on-base
git checkout -q feature; git rebase -q "$base"
test -z "$(git status --porcelain --untracked-files=no)"
git log --format=%s
`

// TestGitWorks: the same git workout succeeds under cordon in a
// repository, in a linked worktree whose git directory is outside the
// working directory, and in a submodule (run from the superproject and
// from the submodule's own directory), and its results are there
// afterwards.
func TestGitWorks(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	env := gitEnv(t)
	root := t.TempDir()

	check := func(t *testing.T, dir, where string) {
		t.Helper()
		r := runCordon(t, runOpts{dir: dir, env: env}, "--", "sh", "-c", gitWorkout)
		require.Equal(t, 0, r.code, "git in %s failed under cordon:\nstdout: %s\nstderr: %s", where, r.stdout, r.stderr)
		assert.Equal(t, "three\non-feature\non-base\ntwo\n", firstLines(r.stdout, 4))
		assert.Equal(t, "three\non-feature\non-base\ntwo\n", firstLines(hostGit(t, env, dir, "log", "--format=%s"), 4),
			"the commits are there after the run")
		assert.Empty(t, hostGit(t, env, dir, "stash", "list"))
	}

	deleteBranch := func(t *testing.T, dir string) result {
		t.Helper()
		hostGit(t, env, dir, "branch", "scratch")
		return runCordon(t, runOpts{dir: dir, env: env}, "--", "git", "branch", "-D", "scratch")
	}

	t.Run("repository", func(t *testing.T) {
		repo := filepath.Join(root, "repo")
		newRepo(t, env, repo)
		check(t, repo, "a repository")
		r := deleteBranch(t, repo)
		assert.Equal(t, 0, r.code, r.stderr)
	})

	t.Run("repository subdirectory binds nothing", func(t *testing.T) {
		// The repository may be far wider than what the user made
		// writable (a home directory kept in git): run below its top,
		// cordon binds none of its git directory. Not under /tmp: the
		// sandbox's /tmp is its own tmpfs, and git's search for .git
		// would stop at that filesystem boundary for another reason.
		base, err := os.MkdirTemp("/var/tmp", "cordon-git")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(base) })
		repo := filepath.Join(base, "repo2")
		newRepo(t, env, repo)
		sub := filepath.Join(repo, "src")
		require.NoError(t, os.Mkdir(sub, 0o755))
		head := hostGit(t, env, repo, "rev-parse", "HEAD")
		r := runCordon(t, runOpts{dir: sub, env: env}, "--", "sh", "-c",
			`echo x > x; git add x && git commit -qm in-subdir && exit 1; echo x >> ../.git/hooks/pre-commit || git config core.hooksPath /tmp || touch ../.git/objects/planted || exit 0; exit 1`)
		assert.Equal(t, 0, r.code, "the repository's git directory was writable from a subdirectory: %s", r.stderr)
		assert.Equal(t, head, hostGit(t, env, repo, "rev-parse", "HEAD"))
	})

	t.Run("linked worktree", func(t *testing.T) {
		main := filepath.Join(root, "main")
		newRepo(t, env, main)
		wt := filepath.Join(root, "wt")
		hostGit(t, env, main, "worktree", "add", "-q", wt)
		mainHead := hostGit(t, env, main, "rev-parse", "HEAD")
		check(t, wt, "a linked worktree")
		assert.Equal(t, mainHead, hostGit(t, env, main, "rev-parse", "HEAD"), "the main worktree's HEAD did not move")
		assert.Contains(t, hostGit(t, env, main, "branch", "--list", "feature"), "feature", "the branch is in the shared refs")

		// Rewriting packed-refs needs the common directory itself
		// writable, which it never is: deleting a branch fails cleanly
		// (documented), and git pack-refs (which gc runs) must not move
		// the refs into a packed-refs the host never sees and delete the
		// loose ones: that would lose every branch.
		r := deleteBranch(t, wt)
		assert.NotEqual(t, 0, r.code, "deleting a branch rewrites packed-refs")
		assert.Contains(t, hostGit(t, env, main, "branch", "--list", "scratch"), "scratch")
		r = runCordon(t, runOpts{dir: wt, env: env}, "--", "git", "pack-refs", "--all", "--prune")
		assert.NotEqual(t, 0, r.code, "pack-refs succeeded in the private view")
		assert.FileExists(t, filepath.Join(main, ".git", "refs", "heads", "feature"), "a loose ref was pruned")
		assert.Equal(t, "three\non-feature\non-base\ntwo\n", firstLines(hostGit(t, env, main, "log", "--format=%s", "feature"), 4),
			"the branch survived")
	})

	t.Run("submodule", func(t *testing.T) {
		src := filepath.Join(root, "subsrc")
		newRepo(t, env, src)
		super := filepath.Join(root, "super")
		newRepo(t, env, super)
		hostGit(t, env, super, "submodule", "add", "-q", src, "sub")
		hostGit(t, env, super, "commit", "-qm", "add sub")
		sub := filepath.Join(super, "sub")
		gitdir, err := os.ReadFile(filepath.Join(sub, ".git"))
		require.NoError(t, err)
		require.Contains(t, string(gitdir), "gitdir: ", "the submodule's git directory is absorbed into the superproject")

		check(t, sub, "a submodule's directory")
		modgit := filepath.Join(super, ".git", "modules", "sub")
		for _, dir := range []string{sub, super} {
			r := runCordon(t, runOpts{dir: dir, env: append([]string{"M=" + modgit}, env...)}, "--", "sh", "-c",
				`printf '#!/bin/sh\ntouch PWNED\n' > "$M/hooks/pre-commit" || printf '[core]\n\thooksPath=/tmp\n' >> "$M/config" || git -C "$M/../../../sub" config core.hooksPath /tmp || mv "$M/hooks" "$M/h2" || exit 0; exit 1`)
			assert.Equal(t, 0, r.code, "the submodule's hooks or config were writable from %s", dir)
		}
		assert.NoFileExists(t, filepath.Join(modgit, "hooks", "pre-commit"))
		r0 := deleteBranch(t, sub)
		assert.Equal(t, 0, r0.code, r0.stderr)

		// From the superproject: the submodule is a subdirectory.
		r := runCordon(t, runOpts{dir: super, env: env}, "--", "sh", "-c",
			"set -e; cd sub; git checkout -q -b from-super; echo s >> f; git commit -qam from-super; git log -1 --format=%s")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "from-super\n", r.stdout)
		assert.Equal(t, "from-super\n", hostGit(t, env, sub, "log", "-1", "--format=%s"))
	})
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}

// treeSum describes every file under dir (path, mode, content hash), for
// "nothing changed here" checks.
func treeSum(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// TestGitWorktreeCannotReachCommonHooksOrConfig: from a linked worktree, the
// sandbox writes the common directory's objects, refs and logs, but nothing
// the user's own git later runs or follows: the common dir's hooks and
// config (directly, through "..", by renaming them or their parent, with
// git config), new files beside them (hooks/ in its place, commondir), the
// worktree's link files. Each attempt must fail or stay inside the
// sandbox; afterwards the host's files are byte for byte what they were.
func TestGitWorktreeCannotReachCommonHooksOrConfig(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	env := gitEnv(t)
	root := t.TempDir()
	main := filepath.Join(root, "main")
	newRepo(t, env, main)
	wt := filepath.Join(root, "wt")
	hostGit(t, env, main, "worktree", "add", "-q", wt)
	common := filepath.Join(main, ".git")
	gitdir := filepath.Join(common, "worktrees", "wt")
	// An existing hook, as a user may have one.
	require.NoError(t, os.WriteFile(filepath.Join(common, "hooks", "post-commit"), []byte("#!/bin/sh\ntrue\n"), 0o755))
	// The first run creates an empty packed-refs (so that it can be bound
	// read-only) and logs/ if missing; nothing else, ever.
	r := runCordon(t, runOpts{dir: wt, env: env}, "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	require.NoError(t, err)
	require.Empty(t, b)

	sums := map[string][]string{}
	for _, p := range []string{filepath.Join(common, "hooks"), filepath.Join(common, "info")} {
		sums[p] = treeSum(t, p)
	}
	files := map[string][]byte{}
	for _, p := range []string{filepath.Join(common, "config"), filepath.Join(wt, ".git"),
		filepath.Join(gitdir, "commondir"), filepath.Join(gitdir, "gitdir"), filepath.Join(common, "HEAD"),
		filepath.Join(common, "index")} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		files[p] = b
	}
	rootEntries := treeNames(t, common)

	evil := "#!/bin/sh\ntouch " + filepath.Join(root, "PWNED") + "\n"
	attempts := []struct {
		name   string
		script string
	}{
		{"new hook", `printf '%s' "$EVIL" > "$C/hooks/pre-commit"`},
		{"existing hook", `printf '%s' "$EVIL" >> "$C/hooks/post-commit"`},
		{"new hook through ..", `printf '%s' "$EVIL" > ../main/.git/hooks/post-checkout`},
		{"config", `printf '[core]\n\tfsmonitor = touch PWNED\n' >> "$C/config"`},
		{"config by rename", `printf '[core]\n\thooksPath = /tmp\n' > "$C/config.new" && mv -f "$C/config.new" "$C/config"`},
		{"config by rename from the worktree", `cp "$C/config" c.new && printf '[core]\n\thooksPath = /tmp\n' >> c.new && mv -f c.new "$C/config"`},
		{"git config core.hooksPath", `git config core.hooksPath /tmp`},
		{"git config --file", `git config --file "$C/config" core.fsmonitor true`},
		{"hooks dir renamed aside", `mv "$C/hooks" "$C/hooks.old"`},
		{"hooks dir removed", `rm -rf "$C/hooks"`},
		{"common dir renamed aside", `mv "$C" "$C.old"`},
		{"hook through a symlink placed in the worktree", `ln -s "$C/hooks" hl && printf '%s' "$EVIL" > hl/pre-push`},
		{"config through a hard link placed in the worktree", `ln "$C/config" cfg && printf '[core]\n\thooksPath = /tmp\n' >> cfg`},
		{"worktree's .git file", `printf 'gitdir: %s\n' "$PWD/evilgit" > .git`},
		{"worktree's .git file by rename", `printf 'gitdir: %s\n' "$PWD/evilgit" > g.new && mv -f g.new .git`},
		{"worktree's commondir", `printf '%s\n' "$PWD/evilgit" > "$G/commondir"`},
		{"worktree's gitdir link", `printf '/elsewhere/.git\n' > "$G/gitdir"`},
		{"main worktree's HEAD", `printf 'ref: refs/heads/evil\n' > "$C/HEAD"`},
		{"main worktree's index", `: > "$C/index"`},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			r := runCordon(t, runOpts{dir: wt, env: append([]string{"EVIL=" + evil, "C=" + common, "G=" + gitdir}, env...)},
				"--", "sh", "-c", a.script)
			assert.NotEqual(t, 0, r.code, "the attempt succeeded: %s", a.script)
		})
	}

	t.Run("new names beside hooks and config stay in the sandbox", func(t *testing.T) {
		// The common dir's own directory is a private view: creating names
		// in it works for git's lock files, and is discarded.
		// (commondir and config.worktree are also protected names: their
		// creation is refused.)
		script := `set -e; mkdir "$C/hooks2"; printf x > "$C/newfile"; ls "$C/hooks2"`
		r := runCordon(t, runOpts{dir: wt, env: append([]string{"C=" + common}, env...)}, "--", "sh", "-c", script)
		require.Equal(t, 0, r.code, r.stderr)
		r = runCordon(t, runOpts{dir: wt, env: append([]string{"C=" + common}, env...)}, "--", "sh", "-c", `printf x > "$C/commondir"`)
		assert.NotEqual(t, 0, r.code, "creating commondir in the common dir's view succeeded")
		assert.Contains(t, r.stderr, `cordon: denied: create`)
		r = runCordon(t, runOpts{dir: wt, env: append([]string{"C=" + common}, env...)}, "--", "sh", "-c", `printf x > "$C/config.worktree"`)
		assert.NotEqual(t, 0, r.code, "creating config.worktree in the common dir's view succeeded")
		assert.Contains(t, r.stderr, `(rule: deny_write "config.worktree": protected name)`)
		assert.Equal(t, rootEntries, treeNames(t, common), "a name created in the common dir reached the host")
	})

	// The user's git, outside the sandbox, still works and runs nothing of
	// the sandbox's.
	hostGit(t, env, wt, "commit", "-q", "--allow-empty", "-m", "host")
	hostGit(t, env, main, "status", "--short")
	assert.NoFileExists(t, filepath.Join(root, "PWNED"), "a hook or config the sandbox wrote ran on the host")
	for p, want := range sums {
		assert.Equal(t, want, treeSum(t, p), "%s changed", p)
	}
	for p, want := range files {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s changed", p)
	}
	assert.Equal(t, rootEntries, treeNames(t, common))
}

// treeNames lists the names in dir.
func treeNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestGitForgedLinksBindNothing: a .git file is the workload's to write (it
// lies in the working directory). One that names another repository's git
// directory, as a worktree or as a submodule, must not get that directory
// bound writable on the next run.
func TestGitForgedLinksBindNothing(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	env := gitEnv(t)
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	newRepo(t, env, victim)
	other := filepath.Join(root, "other")
	hostGit(t, env, victim, "worktree", "add", "-q", other)
	vgit := filepath.Join(victim, ".git")

	tests := []struct{ name, link string }{
		{"as a repository's own gitdir", vgit},
		{"as another worktree's gitdir", filepath.Join(vgit, "worktrees", "other")},
		{"through a relative path", "../victim/.git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(root, "forged-"+strings.ReplaceAll(tc.name, " ", "-"))
			require.NoError(t, os.MkdirAll(work, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(work, ".git"), []byte("gitdir: "+tc.link+"\n"), 0o644))
			r := runCordon(t, runOpts{dir: work, env: append([]string{"V=" + vgit}, env...)}, "--", "sh", "-c",
				`touch "$V/objects/planted" || touch "$V/refs/heads/planted" || touch "$V/worktrees/other/planted" || exit 0; exit 1`)
			assert.Equal(t, 0, r.code, "a forged .git file made another repository writable: %s", r.stderr)
		})
	}
	assert.NoFileExists(t, filepath.Join(vgit, "objects", "planted"))
	assert.NoFileExists(t, filepath.Join(vgit, "refs", "heads", "planted"))
}

// TestGitRwThroughPlantedSymlinkProtectsNothingLess: one run plants
// symlinks in the working directory, a/b/c/d/e/f -> the repository's .git
// and x/y/z -> the working directory itself; a later run is given both as
// --rw (a user taking an agent's advice). bubblewrap mounts a bind where
// its path leads, so those binds are .git and the working directory; the
// layout ordered them by the paths as written (deeper than .git/config)
// and they landed over the read-only binds of .git/config, .git/hooks and
// cordon.yaml (a red team's). Resolved first, they are ordered before
// what they hold: every protected file stays read-only.
func TestGitRwThroughPlantedSymlinkProtectsNothingLess(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	env := gitEnv(t)
	repo := filepath.Join(t.TempDir(), "repo")
	newRepo(t, env, repo)
	policyFile := filepath.Join(repo, "cordon.yaml")
	require.NoError(t, os.WriteFile(policyFile, []byte("version: 1\ndefault: allow\n"), 0o644))
	r := runCordon(t, runOpts{dir: repo, env: env}, "policy", "trust", policyFile)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCordon(t, runOpts{dir: repo, env: env}, "--", "sh", "-c",
		`mkdir -p a/b/c/d/e x/y && ln -s ../../../../../.git/. a/b/c/d/e/f && ln -s ../.. x/y/z`)
	require.Equal(t, 0, r.code, r.stderr)
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)

	r = runCordon(t, runOpts{dir: repo, env: env}, "--rw", "a/b/c/d/e/f", "--rw", "x/y/z", "--", "sh", "-c", `
for f in .git/config a/b/c/d/e/f/config cordon.yaml x/y/z/cordon.yaml; do
	if (echo '[core] fsmonitor = touch planted' >> "$f") 2>/dev/null; then echo "wrote $f"; fi
done
for d in .git/hooks a/b/c/d/e/f/hooks; do
	if (echo 'touch planted' > "$d/pre-commit") 2>/dev/null; then echo "wrote $d/pre-commit"; fi
done
echo done`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "done\n", r.stdout, "a protected file was written through a planted --rw symlink")
	after, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(after))
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "pre-commit"))
	body, err := os.ReadFile(policyFile)
	require.NoError(t, err)
	assert.Equal(t, "version: 1\ndefault: allow\n", string(body))
}

// tryWrites appends a line to each file given and prints "wrote F" for
// each write that succeeded, then "done".
const tryWrites = `for f in "$@"; do
	if (echo '[core] fsmonitor = touch planted' >> "$f") 2>/dev/null; then echo "wrote $f"; fi
done
echo done`

// TestProtectedThroughSymlinkedLayout: protected files stay read-only when
// the layout reaches them through symlinks: a working directory entered
// through a link (the files walk finds real paths, which no bind of the
// link's path held, so none was protected), and a policy's allow_write
// path that one run replaced with a link to the repository (its bind
// sorted after the read-only binds it then covered). Both were a red
// team's; every path of the layout is now resolved before bubblewrap gets
// it.
func TestProtectedThroughSymlinkedLayout(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	env := gitEnv(t)
	root := t.TempDir()
	repo := filepath.Join(root, "real")
	newRepo(t, env, repo)
	for _, f := range []string{"sub/guard.txt", ".claude/settings.json", "sub/cordon.yaml"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, f), []byte("version: 1\n"), 0o644))
	}
	files := []string{"sub/guard.txt", ".claude/settings.json", "sub/cordon.yaml", ".git/config"}
	unchanged := func(t *testing.T) {
		t.Helper()
		for _, f := range files[:3] {
			b, err := os.ReadFile(filepath.Join(repo, f))
			require.NoError(t, err)
			assert.Equal(t, "version: 1\n", string(b), f)
		}
	}

	t.Run("working directory through a symlink", func(t *testing.T) {
		via := filepath.Join(root, "via")
		require.NoError(t, os.Symlink("real", via))
		// PWD as a shell that ran cd via sets it: cordon's working
		// directory is the link's path.
		r := runCordon(t, runOpts{dir: via, env: append([]string{"PWD=" + via}, env...)},
			append([]string{"--debug", "--deny-write", "sub/guard.txt", "--", "sh", "-c", tryWrites, "sh"}, files...)...)
		require.Contains(t, r.stderr, "--chdir "+repo, "cordon took the link's path for its working directory")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "done\n", r.stdout, "a protected file was written from a working directory entered through a link")
		unchanged(t)
	})

	t.Run("allow_write replaced by a link to the repository", func(t *testing.T) {
		out := filepath.Join(repo, "out", "a", "b", "c", "d")
		require.NoError(t, os.MkdirAll(filepath.Join(out, "f"), 0o755))
		policyFile := filepath.Join(repo, "cordon.yaml")
		require.NoError(t, os.WriteFile(policyFile, []byte("version: 1\ndefault: allow\nfiles:\n  allow_write: ["+filepath.Join(out, "f")+"]\n"), 0o644))
		r := runCordon(t, runOpts{dir: repo, env: env}, "policy", "trust", policyFile)
		require.Equal(t, 0, r.code, r.stderr)
		// The workload's run: the allow_write path becomes a link to the
		// repository (its parent moved aside, a directory made there).
		r = runCordon(t, runOpts{dir: repo, env: env}, "--", "sh", "-c",
			`mv out/a/b/c/d out/a/b/c/d.old && mkdir out/a/b/c/d && ln -s ../../../../.. out/a/b/c/d/f`)
		require.Equal(t, 0, r.code, r.stderr)
		r = runCordon(t, runOpts{dir: repo, env: env}, append([]string{"--deny-write", "sub/guard.txt", "--", "sh", "-c", tryWrites, "sh"}, append(files, "cordon.yaml")...)...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "done\n", r.stdout, "a protected file was written through a planted allow_write link")
		unchanged(t)
	})
}

// TestGitWorktreeSession: a daemon session started in a linked worktree
// gets the same git view as a one-shot run (one start path).
func TestGitWorktreeSession(t *testing.T) {
	requireTool(t, "git")
	d := newDaemonEnv(t)
	d.start()
	env := gitEnv(t)
	root := t.TempDir()
	main := filepath.Join(root, "main")
	newRepo(t, env, main)
	wt := filepath.Join(root, "wt")
	hostGit(t, env, main, "worktree", "add", "-q", wt)
	in := func(args ...string) result {
		t.Helper()
		return d.cordonOpts(runOpts{dir: wt, env: env}, args...)
	}
	r := in("session", "create", "--name", "gitwt")
	require.Equal(t, 0, r.code, r.stderr)
	t.Cleanup(func() { in("session", "rm", "gitwt") })
	r = in("exec", "--session", "gitwt", "--", "sh", "-c", gitWorkout)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "three\non-feature\non-base\ntwo\n", firstLines(hostGit(t, env, wt, "log", "--format=%s"), 4))
	r = in("exec", "--session", "gitwt", "--", "sh", "-c", `echo x >> "$0/hooks/pre-commit"`, filepath.Join(main, ".git"))
	assert.NotEqual(t, 0, r.code, "a session wrote the common dir's hooks")
	assert.NoFileExists(t, filepath.Join(main, ".git", "hooks", "pre-commit"))
}
