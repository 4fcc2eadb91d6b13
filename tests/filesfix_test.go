package tests

// Red-team round 2 of the file and secret policy (issue 13 follow-up):
// each test is one finding, replayed through the real binary as the
// attacker did it (two runs: the first prepares, the second harvests, or
// the user's git on the host runs what was planted).

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nobodyCordon prepares running cordon as the unprivileged user nobody: a
// copy of the binary every user can run, and a work directory (HOME too)
// owned by nobody. It returns a function that runs cordon there with args.
func nobodyCordon(t *testing.T) (work string, run func(args ...string) result) {
	t.Helper()
	if os.Getuid() != 0 {
		// Already unprivileged: run as we are.
		work = t.TempDir()
		return work, func(args ...string) result {
			return runCordon(t, runOpts{dir: work, env: homeEnv(work)}, args...)
		}
	}
	setpriv := requireTool(t, "setpriv")
	dir, err := os.MkdirTemp("/var/tmp", "cordon-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() {
		// Whatever the sandbox chmodded away is removable again.
		_ = exec.Command("chmod", "-R", "u+rwx", dir).Run()
		os.RemoveAll(dir)
	})
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "cordon")
	copyFile(t, cordonBin, bin, 0o755)
	work = filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o755))
	require.NoError(t, os.Chown(work, 65534, 65534))
	return work, func(args ...string) result {
		return runCordonVia(t, runOpts{dir: work, env: homeEnv(work)},
			append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
	}
}

// asNobody runs a shell script on the host as the owner of the work
// directory (set-up that the attacker's first run could equally do).
func asNobody(t *testing.T, dir, script string) {
	t.Helper()
	argv := []string{"sh", "-c", script}
	if os.Getuid() == 0 {
		argv = append([]string{requireTool(t, "setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), homeEnv(dir)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// TestRedTeamChmodCannotHideFromTheWalk (S1): as an unprivileged user, a
// run that makes .git or a directory holding a secret unreadable (chmod
// 000) stops the next run with exit 125 and a clear message, instead of
// the next run starting without the protections it could not see and
// chmodding everything back.
func TestRedTeamChmodCannotHideFromTheWalk(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "git")
	work, run := nobodyCordon(t)
	asNobody(t, work, `git init -q && mkdir -p n/m .ssh && echo SECRET > n/m/.env && echo KEY > .ssh/id_ed25519`)

	r := run("--deny-read", ".env*", "--", "sh", "-c", "chmod 000 .git n && echo chmodded")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "chmodded\n", r.stdout)

	attack := `chmod 755 .git n; cat n/m/.env; printf '#!/bin/sh\necho HOOK\n' > .git/hooks/pre-commit && echo hook-written`
	r = run("--deny-read", ".env*", "--", "sh", "-c", attack)
	assert.Equal(t, 125, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "cannot look at "+filepath.Join(work, ".git"))
	assert.Contains(t, r.stderr, "restore its permissions")
	assert.NotContains(t, r.stdout, "SECRET")
	assert.NotContains(t, r.stdout, "hook-written")

	// With .git readable again, the directory holding the .env alone
	// stops the start too.
	require.NoError(t, os.Chmod(filepath.Join(work, ".git"), 0o755))
	r = run("--deny-read", ".env*", "--", "sh", "-c", attack)
	assert.Equal(t, 125, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "cannot look at "+filepath.Join(work, "n"))
	assert.NotContains(t, r.stdout, "SECRET")
	assert.NoFileExists(t, filepath.Join(work, ".git/hooks/pre-commit"))

	// A built-in secret: HOME is the working directory, ~/.ssh made
	// unreadable by one run stops the next.
	require.NoError(t, os.Chmod(filepath.Join(work, "n"), 0o755))
	r = run("--", "chmod", "000", ".ssh")
	require.Equal(t, 0, r.code, r.stderr)
	r = run("--", "sh", "-c", "chmod 700 .ssh; cat .ssh/id_ed25519")
	assert.Equal(t, 125, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "cannot look at "+filepath.Join(work, ".ssh"))
	assert.NotContains(t, r.stdout, "KEY")
}

// TestRedTeamFakeGitDirHidesNothing (S2): a secret moved under a fake
// x/.git/info/ (even one that looks like a git directory) is still found
// by the deny_read walk on the next run.
func TestRedTeamFakeGitDirHidesNothing(t *testing.T) {
	requireSeccompNotify(t)
	dir := gitRepo(t)
	// The state an earlier run leaves: secrets under a fake .git/info/
	// and under a fake git directory's objects/ (made here on the host:
	// moving them there from inside is refused since their parents are
	// pinned, see below).
	writeFile(t, dir, "x/.git/info/n/m/.env", "SECRET\n")
	writeFile(t, dir, "y/.git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, dir, "y/.git/refs/heads/main", "")
	writeFile(t, dir, "y/.git/objects/k/.env.prod", "SECRET2\n")
	writeFile(t, dir, "z/m/.env", "SECRET3\n")
	r := runCordon(t, runOpts{dir: dir}, "--deny-read", ".env*", "--", "sh", "-c",
		"cat x/.git/info/n/m/.env y/.git/objects/k/.env.prod 2>&1; mv z x/.git/info/ 2>&1")
	assert.NotContains(t, r.stdout, "SECRET")
	assert.Contains(t, r.stdout, "x/.git/info/n/m/.env: Permission denied")
	assert.Contains(t, r.stdout, "y/.git/objects/k/.env.prod: Permission denied")
	// Moving a secret in there from inside does not work either: the
	// walk found x/.git/info/n/m/.env, so its parents are mount points
	// (a move across them is a copy, and the secret cannot be read).
	assert.FileExists(t, filepath.Join(dir, "z/m/.env"))
}

// TestRedTeamRenameParentOfSecret (S3): the parents of a hidden path
// inside a writable tree cannot be renamed (~/.ssh when the working
// directory is HOME, config/ holding a denied config/secrets), so the
// next run still finds the secret where the rule says.
func TestRedTeamRenameParentOfSecret(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	r := runCordon(t, runOpts{dir: home, env: homeEnv(home)}, "--", "sh", "-c", "mv .ssh .s 2>&1; mv .aws .a 2>&1; true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "mv: cannot move '.ssh' to '.s': Device or resource busy")
	r = runCordon(t, runOpts{dir: home, env: homeEnv(home)}, "--", "sh", "-c", "cat .s/id_ed25519 .ssh/id_ed25519 .a/credentials .aws/credentials 2>&1")
	assert.NotContains(t, r.stdout, "SECRET")
	assert.Contains(t, r.stdout, ".ssh/id_ed25519: Permission denied")
	assert.DirExists(t, filepath.Join(home, ".ssh"))

	dir := t.TempDir()
	writeFile(t, dir, "config/secrets/prod.key", "SECRET\n")
	r = runCordon(t, runOpts{dir: dir}, "--deny-read", "config/secrets", "--", "sh", "-c", "mv config c2 2>&1; true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Device or resource busy")
	r = runCordon(t, runOpts{dir: dir}, "--deny-read", "config/secrets", "--", "sh", "-c", "cat c2/secrets/prod.key config/secrets/prod.key 2>&1")
	assert.NotContains(t, r.stdout, "SECRET")
	assert.Contains(t, r.stdout, "config/secrets/prod.key: Permission denied")
}

// TestRedTeamNestedRepoAndGitLinks (S4): a nested repository (git init)
// whose config the user's git would read through a gitlink cannot be
// made, a submodule's .git file cannot be pointed elsewhere, and the
// user's git status afterwards runs nothing. --deny-write '!.git' allows
// git init and git clone.
func TestRedTeamNestedRepoAndGitLinks(t *testing.T) {
	requireSeccompNotify(t)
	env := gitEnv(t)
	// Outside /tmp: the sandbox's /tmp is its own, and the clone below
	// reads lib.
	scratch, err := os.MkdirTemp("/var/tmp", "cordon-nested-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scratch) })
	top := filepath.Join(scratch, "top")
	newRepo(t, env, top)
	lib := filepath.Join(scratch, "lib")
	newRepo(t, env, lib)
	hostGit(t, env, top, "submodule", "add", "-q", lib, "sub")
	hostGit(t, env, top, "commit", "-qm", "sub")
	marker := filepath.Join(t.TempDir(), "ran")

	attack := `mkdir e && cd e && git init -q 2>&1; git config core.fsmonitor "touch ` + marker + `; false" 2>&1; cd ..
git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),e 2>&1
mkdir evilgit && git init -q --bare evilgit/x 2>&1
echo "gitdir: ../evilgit" > sub/.git 2>&1 || echo link-refused
mv evilgit e/.git 2>&1 || echo rename-refused
ln -s evilgit e/.git 2>&1 || echo symlink-refused
echo x > .git/commondir 2>&1 || echo commondir-refused
mkdir -p .git/modules/planted 2>&1 || echo modules-refused
cd sub && echo change >> f && git commit -qam in-sub && echo sub-committed
`
	r := runCordon(t, runOpts{dir: top, env: env}, "--", "sh", "-c", attack)
	out := r.stdout + r.stderr
	assert.Contains(t, r.stderr, `/e/.git (rule: deny_write ".git": protected name; to allow new repositories (git init, git clone): --deny-write '!.git')`)
	for _, w := range []string{"link-refused", "rename-refused", "symlink-refused", "commondir-refused", "modules-refused", "sub-committed"} {
		assert.Contains(t, r.stdout, w+"\n", out)
	}
	assert.Contains(t, r.stdout, "mv: cannot move 'evilgit' to 'e/.git': Permission denied")
	assert.NoDirExists(t, filepath.Join(top, "e/.git"))
	assert.NoFileExists(t, filepath.Join(top, ".git/commondir"))
	assert.NoDirExists(t, filepath.Join(top, ".git/modules/planted"))
	b, err := os.ReadFile(filepath.Join(top, "sub/.git"))
	require.NoError(t, err)
	assert.Equal(t, "gitdir: ../.git/modules/sub\n", string(b))
	hostGit(t, env, top, "status", "--short")
	hostGit(t, env, filepath.Join(top, "sub"), "status", "--short")
	assert.NoFileExists(t, marker, "the user's git ran the planted fsmonitor")

	// Opted in: git init and git clone work, and say nothing.
	r = runCordon(t, runOpts{dir: top, env: env}, "--deny-write", "!.git", "--", "sh", "-c",
		"git init -q n2 && git clone -q "+shq(lib)+" c2 && git -C c2 log --format=%s")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "init\n", r.stdout)
	assert.DirExists(t, filepath.Join(top, "n2/.git"))
}

// TestRedTeamGitConfigTargets (P1, P2): what the repository's config
// points git at (core.hooksPath, include.path, a hook symlinked into the
// tree) is protected like the hooks directory, and a config.worktree
// cannot be created.
func TestRedTeamGitConfigTargets(t *testing.T) {
	requireSeccompNotify(t)
	env := gitEnv(t)
	dir := filepath.Join(t.TempDir(), "repo")
	newRepo(t, env, dir)
	hostGit(t, env, dir, "config", "core.hooksPath", ".husky")
	hostGit(t, env, dir, "config", "include.path", "../shared.gitconfig")
	hostGit(t, env, dir, "config", "includeIf.onbranch:main.path", "../conf/branch.gitconfig")
	writeFile(t, dir, "shared.gitconfig", "[user]\n\tname = A\n")
	// The user's global config points into the tree too.
	home := env[0][len("HOME="):]
	writeFile(t, home, ".gitconfig", "[include]\n\tpath = "+filepath.Join(dir, "global-extra.gitconfig")+"\n")
	writeFile(t, dir, "scripts/post-commit", "#!/bin/sh\n")
	require.NoError(t, os.Symlink("../../scripts/post-commit", filepath.Join(dir, ".git/hooks/post-commit")))
	script := `
echo evil > .husky/pre-commit 2>&1 || echo husky-refused
printf '[core]\n\tfsmonitor = evil\n' >> shared.gitconfig 2>&1 || echo include-refused
printf '[core]\n\tfsmonitor = evil\n' > conf/branch.gitconfig 2>&1 || echo includeif-refused
echo evil >> scripts/post-commit 2>&1 || echo hooklink-refused
echo evil > global-extra.gitconfig 2>&1 || echo global-include-refused
echo evil > .git/config.worktree 2>&1 || echo worktree-config-refused
echo change >> f && git commit -qam change && echo committed
`
	r := runCordon(t, runOpts{dir: dir, env: env}, "--", "sh", "-c", script)
	assert.Equal(t, "husky-refused\ninclude-refused\nincludeif-refused\nhooklink-refused\nglobal-include-refused\nworktree-config-refused\ncommitted\n", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: create .git/config.worktree (rule: deny_write "config.worktree": protected name)`)
	assert.NoFileExists(t, filepath.Join(dir, ".husky/pre-commit"))
	assert.NoFileExists(t, filepath.Join(dir, ".git/config.worktree"))
	b, err := os.ReadFile(filepath.Join(dir, "shared.gitconfig"))
	require.NoError(t, err)
	assert.Equal(t, "[user]\n\tname = A\n", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "conf/branch.gitconfig"))
	require.NoError(t, err)
	assert.Empty(t, string(b))
	b, err = os.ReadFile(filepath.Join(dir, "scripts/post-commit"))
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\n", string(b))
}

// TestRedTeamHomeUnset (S5): with HOME unset or empty, ~ in the files
// rules is the home the user database gives, so the rules still hold.
func TestRedTeamHomeUnset(t *testing.T) {
	requireSeccompNotify(t)
	u, err := user.Current()
	require.NoError(t, err)
	require.DirExists(t, u.HomeDir, "the user database's home of the test's user")
	f, err := os.CreateTemp(u.HomeDir, "cordon-test-secret-")
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(f.Name()) })
	_, err = f.WriteString("SECRET\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	rule := "~/" + filepath.Base(f.Name())
	for _, argv := range [][]string{
		{"env", "-u", "HOME", cordonBin},
		{"env", "HOME=", cordonBin},
	} {
		r := runCordonVia(t, runOpts{}, append(argv, "--deny-read", rule, "--", "sh", "-c", "cat "+shq(f.Name())+" 2>&1")...)
		assert.NotContains(t, r.stdout, "SECRET", "%v", argv)
		assert.Contains(t, r.stdout, f.Name()+": Permission denied", "%v: %s", argv, r.stderr)
	}
	// A session whose client has an empty HOME (the daemon started by it).
	d := newDaemonEnv(t)
	r := d.cordonOpts(runOpts{env: []string{"HOME="}}, "exec", "--deny-read", rule, "--", "sh", "-c", "cat "+shq(f.Name())+" 2>&1")
	assert.NotContains(t, r.stdout, "SECRET", r.stderr)
	assert.Contains(t, r.stdout, f.Name()+": Permission denied", r.stderr)
}

// TestRedTeamMoreProtectedNames: .mcp.json, .devcontainer and .zed cannot
// be created (they make tools run commands outside the sandbox).
func TestRedTeamMoreProtectedNames(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	r := runCordon(t, runOpts{dir: dir}, "--", "sh", "-c",
		"echo '{}' > .mcp.json 2>&1 || echo mcp-refused; mkdir .devcontainer 2>&1 || echo devcontainer-refused; mkdir -p a/.zed 2>&1 || echo zed-refused")
	assert.Equal(t, "mcp-refused\ndevcontainer-refused\nzed-refused\n", lastLines(r.stdout, 3), r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: create .mcp.json (rule: deny_write ".mcp.json": protected name)`)
	for _, n := range []string{".mcp.json", ".devcontainer", "a/.zed"} {
		assert.NoFileExists(t, filepath.Join(dir, n))
		assert.NoDirExists(t, filepath.Join(dir, n))
	}
}

// lastLines keeps the lines of s that end in "-refused" (the shell's own
// messages are around them).
func lastLines(s string, _ int) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasSuffix(l, "-refused") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestRedTeamRebaseExecLeftQueued (P3, a documented limit): an interactive
// rebase left stopped at "break" with an exec line queued would run it in
// the user's git rebase --continue. cordon cannot refuse the write (git
// needs the todo list), so it says so at the end of the run.
func TestRedTeamRebaseExecLeftQueued(t *testing.T) {
	requireSeccompNotify(t)
	env := gitEnv(t)
	dir := filepath.Join(t.TempDir(), "repo")
	newRepo(t, env, dir)
	hostGit(t, env, dir, "commit", "-q", "--allow-empty", "-m", "two")
	r := runCordon(t, runOpts{dir: dir, env: env}, "--", "sh", "-c",
		`GIT_SEQUENCE_EDITOR='sed -i "1i break\nexec echo QUEUED"' git rebase -q -i HEAD~1 >/dev/null 2>&1; test -d .git/rebase-merge && echo stopped`)
	assert.Equal(t, "stopped\n", r.stdout, r.stderr)
	assert.Regexp(t, `cordon: warning: .*/\.git/rebase-merge/git-rebase-todo holds 1 exec line\(s\) the sandbox left queued \(first: "echo QUEUED"\)`, r.stderr)
	// A run that leaves the queue as it found it says nothing.
	r = runCordon(t, runOpts{dir: dir, env: env}, "--", "true")
	assert.NotContains(t, r.stderr, "exec line")
}

// TestRedTeamNestedRepositories: a directory of projects (each its own
// repository, the working directory none) gets for each what a
// repository at the working directory gets: hooksPath targets, includes
// and modules/ protected.
func TestRedTeamNestedRepositories(t *testing.T) {
	requireSeccompNotify(t)
	env := gitEnv(t)
	src := t.TempDir()
	proj := filepath.Join(src, "proj")
	newRepo(t, env, proj)
	hostGit(t, env, proj, "config", "core.hooksPath", ".husky")
	script := `
{ mkdir -p proj/.husky && echo evil > proj/.husky/pre-commit; } 2>&1 || echo husky-refused
mkdir -p proj/.git/modules/planted 2>&1 || echo modules-refused
echo evil >> proj/.git/config 2>&1 || echo config-refused
cd proj && echo change >> f && git commit -qam change && echo committed
`
	r := runCordon(t, runOpts{dir: src, env: env}, "--", "sh", "-c", script)
	assert.Equal(t, "husky-refused\nmodules-refused\nconfig-refused\ncommitted\n", lastLinesAll(r.stdout), r.stderr)
	assert.NoFileExists(t, filepath.Join(proj, ".husky/pre-commit"))
	assert.NoDirExists(t, filepath.Join(proj, ".git/modules/planted"))
}

// lastLinesAll keeps the lines of s that are one word (the script's
// markers; the shell's messages have spaces).
func lastLinesAll(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.Contains(l, " ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestFilesNestedDenyWrite: deny_write on a directory and on a file in
// it, in either order, leaves the whole directory read-only. A red team
// found the file's parent pinned writable after the directory's read-only
// bind: everything in D but D/file could be written (deterministic). Not
// in the landlock tier, where existing read-only paths inside a writable
// tree stay writable (README: Landlock cannot take back part of a granted
// tree).
func TestFilesNestedDenyWrite(t *testing.T) {
	requireSeccompNotify(t)
	for _, order := range [][]string{{"D", "D/file"}, {"D/file", "D"}, {"D/e/f", "D", "D/e"}} {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "D", "e"), 0o755))
		for _, f := range []string{"D/file", "D/other", "D/e/f"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("orig\n"), 0o644))
		}
		args := []string{"--no-defaults"}
		for _, p := range order {
			args = append(args, "--deny-write", p)
		}
		args = append(args, "--", "sh", "-c",
			"for f in D/other D/file D/e/f D/new D/e/new; do echo pwn > $f && echo WROTE $f; done; echo pwn > free && echo FREE")
		r := runCordon(t, runOpts{dir: dir}, args...)
		assert.Equal(t, 0, r.code, "%v: %s", order, r.stderr)
		assert.Equal(t, "FREE\n", r.stdout, "%v: only the working directory outside D is writable", order)
		for _, f := range []string{"D/file", "D/other", "D/e/f"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			assert.Equal(t, "orig\n", string(b), "%v: %s", order, f)
		}
		assert.NoFileExists(t, filepath.Join(dir, "D", "new"))
	}
}

// TestFilesRwIntoHooksIsRefused: a --rw path at or inside what an
// any-depth deny_write rule covers (another repository's .git/hooks),
// given directly or through a link an earlier run planted in the working
// directory (a red team wrote a hook so, no race needed), is refused as a
// bind a rule covers is; a bind of the repository or its .git keeps hooks
// protected, and --no-defaults allows it.
func TestFilesRwIntoHooksIsRefused(t *testing.T) {
	requireSeccompNotify(t)
	root := t.TempDir()
	other, repo := filepath.Join(root, "other"), filepath.Join(root, "repo")
	for _, d := range []string{other, repo} {
		out, err := exec.Command("git", "init", "-q", d).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	hooks := filepath.Join(other, ".git", "hooks")
	require.NoError(t, os.Mkdir(filepath.Join(hooks, "sub"), 0o755))
	require.NoError(t, os.Symlink("../other/.git/hooks", filepath.Join(repo, "hl")))
	write := "echo pwn > " + filepath.Join(hooks, "pre-commit") + " && echo WROTE"
	for _, rw := range []string{"hl", hooks, filepath.Join(hooks, "sub")} {
		r := runCordon(t, runOpts{dir: repo}, "--rw", rw, "--", "sh", "-c", write)
		assert.Equal(t, 125, r.code, "--rw %s: %s", rw, r.stderr)
		assert.Contains(t, r.stderr, `deny_write "**/.git/hooks" (builtin) covers `+hooks+", which is bound into the sandbox writable")
		assert.NotContains(t, r.stdout, "WROTE")
	}
	for _, rw := range []string{other, filepath.Join(other, ".git")} {
		r := runCordon(t, runOpts{dir: repo}, "--rw", rw, "--", "sh", "-c", write)
		assert.Contains(t, r.stderr, "Read-only file system", "--rw %s: exit %d", rw, r.code)
		assert.NotContains(t, r.stdout, "WROTE", "--rw %s", rw)
	}
	assert.NoFileExists(t, filepath.Join(hooks, "pre-commit"))
	r := runCordon(t, runOpts{dir: repo}, "--no-defaults", "--rw", "hl", "--", "sh", "-c", write)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "WROTE")
}

// TestFilesNestedDenyRead: --deny-read on a directory and on a file in it
// (literal paths; globs were fine) runs, both unreadable. A red team found
// bubblewrap failing: the file's cover came after the directory's
// read-only tmpfs, where there is no place for it.
func TestFilesNestedDenyRead(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "secrets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets", "a.key"), []byte("KEY\n"), 0o644))
	for _, order := range [][]string{{"secrets", "secrets/a.key"}, {"secrets/a.key", "secrets"}} {
		args := []string{"--no-defaults"}
		for _, p := range order {
			args = append(args, "--deny-read", filepath.Join(dir, p))
		}
		r := runCordon(t, runOpts{dir: dir}, append(args, "--", "sh", "-c", "cat secrets/a.key; ls secrets; echo RAN")...)
		assert.Equal(t, 0, r.code, "%v: %s", order, r.stderr)
		assert.Equal(t, "RAN\n", r.stdout, "%v", order)
	}
}

// TestFilesHiddenDaemonDirectoryStaysPut: the daemon's directory inside the
// working directory (XDG_RUNTIME_DIR there) is hidden, and its parent cannot
// be renamed from inside: a red team renamed it in one run (mv rt rt2), and
// the next run neither hid the directory (read daemon.json, connected to
// the socket) nor left it where the daemon's clients look.
func TestFilesHiddenDaemonDirectoryStaysPut(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	rt := filepath.Join(dir, "rt")
	require.NoError(t, os.MkdirAll(filepath.Join(rt, "cordon"), 0o700))
	require.NoError(t, os.Chmod(rt, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(rt, "cordon", "daemon.json"), []byte(`{"pid":1}`), 0o600))
	o := runOpts{dir: dir, env: []string{"XDG_RUNTIME_DIR=" + rt}}
	r := runCordon(t, o, "--", "sh", "-c", "ls -A rt/cordon; mv rt rt2 && echo MOVED; mv rt/cordon rt/x && echo MOVED2; echo RAN")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "RAN\n", r.stdout, "hidden, and neither the directory nor its parent moved")
	assert.FileExists(t, filepath.Join(rt, "cordon", "daemon.json"))
}

// TestFilesGitDirectoriesOfOtherNames: a git directory not named .git (a
// separate one, git init --separate-git-dir; a bare repository) inside the
// writable tree has its config and hooks protected as a .git directory's
// (a red team wrote core.fsmonitor into one and the host's git status ran
// it); a --rw of such a directory's hooks, or of another tree's .vscode
// (a bare protected name), is refused as a bind a rule covers is.
func TestFilesGitDirectoriesOfOtherNames(t *testing.T) {
	requireSeccompNotify(t)
	root := t.TempDir()
	git := func(args ...string) {
		out, err := exec.Command("git", args...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	git("init", "-q", "--separate-git-dir="+filepath.Join(root, "gd"), filepath.Join(root, "repo2"))
	git("init", "-q", "--bare", filepath.Join(root, "bare.git"))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo2", ".vscode"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "repo"), 0o755))
	// What git takes for a git directory and a stricter test did not (a
	// later red team): HEAD a link into refs/, objects an executable file
	// or a link to a directory, refs a link to a directory.
	files := "gd/config gd/hooks/pre-commit bare.git/config bare.git/hooks/post-receive repo2/.vscode/tasks.json"
	for _, v := range []string{"symhead", "execobj", "symobj", "symrefs"} {
		d := filepath.Join(root, v)
		for _, sub := range []string{"refs/heads", "real-objects", "real-refs"} {
			require.NoError(t, os.MkdirAll(filepath.Join(d, sub), 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "config"), []byte("[core]\n\tbare = false\n"), 0o644))
		head, objects := func() error { return os.WriteFile(filepath.Join(d, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644) }, func() error { return os.Mkdir(filepath.Join(d, "objects"), 0o755) }
		switch v {
		case "symhead":
			head = func() error { return os.Symlink("refs/heads/main", filepath.Join(d, "HEAD")) }
		case "execobj":
			objects = func() error { return os.WriteFile(filepath.Join(d, "objects"), nil, 0o755) }
		case "symobj":
			objects = func() error { return os.Symlink("real-objects", filepath.Join(d, "objects")) }
		case "symrefs":
			require.NoError(t, os.RemoveAll(filepath.Join(d, "refs")))
			require.NoError(t, os.Symlink("real-refs", filepath.Join(d, "refs")))
		}
		require.NoError(t, head())
		require.NoError(t, objects())
		files += " " + v + "/config " + v + "/hooks/pre-commit"
	}
	r := runCordon(t, runOpts{dir: root}, "--", "sh", "-c",
		"for f in "+files+"; do echo x >> $f && echo WROTE $f; done; echo RAN")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "RAN\n", r.stdout)
	assert.NoFileExists(t, filepath.Join(root, "gd", "hooks", "pre-commit"))
	for _, c := range []struct{ rw, rule string }{
		{"../gd/hooks", `deny_write "**/.git/hooks" (builtin) covers ` + filepath.Join(root, "gd", "hooks")},
		{"../bare.git/config", `deny_write "**/.git/config" (builtin) covers ` + filepath.Join(root, "bare.git", "config")},
		{"../repo2/.vscode", `deny_write ".vscode" (builtin) covers ` + filepath.Join(root, "repo2", ".vscode")},
		{"../execobj/config", `deny_write "**/.git/config" (builtin) covers ` + filepath.Join(root, "execobj", "config")},
	} {
		r := runCordon(t, runOpts{dir: filepath.Join(root, "repo")}, "--rw", c.rw, "--", "true")
		assert.Equal(t, 125, r.code, "--rw %s: %s", c.rw, r.stderr)
		assert.Contains(t, r.stderr, c.rule, "--rw %s", c.rw)
	}
	r = runCordon(t, runOpts{dir: filepath.Join(root, "repo")}, "--rw", "../repo2", "--", "sh", "-c", "echo x > ../repo2/.vscode/tasks.json || echo PROTECTED")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "PROTECTED\n", r.stdout)
}

// TestFilesDenyReadUnderPrivateCache: a deny_read file inside a --ro bind
// inside the private ~/.cache tmpfs runs and stays unreadable (a red team
// found every such run refused: its cover was left out of the layout proof
// and the secret itself required at its path). The race the same red team
// won there is tested in runner (TestCoverUnderPrivateDirectory: it needs a
// hook between the layout and bubblewrap's mounts).
func TestFilesDenyReadUnderPrivateCache(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	sub := filepath.Join(home, ".cache", "foo", "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "secret"), []byte("SECRET\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "other"), []byte("other\n"), 0o644))
	r := runCordon(t, runOpts{env: homeEnv(home)}, "--ro", filepath.Join(home, ".cache", "foo"),
		"--deny-read", filepath.Join(sub, "secret"), "--", "sh", "-c",
		"cat "+filepath.Join(sub, "secret")+"; cat "+filepath.Join(sub, "other"))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "other\n", r.stdout)
	assert.Contains(t, r.stderr, "Permission denied")
}

// TestFilesRepositoryOfAnotherNameIsOpen pins the class the README lists as
// still open, and what closes it on the host. A run may give a directory
// of its working tree HEAD, objects/, refs/ and a config (only the name
// .git is refused at creation): git run later in that directory, or below
// it, takes it for its repository ahead of the project's .git and runs its
// core.fsmonitor. With safe.bareRepository = explicit in the user's git
// configuration (what cordon doctor's git-bare-repos row says to set), git
// refuses it.
func TestFilesRepositoryOfAnotherNameIsOpen(t *testing.T) {
	requireSeccompNotify(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	root := t.TempDir()
	out, err := exec.Command("git", "init", "-q", root).CombinedOutput()
	require.NoError(t, err, string(out))
	marker := filepath.Join(t.TempDir(), "fsmonitor-ran")
	r := runCordon(t, runOpts{dir: root}, "--", "sh", "-c",
		`mkdir -p src/sub src/objects src/refs && echo 'ref: refs/heads/main' > src/HEAD && `+
			`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch `+marker+`; false"\n' > src/config && echo MADE`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "MADE\n", r.stdout, "the open class: the run can make the repository")

	hostGit := func(gitconfig string) (string, error) {
		home := t.TempDir()
		if gitconfig != "" {
			require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644))
		}
		cmd := exec.Command("git", "status")
		cmd.Dir = filepath.Join(root, "src", "sub")
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	_, _ = hostGit("")
	assert.FileExists(t, marker, "with git's default the host's git ran the run's core.fsmonitor: the class is open (README)")
	require.NoError(t, os.RemoveAll(marker))

	msg, err := hostGit("[safe]\n\tbareRepository = explicit\n")
	assert.Error(t, err)
	assert.Contains(t, msg, "cannot use bare repository")
	assert.NoFileExists(t, marker, "with safe.bareRepository = explicit the host's git refuses the repository")
}

// TestFilesConfigTargetsThroughALinkStayInside: cordon makes a protected git
// config's include.path target (an empty file) and core.hooksPath (a
// directory) when they are missing, so that they can be protected. A red
// team's run made a repository (found by its content) whose config pointed
// both through a link it planted in the tree (lnk -> a directory outside
// every writable tree): the next plain run created the file there on the
// host (run by root, anywhere: /etc/nologin). What is made must lie in a
// writable tree where it really leads.
func TestFilesConfigTargetsThroughALinkStayInside(t *testing.T) {
	requireSeccompNotify(t)
	root, outside := t.TempDir(), t.TempDir()
	r := runCordon(t, runOpts{dir: root}, "--", "sh", "-c",
		`ln -s `+outside+` lnk && mkdir -p repo/objects repo/refs/heads && echo 'ref: refs/heads/main' > repo/HEAD && `+
			`printf '[core]\n\tbare = true\n\thooksPath = ../lnk/made-hooks\n[include]\n\tpath = ../lnk/made-include\n' > repo/config && echo MADE`)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "MADE\n", r.stdout)
	r = runCordon(t, runOpts{dir: root}, "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is made outside the writable trees")
}
