package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/testcap"
)

// defaultSecrets are files the built-in deny_read list covers, relative to
// HOME.
var defaultSecrets = []string{
	".ssh/id_ed25519", ".ssh/id_rsa", ".ssh/deploy.pem", ".aws/credentials",
	".gnupg/private-keys-v1.d/k.key", ".kube/config", ".docker/config.json", ".netrc",
	".git-credentials", ".config/gh/hosts.yml", ".config/glab-cli/config.yml",
	".config/gcloud/credentials.db", ".azure/msal_token_cache.json", ".password-store/mail.gpg",
	".pypirc", ".npmrc", ".cargo/credentials.toml",
}

// scratchHome makes a HOME full of fake secrets, outside /tmp (every
// sandbox has a /tmp of its own, so a HOME there would be out of sight
// for that reason alone) and readable by every user, so the test shows that
// the sandbox, not the file modes, keeps them out of reach.
func scratchHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("/var/tmp", "cordon-home-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	require.NoError(t, os.Chmod(home, 0o755))
	for _, s := range append(defaultSecrets, ".ssh/id_ed25519.pub", ".cache/go-build/host-entry") {
		p := filepath.Join(home, s)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("SECRET "+s+"\n"), 0o644))
	}
	return home
}

// homeEnv is the environment of a run with HOME and cordon's own state
// under home.
func homeEnv(home string) []string {
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local/state")}
}

// TestFilesSecretsUnreadable: every default secret answers EACCES
// ("Permission denied") inside the sandbox, for root (no capabilities) and
// for an unprivileged user alike, while a public key stays readable and
// the secrets' mode cannot be changed.
func TestFilesSecretsUnreadable(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	var script strings.Builder
	for _, s := range defaultSecrets {
		p := filepath.Join(home, s)
		script.WriteString("if cat " + shq(p) + " >/dev/null 2>err; then echo READ " + shq(s) + "; else cat err; fi; ")
	}
	script.WriteString("cat " + shq(filepath.Join(home, ".ssh/id_ed25519.pub")) + "; ")
	script.WriteString("ls " + shq(filepath.Join(home, ".aws")) + " 2>&1; ")
	script.WriteString("chmod 644 " + shq(filepath.Join(home, ".ssh/id_ed25519")) + " 2>&1; ")
	script.WriteString("chmod 755 " + shq(filepath.Join(home, ".aws")) + " 2>&1; true")

	check := func(t *testing.T, out string) {
		assert.NotContains(t, out, "READ ")
		assert.NotContains(t, out, "SECRET .ssh/id_ed25519\n")
		for _, s := range defaultSecrets {
			assert.Contains(t, out, filepath.Join(home, s)+": Permission denied", "%s", s)
		}
		assert.Contains(t, out, "SECRET .ssh/id_ed25519.pub\n")
		assert.Contains(t, out, "ls: cannot open directory '"+filepath.Join(home, ".aws")+"': Permission denied")
		assert.Contains(t, out, "changing permissions of '"+filepath.Join(home, ".ssh/id_ed25519")+"': Read-only file system")
		assert.Contains(t, out, "changing permissions of '"+filepath.Join(home, ".aws")+"': Read-only file system")
	}
	t.Run("root", func(t *testing.T) {
		r := runCordon(t, runOpts{env: homeEnv(home)}, "--", "sh", "-c", script.String())
		require.Equal(t, 0, r.code, r.stderr)
		check(t, r.stdout)
	})
	t.Run("unprivileged", func(t *testing.T) {
		if os.Getuid() != 0 {
			r := runCordon(t, runOpts{env: homeEnv(home)}, "--", "sh", "-c", script.String())
			check(t, r.stdout)
			return
		}
		setpriv := requireTool(t, "setpriv")
		dir, err := os.MkdirTemp("/var/tmp", "cordon-user-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o777))
		bin := filepath.Join(dir, "cordon")
		copyFile(t, cordonBin, bin, 0o755)
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "--", "sh", "-c", script.String())
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), raceEnv), homeEnv(home)...)
		var errBuf strings.Builder
		cmd.Stderr = &errBuf
		out, err := cmd.Output()
		require.NoError(t, err, "stderr: %s", errBuf.String())
		check(t, string(out))
	})
}

// TestFilesDenyReadGlob: --deny-read '**/.env*' (and the same rule in a
// policy file) makes every .env file of the working tree unreadable,
// however deep, and leaves the rest readable.
func TestFilesDenyReadGlob(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	writeFile(t, dir, ".env", "TOP=1\n")
	writeFile(t, dir, "a/.env", "A=1\n")
	writeFile(t, dir, "a/b/c/.env.local", "C=1\n")
	writeFile(t, dir, "a/b/keep.txt", "kept\n")
	script := `for f in .env a/.env a/b/c/.env.local a/b/keep.txt; do cat $f; done 2>&1`
	want := "cat: .env: Permission denied\ncat: a/.env: Permission denied\n" +
		"cat: a/b/c/.env.local: Permission denied\nkept\n"

	r := runCordon(t, runOpts{dir: dir}, "--deny-read", "**/.env*", "--", "sh", "-c", script)
	assert.Equal(t, want, r.stdout, r.stderr)

	pol := writeFile(t, t.TempDir(), "policy.yaml", `files:
  deny_read: ["**/.env*"]
  examples:
    - deny_read: a/b/.env.production
    - read: a/b/keep.txt
`)
	r = runCordon(t, runOpts{dir: dir}, "--policy", pol, "--", "sh", "-c", script)
	assert.Equal(t, want, r.stdout, r.stderr)

	// A file example that does not hold is a load error (exit 125).
	bad := writeFile(t, t.TempDir(), "policy.yaml", "files:\n  deny_read: [\"**/.env\"]\n  examples:\n    - deny_read: .env.local\n")
	r = runCordon(t, runOpts{dir: dir}, "--policy", bad, "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "file example read .env.local: got allowed, want denied")
	r = runCordon(t, runOpts{dir: dir}, "policy", "test", "--policy", bad)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "FAIL  read .env.local: want denied  ("+bad+":4)\n      got allowed\n")
	r = runCordon(t, runOpts{dir: dir}, "policy", "test", "--policy", pol)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `PASS  read a/b/.env.production: denied by "**/.env*"`)
}

// gitRepo makes a repository with a commit, a hook, an agent settings
// directory and a policy file in a subdirectory.
func gitRepo(t *testing.T) string {
	t.Helper()
	git := requireTool(t, "git")
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@example.com"}, {"config", "user.name", "A"}} {
		out, err := exec.Command(git, append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	writeFile(t, dir, ".git/hooks/post-commit", "#!/bin/sh\necho host hook\n")
	writeFile(t, dir, ".claude/settings.json", "{}\n")
	writeFile(t, dir, "sub/cordon.yaml", "version: 1\n")
	writeFile(t, dir, "main.go", "package main\n")
	return dir
}

// TestFilesProtectedInRepo: inside the writable working directory, hooks
// (existing and new), .git/config, policy files (existing and new) and
// agent settings cannot be written, while git commit, branch and stash
// work.
func TestFilesProtectedInRepo(t *testing.T) {
	requireSeccompNotify(t)
	dir := gitRepo(t)
	config, err := os.ReadFile(filepath.Join(dir, ".git/config"))
	require.NoError(t, err)
	script := `
echo evil > .git/hooks/post-commit 2>&1 || true
echo evil > .git/hooks/pre-commit
echo evil >> .git/config
git config core.fsmonitor evil >/dev/null 2>&1 || echo fsmonitor refused
echo evil > sub/cordon.yaml
echo evil > cordon.yaml
echo evil > .cordon.yaml
mkdir -p deep/er && mkdir deep/er/.claude
echo evil > .claude/settings.json
mkdir .vscode
echo change >> main.go && git add main.go && git commit -qm change && echo committed
git branch side && echo branched
echo more >> main.go && git stash -q && echo stashed
`
	r := runCordon(t, runOpts{dir: dir}, "--", "sh", "-c", script)
	out := r.stdout + r.stderr
	assert.Contains(t, out, ".git/hooks/post-commit: Read-only file system")
	assert.Contains(t, out, ".git/hooks/pre-commit: Read-only file system")
	assert.Contains(t, out, ".git/config: Read-only file system")
	assert.Contains(t, out, "fsmonitor refused")
	// An existing policy file is read-only, and its name is refused to
	// O_CREAT before the mount is reached.
	assert.Contains(t, out, "cannot create sub/cordon.yaml: Permission denied")
	assert.Contains(t, out, "cannot create cordon.yaml: Permission denied")
	assert.Contains(t, out, "cannot create .cordon.yaml: Permission denied")
	assert.Contains(t, out, `cordon: denied: create cordon.yaml (rule: deny_write "cordon.yaml": protected name)`)
	assert.Contains(t, out, `cordon: denied: create deep/er/.claude (rule: deny_write ".claude": protected name)`)
	assert.Contains(t, out, ".claude/settings.json: Read-only file system")
	assert.Regexp(t, `cannot create directory .\.vscode.: Permission denied`, out)
	assert.Contains(t, r.stdout, "committed\nbranched\nstashed\n", r.stderr)
	host := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "missing"
		}
		return string(b)
	}
	assert.Equal(t, "#!/bin/sh\necho host hook\n", host(".git/hooks/post-commit"))
	assert.Equal(t, "missing", host(".git/hooks/pre-commit"))
	assert.Equal(t, string(config), host(".git/config"))
	assert.Equal(t, "version: 1\n", host("sub/cordon.yaml"))
	assert.Equal(t, "missing", host("cordon.yaml"))
	assert.Equal(t, "{}\n", host(".claude/settings.json"))
	assert.NoDirExists(t, filepath.Join(dir, "deep/er/.claude"))
	assert.NoDirExists(t, filepath.Join(dir, ".vscode"))
}

// TestFilesNewHooksDirectory: a repository without .git/hooks gets one
// (empty) before the sandbox starts, so a hook cannot be created there.
func TestFilesNewHooksDirectory(t *testing.T) {
	requireSeccompNotify(t)
	dir := gitRepo(t)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, ".git/hooks")))
	r := runCordon(t, runOpts{dir: dir}, "--", "sh", "-c", "mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit")
	assert.Contains(t, r.stderr, ".git/hooks/pre-commit: Read-only file system")
	assert.NoFileExists(t, filepath.Join(dir, ".git/hooks/pre-commit"))
	assert.DirExists(t, filepath.Join(dir, ".git/hooks"))
}

// TestFilesTricks: renames, links, symlinks placed or swapped in by the
// workload, .., /proc/self/root and openat2 reach neither a protected nor
// an unreadable path. Each line is the system call's own answer.
func TestFilesTricks(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	dir := gitRepo(t)
	bin := t.TempDir()
	ops := buildC(t, bin, "fileops.c", "fileops")
	key := filepath.Join(home, ".ssh/id_ed25519")
	script := strings.Join([]string{
		"mkdir x y",
		"F rename .git/hooks h2",             // a mount point cannot move (another mount: EXDEV)
		"F rename x .claude",                 // a protected name by rename
		"F exchange y .git/hooks",            // nor be exchanged
		"F rename x .git/hooks",              // or replaced
		"F link .git/config hard",            // a hard link crosses mounts
		"F link " + key + " hardkey",         // to a secret, too
		"F symlink .git/hooks/pre-commit s1", // allowed: it points into a read-only place
		"F create s1",                        // and writing through it fails
		"F symlink sub/cordon.yaml s2",       // a dangling link to a protected name
		"F create sub/../.git/config",        // ..
		"F create /proc/self/root" + dir + "/.git/hooks/pre-commit",
		"F read /proc/self/root" + key,
		"F openat2-create cordon.yaml",
		"F openat2-read / " + key,
		"F mknod .idea",
		"ln -s " + key + " swapped && F read swapped", // a symlink made after start
		"rm -rf x && ln -s " + filepath.Join(home, ".aws") + " x && F read x/credentials",
		"F rename .claude c2",
	}, "\n")
	r := runCordon(t, runOpts{dir: dir, env: homeEnv(home)}, "--ro", bin, "--", "sh", "-c",
		"F() { printf '%s ' \"$*\"; "+shq(ops)+" \"$@\"; }\n"+script)
	want := []string{
		"rename .git/hooks h2 rename: EXDEV",
		"rename x .claude rename: EACCES",
		"exchange y .git/hooks exchange: EXDEV",
		"rename x .git/hooks rename: EXDEV",
		"link .git/config hard link: EXDEV",
		"link " + key + " hardkey link: EXDEV",
		"symlink .git/hooks/pre-commit s1 symlink: ok",
		"create s1 create: EROFS",
		"symlink sub/cordon.yaml s2 symlink: EACCES",
		"create sub/../.git/config create: EROFS",
		"create /proc/self/root" + dir + "/.git/hooks/pre-commit create: EROFS",
		"read /proc/self/root" + key + " read: EACCES",
		"openat2-create cordon.yaml openat2-create: EACCES",
		"openat2-read / " + key + " openat2-read: EACCES",
		"mknod .idea mknod: EACCES",
		"read swapped read: EACCES",
		"read x/credentials read: EACCES",
		"rename .claude c2 rename: EACCES",
	}
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Equal(t, want, got, "stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: symlink s2 -> sub/cordon.yaml (rule: deny_write "cordon.yaml": protected name)`)
	assert.NoFileExists(t, filepath.Join(dir, ".git/hooks/pre-commit"))
	assert.NoFileExists(t, filepath.Join(dir, "cordon.yaml"))
	assert.NoFileExists(t, filepath.Join(dir, ".idea"))
	assert.DirExists(t, filepath.Join(dir, ".claude"))
}

// TestFilesBindConflict: a bind that a deny rule covers is an error, not
// one of them silently winning.
func TestFilesBindConflict(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	r := runCordon(t, runOpts{env: homeEnv(home)}, "--rw", filepath.Join(home, ".aws"), "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `deny_read "~/.aws" (builtin) covers `+filepath.Join(home, ".aws")+", which is bound into the sandbox")
	extra := t.TempDir()
	r = runCordon(t, runOpts{env: homeEnv(home)}, "--rw", extra, "--deny-write", extra, "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `deny_write "`+extra+`" (--deny-write) covers `+extra)
	// Without the built-in list the same bind is fine.
	r = runCordon(t, runOpts{env: homeEnv(home)}, "--no-defaults", "--rw", filepath.Join(home, ".aws"), "--", "cat", filepath.Join(home, ".aws/credentials"))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "SECRET .aws/credentials\n", r.stdout)
}

// TestFilesPrivateHomeState: ~/.cache is writable in the sandbox, starts
// empty and is discarded; a writable preset binds the real cache instead.
func TestFilesPrivateHomeState(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	cache := filepath.Join(home, ".cache")
	r := runCordon(t, runOpts{env: homeEnv(home)}, "--", "sh", "-c",
		"ls -A "+shq(cache)+"; mkdir -p "+shq(cache+"/go-build")+" && echo x > "+shq(cache+"/go-build/new")+" && echo wrote")
	assert.Equal(t, "wrote\n", r.stdout, r.stderr)
	assert.NoFileExists(t, filepath.Join(cache, "go-build/new"))
	assert.FileExists(t, filepath.Join(cache, "go-build/host-entry"))

	pol := writeFile(t, t.TempDir(), "policy.yaml", "files:\n  writable: [go-cache]\n")
	r = runCordon(t, runOpts{env: homeEnv(home)}, "--policy", pol, "--", "sh", "-c",
		"ls "+shq(cache+"/go-build")+"; echo x > "+shq(cache+"/go-build/new")+" && echo wrote")
	assert.Equal(t, "host-entry\nwrote\n", r.stdout, r.stderr)
	assert.FileExists(t, filepath.Join(cache, "go-build/new"))
}

// TestFilesAudit: what was hidden and protected at start, and a refused
// creation, are "kind":"file" lines of the audit log; policy show lists
// the rules.
func TestFilesAudit(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	dir := gitRepo(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runCordon(t, runOpts{dir: dir, env: homeEnv(home)}, "--audit", audit, "--", "sh", "-c", "touch .codex || true")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	log := string(b)
	assert.Contains(t, log, `"kind":"file","time":`)
	assert.Contains(t, log, `"action":"hide","path":"`+filepath.Join(home, ".ssh/id_ed25519")+`","rule":"~/.ssh/id_*","rule_id":"builtin"`)
	assert.Contains(t, log, `"action":"protect","path":"`+filepath.Join(dir, ".git/hooks")+`"`)
	assert.Contains(t, log, `"action":"private","path":"`+filepath.Join(home, ".cache")+`"`)
	assert.Contains(t, log, `"action":"deny-create","path":".codex","rule":"deny_write \".codex\""`)

	r = runCordon(t, runOpts{dir: dir, env: homeEnv(home)}, "policy", "show", "--deny-read", "**/.env*")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `\n  builtin +deny_read +~/\.ssh/id_\* +# ssh private keys\n`, r.stdout)
	assert.Regexp(t, `\n  --deny-read +deny_read +\*\*/\.env\*\n`, r.stdout)
	assert.Regexp(t, `\n  builtin +deny_write +\.claude `, r.stdout)
}

// TestFilesSession: a daemon session applies the same files policy (the
// policy document carries it; ~ is the caller's home).
func TestFilesSession(t *testing.T) {
	d := newDaemonEnv(t)
	home := scratchHome(t)
	secret := writeFile(t, home, "project-secret.txt", "SECRET\n")
	r := d.cordonOpts(runOpts{env: homeEnv(home)}, "exec", "--deny-read", "~/project-secret.txt", "--", "sh", "-c",
		"cat "+shq(secret)+" "+shq(filepath.Join(home, ".ssh/id_ed25519"))+" 2>&1; touch .cursor 2>&1")
	assert.Contains(t, r.stdout, secret+": Permission denied", r.stderr)
	assert.Contains(t, r.stdout, filepath.Join(home, ".ssh/id_ed25519")+": Permission denied")
	assert.Contains(t, r.stdout, "touch: cannot touch '.cursor': Permission denied")
	assert.Contains(t, r.stderr, `cordon: denied: create .cursor (rule: deny_write ".cursor": protected name)`)
}

// TestFilesSubmoduleProtected: a submodule's git directory (.git/modules/
// NAME) has hooks and config of its own, run by git outside the sandbox:
// they are protected like the repository's, and committing in the
// submodule still works.
func TestFilesSubmoduleProtected(t *testing.T) {
	requireSeccompNotify(t)
	git := requireTool(t, "git")
	lib := gitRepo(t)
	run := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command(git, append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	run(lib, "add", "main.go")
	run(lib, "commit", "-qm", "lib")
	top := gitRepo(t)
	run(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
	gitdir := filepath.Join(top, ".git/modules/vendor/lib")
	require.DirExists(t, gitdir)
	require.NoError(t, os.RemoveAll(filepath.Join(gitdir, "hooks"))) // made again at start
	config, err := os.ReadFile(filepath.Join(gitdir, "config"))
	require.NoError(t, err)
	script := `
echo evil > .git/modules/vendor/lib/hooks/pre-commit
echo evil >> .git/modules/vendor/lib/config
cd vendor/lib && git config core.fsmonitor evil >/dev/null 2>&1 || echo fsmonitor refused
echo change >> main.go && git -c user.email=a@example.com -c user.name=A commit -qam change && echo committed
`
	r := runCordon(t, runOpts{dir: top}, "--", "sh", "-c", script)
	assert.Contains(t, r.stderr, ".git/modules/vendor/lib/hooks/pre-commit: Read-only file system")
	assert.Contains(t, r.stderr, ".git/modules/vendor/lib/config: Read-only file system")
	assert.Equal(t, "fsmonitor refused\ncommitted\n", r.stdout, r.stderr)
	after, err := os.ReadFile(filepath.Join(gitdir, "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(after))
	assert.NoFileExists(t, filepath.Join(gitdir, "hooks/pre-commit"))
}

// TestFilesLiftProtectedName: an exception lifts one protected name (a
// clone of a repository that commits .vscode), the others stay.
func TestFilesLiftProtectedName(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	r := runCordon(t, runOpts{dir: dir}, "--deny-write", "!.vscode", "--", "sh", "-c",
		"mkdir -p clone/.vscode && echo made; mkdir clone/.claude")
	assert.Equal(t, "made\n", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: create clone/.claude (rule: deny_write ".claude": protected name)`)
	assert.DirExists(t, filepath.Join(dir, "clone/.vscode"))
}

// i386Mkdir is a static 32-bit program that calls mkdir(".claude", 0755)
// through int 0x80 and exits with the errno (0 on success).
const i386Mkdir = `
	.data
path:	.asciz ".claude"
	.text
	.globl _start
_start:
	movl $39, %eax
	movl $path, %ebx
	movl $0755, %ecx
	int $0x80
	movl %eax, %ebx
	negl %ebx
	movl $1, %eax
	int $0x80
`

// x32Create opens ".codex" with O_CREAT through the x32 syscall table
// (open is x32 number 2) with a 32-bit pointer from a non-PIE program.
const x32Create = `
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char path[] = ".codex";
int main(void) {
	long rc = syscall(0x40000000L | 2, (unsigned long)path, O_CREAT | O_WRONLY, 0644);
	printf("x32-open: %s\n", rc < 0 ? strerror(errno) : "ok");
	return 0;
}
`

// TestFilesCreateFromOtherArchitectures: the creation checks hold for
// i386 (int 0x80) and x32 callers, whose system call numbers differ.
func TestFilesCreateFromOtherArchitectures(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	buildI386(t, dir) // skips (fails under CI) without IA32 emulation
	as, ld := requireTool(t, "as"), requireTool(t, "ld")
	src := filepath.Join(dir, "mkdir32.s")
	require.NoError(t, os.WriteFile(src, []byte(i386Mkdir), 0o644))
	out, err := exec.Command(as, "--32", "-o", filepath.Join(dir, "mkdir32.o"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(ld, "-m", "elf_i386", "-o", filepath.Join(dir, "mkdir32"), filepath.Join(dir, "mkdir32.o")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	r := runCordon(t, runOpts{dir: dir}, "--", "./mkdir32")
	assert.Equal(t, 13, r.code, "EACCES: %s", r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: create .claude (rule: deny_write ".claude": protected name)`)
	assert.NoDirExists(t, filepath.Join(dir, ".claude"))

	gcc := requireTool(t, "gcc")
	csrc := filepath.Join(dir, "x32.c")
	require.NoError(t, os.WriteFile(csrc, []byte(x32Create), 0o644))
	out, err = exec.Command(gcc, "-O2", "-no-pie", "-o", filepath.Join(dir, "x32"), csrc).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// The filter sees the x32 number before the kernel dispatches it, so
	// the call is refused whether or not the kernel has the x32 ABI.
	r = runCordon(t, runOpts{dir: dir}, "--", "./x32")
	assert.Equal(t, "x32-open: Permission denied\n", r.stdout, r.stderr)
	assert.NoFileExists(t, filepath.Join(dir, ".codex"))
}

// TestFilesProtectedNameAnyCase: creating a protected name in another case
// is refused too (on a case-insensitive mount it would be the protected
// directory itself).
func TestFilesProtectedNameAnyCase(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	r := runCordon(t, runOpts{dir: dir}, "--", "sh", "-c",
		"mkdir .GIT; mkdir .Claude; echo x > CORDON.yaml; mkdir ok && echo made")
	assert.Contains(t, r.stderr, `cordon: denied: create .GIT (rule: deny_write ".git": protected name`)
	assert.Contains(t, r.stderr, `cordon: denied: create .Claude (rule: deny_write ".claude": protected name)`)
	assert.Contains(t, r.stderr, `cordon: denied: create CORDON.yaml (rule: deny_write "cordon.yaml": protected name)`)
	assert.Contains(t, r.stdout, "made")
	for _, n := range []string{".GIT", ".Claude", "CORDON.yaml"} {
		assert.NoFileExists(t, filepath.Join(dir, n))
		assert.NoDirExists(t, filepath.Join(dir, n))
	}
}

// TestFilesPlaceholderLocation: the mode-000 file bound over unreadable
// files is made in /dev/shm (a memory file system: cheaper to make on the
// start-up's path), or in the temporary directory when /dev/shm cannot take
// it (here: a read-only /dev/shm in a mount namespace of the test's own);
// wherever it is made, the secret stays unreadable, the cover's mode cannot
// be changed, and the placeholder's directory is gone after the run.
func TestFilesPlaceholderLocation(t *testing.T) {
	requireSeccompNotify(t)
	home := scratchHome(t)
	secret := filepath.Join(home, ".ssh/id_ed25519")
	script := "cat " + shq(secret) + " 2>&1; chmod 644 " + shq(secret) + " 2>&1; grep cordon-files- /proc/self/mountinfo; true"
	// check checks the secret and returns the placeholder's directory's
	// name and the mount line that shows where it was.
	check := func(t *testing.T, r result) (string, string) {
		t.Helper()
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, secret+": Permission denied")
		assert.NotContains(t, r.stdout, "SECRET")
		assert.Contains(t, r.stdout, "changing permissions of '"+secret+"': Read-only file system")
		line := ""
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.Contains(l, " "+secret+" ") {
				line = l
			}
		}
		name := regexp.MustCompile(`cordon-files-[0-9]+`).FindString(line)
		require.NotEmpty(t, name, "the secret is covered by the placeholder: %s", r.stdout)
		return name, line
	}
	gone := func(t *testing.T, p string) {
		t.Helper()
		_, err := os.Lstat(p)
		assert.True(t, os.IsNotExist(err), "the placeholder's directory %s is removed after the run (%v)", p, err)
	}
	t.Run("/dev/shm", func(t *testing.T) {
		if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() || unix.Access("/dev/shm", unix.W_OK) != nil {
			testcap.SkipOrFail(t, "no writable /dev/shm here")
		}
		name, line := check(t, runCordon(t, runOpts{env: homeEnv(home)}, "--", "sh", "-c", script))
		// Whether /dev/shm is a mount of its own (the mount's root is
		// then /NAME/denied) or a directory of /'s.
		assert.Regexp(t, ` (/dev/shm)?/`+name+`/denied`, line, "the cover comes from /dev/shm")
		assert.NotContains(t, line, filepath.Join(os.TempDir(), name))
		gone(t, filepath.Join("/dev/shm", name))
	})
	t.Run("read-only /dev/shm", func(t *testing.T) {
		if os.Getuid() != 0 {
			testcap.SkipOrFail(t, "making /dev/shm read-only in a mount namespace needs root")
		}
		unshare := requireTool(t, "unshare")
		// A private mount namespace where /dev/shm is a read-only
		// tmpfs: cordon falls back to the temporary directory and the
		// start does not fail for want of a cheaper place.
		cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o ro tmpfs /dev/shm && exec "$@"`, "sh", cordonBin, "--", "sh", "-c", script)
		cmd.Dir = t.TempDir()
		cmd.Env = append(append(os.Environ(), raceEnv), homeEnv(home)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
			code = ee.ExitCode()
		}
		name, line := check(t, result{code: code, stdout: stdout.String(), stderr: stderr.String()})
		assert.Contains(t, line, filepath.Join(os.TempDir(), name)+"/denied", "the cover comes from the temporary directory")
		gone(t, filepath.Join(os.TempDir(), name))
	})
}
