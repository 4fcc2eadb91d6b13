package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cordon-sandbox/cordon/internal/testcap"
)

// TestFastPathSharedMappingFlip: an allowed program's bytes (cat's) are in a
// writable file when cordon reads its content to recognise it; right after
// that read (inotify's close-nowrite), a shared writable mapping whose pages
// were all written before turns it into uname (denied: default deny), and
// the mapping is dropped before the kernel opens the file. The file's
// device, inode, size, mtime and ctime never change. The exec event must
// decide what was mapped, not keep the check's answer: before the fix the
// payload ran within a few attempts.
func TestFastPathSharedMappingFlip(t *testing.T) {
	requireSeccompNotify(t)
	// The interpreter itself, not a wrapper earlier on PATH (pyenv's shims
	// are shell scripts, which the default deny would refuse).
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	script := `
import ctypes, mmap, os, sys
P = open('/usr/bin/cat', 'rb').read()
D = open('/usr/bin/uname', 'rb').read()
assert len(D) <= len(P)
D += b'\0' * (len(P) - len(D))
libc = ctypes.CDLL(None, use_errno=True)
path = os.path.abspath('cat')
ran = 0
for attempt in range(60):
    try: os.unlink(path)
    except FileNotFoundError: pass
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o755); os.write(fd, P)
    m = mmap.mmap(fd, len(P), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE); os.close(fd)
    m[:] = P
    ino = libc.inotify_init1(0); libc.inotify_add_watch(ino, path.encode(), 0x10)
    pid = os.fork()
    if pid == 0:
        os.close(ino); m.close()
        try: os.execv(path, ['uname', '-s'])
        except OSError as e: os._exit(100 + e.errno)
    os.read(ino, 4096)
    m[:] = D; m.close()
    _, st = os.waitpid(pid, 0); os.close(ino)
    if st == 0: ran += 1
print('payload ran', ran)
`
	r := cordon(t, "--default", "deny", "--allow", "python3 ...", "--allow", "cat ...", "--", python, "-c", script)
	assert.Contains(t, r.stdout, "payload ran 0\n", "stderr: %s", r.stderr)
	assert.NotContains(t, r.stdout, "Linux")
}

// TestFastPathLoaderWorkingDirectory: ld.so ./true push, where ./true is
// true in /usr/bin (read-only) and git in a writable directory, while
// another thread of the caller moves the shared working directory between
// the two. The loader opens ./true after the exec, so the exec event must
// resolve it again in the working directory the exec left (no other task
// shares it then): before the fix git push reached the remote.
func TestFastPathLoaderWorkingDirectory(t *testing.T) {
	requireSeccompNotify(t)
	git := requireTool(t, "git")
	const loader = "/lib64/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", loader)
	}
	work := filepath.Join(t.TempDir(), "work")
	newRepo(t, []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com"}, work)
	// The remote inside the working directory: the sandbox sees no other
	// part of the host's /tmp.
	remote := filepath.Join(work, "remote.git")
	hostGit(t, nil, work, "init", "-q", "--bare", remote)
	hostGit(t, nil, work, "remote", "add", "origin", remote)
	flip := buildC(t, work, "ldcwdflip.c", "ldcwdflip") // the sandbox's /tmp is its own: inside the working directory
	evil := filepath.Join(work, "evil")
	require.NoError(t, os.Mkdir(evil, 0o755))
	require.NoError(t, os.Symlink(git, filepath.Join(evil, "true")))
	marker := filepath.Join(remote, "refs", "heads", "pwned")

	r := runCordon(t, runOpts{dir: work}, "--deny", "git push", "--", flip, evil, marker, "300")
	assert.Contains(t, r.stdout, "no push in 300 attempts", "stderr: %s", r.stderr)
	assert.NoFileExists(t, marker)
}

// TestPlantedOnPathIsNotAllowed: a PATH directory the sandbox can write
// (a virtualenv's bin, node_modules/.bin) holds a copy of python named ls
// and a symlink to python named cat. In allowlist mode, allow "ls ..." and
// allow "cat ..." must not take them for ls and cat (before: python ran as
// allow "ls ..."), while the real ls and cat still run. In both tiers: in
// bubblewrap's the mounts say what the sandbox can write, in the landlock
// tier its writable set does.
func TestPlantedOnPathIsNotAllowed(t *testing.T) {
	requireSeccompNotify(t)
	const python = "/usr/bin/python3"
	b, err := os.ReadFile(python)
	if err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	for _, tier := range []string{"bwrap", "landlock"} {
		t.Run(tier, func(t *testing.T) {
			if tier == "landlock" {
				requireLandlock(t)
			}
			dir := t.TempDir()
			bin := filepath.Join(dir, "venv", "bin")
			require.NoError(t, os.MkdirAll(bin, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(bin, "ls"), b, 0o755))
			require.NoError(t, os.Symlink(python, filepath.Join(bin, "cat")))
			script := `ls -c 'print("python ran as ls")'; echo rc=$?
cat -c 'print("python ran as cat")'; echo rc=$?
/usr/bin/ls -d / && /usr/bin/cat /dev/null && echo real-ok`
			r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=" + bin + ":/usr/bin:/bin"}},
				"--isolation", tier, "--default", "deny", "--allow", "bash ...", "--allow", "ls ...", "--allow", "cat ...",
				"--", "/usr/bin/bash", "-c", script)
			assert.NotContains(t, r.stdout, "python ran", "stderr: %s", r.stderr)
			assert.Equal(t, "rc=126\nrc=126\n/\nreal-ok\n", r.stdout, r.stderr)
			assert.Equal(t, 2, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
			assert.Contains(t, r.stderr, `(rule: deny "allow by name": the program is in a PATH directory the sandbox can write`)
		})
	}
}

// TestWrapperLookalikesAreNotWrappers: in allowlist mode with allow "ls",
// a program of the workload's named python3 (run as ./python3 -m ls) or
// like the dynamic loader (./ld-linux-x86-64.so.2 /usr/bin/ls), and the
// real python3 -m ls with a planted ./ls.py, must not run (before: each
// was allowed as ls and ran the workload's code).
func TestWrapperLookalikesAreNotWrappers(t *testing.T) {
	requireSeccompNotify(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	dir := t.TempDir()
	planted := buildC(t, dir, "planted.c", "python3")
	b, err := os.ReadFile(planted)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ld-linux-x86-64.so.2"), b, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ls.py"), []byte("print('PLANTED ls.py ran')\n"), 0o644))
	script := `./python3 -m ls; ./ld-linux-x86-64.so.2 /usr/bin/ls; ` + python + ` -m ls; /usr/bin/ls -d / && echo real-ls-ok`
	r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=/usr/bin:/bin"}},
		"--default", "deny", "--allow", "bash ...", "--allow", "ls ...", "--", "/usr/bin/bash", "-c", script)
	assert.NotContains(t, r.stdout, "PLANTED", "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "/\nreal-ls-ok\n")
	assert.Equal(t, 3, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}

// TestMemfdNameIsNoPath: a memfd's link text is a name its maker chose;
// "x/../../usr/bin/true" made "/memfd:x/../../usr/bin/true (deleted)",
// which cleaned to a path allow "/usr/bin/*" names, and the workload's own
// binary ran (red team). A memfd is decided by identity alone.
func TestMemfdNameIsNoPath(t *testing.T) {
	requireSeccompNotify(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	dir := t.TempDir()
	buildC(t, dir, "planted.c", "planted")
	script := `
import fcntl, os
fd = os.memfd_create("x/../../usr/bin/true", os.MFD_ALLOW_SEALING)
os.write(fd, open("planted", "rb").read())
fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK)
try:
    os.execve(fd, ["true"], {})
except OSError as e:
    print("refused", e.errno)
`
	r := runCordon(t, runOpts{dir: dir}, "--default", "deny", "--allow", "python3 ...", "--allow", "/usr/bin/*", "--", python, "-c", script)
	assert.NotContains(t, r.stdout, "PLANTED", "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "refused 1\n", r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied:")
}

// TestGlobNamedCopyIsNotAllowed: a copy of python named "p*" matches
// allow "p?" by name, and its name, looked up as a pattern, stood for every
// p... program on the PATH, python3 among them: the copy ran (red team).
func TestGlobNamedCopyIsNotAllowed(t *testing.T) {
	requireSeccompNotify(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	dir := t.TempDir()
	r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=/usr/bin:/bin"}},
		"--default", "deny", "--allow", "bash ...", "--allow", "cp ...", "--allow", "p? ...", "--",
		"/usr/bin/bash", "-c", `cp `+python+` "./p*" && "./p*" -c 'print("PWNED")'; echo rc=$?`)
	assert.NotContains(t, r.stdout, "PWNED", "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "rc=126\n", r.stderr)
}

// TestOverlongPathIsNoName: a program whose real path is longer than the
// kernel renders (over 4096 bytes, under 24 directories of 250 characters)
// is reached through symlinks by a short path whose text cleans, by ".."
// alone, to a path an allow rule names. cordon took the caller's string
// for the program's name when it could not read the real one, and the
// workload's binary ran under allow "/opt/tools/bin/gen", directly and as
// a #! script's interpreter (red team). It must be decided by identity.
func TestOverlongPathIsNoName(t *testing.T) {
	requireSeccompNotify(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	dir := t.TempDir()
	buildC(t, dir, "planted.c", "payload")
	// Built inside the sandbox: cordon refuses to start in a tree that
	// already holds such paths.
	script := `
import os, shutil, subprocess
base = os.getcwd()
rule = "opt/tools/bin/gen"
n = lambda i: ("d%02d" % i) + "x" * 247
k = len([c for c in base.split("/") if c]) + 3  # ".." that reach "/" from base/s1/s2/q
os.makedirs("w"); os.chdir("w")
for i in range(1, 9):
    os.makedirs(n(i)); os.chdir(n(i))
os.symlink("/".join(n(i) for i in range(9, 25)), "s2")
script = base + "/s1/s2/q/" + "../" * k + rule        # the kernel: d(25-k)/rule
interp = base + "/s1/s2/q/" + "../" * (k + 1) + rule  # the kernel: d(24-k)/rule
for i in range(9, 25):
    os.makedirs(n(i)); os.chdir(n(i))
    if i in (24 - k, 25 - k):
        os.makedirs(os.path.dirname(rule))
        if i == 24 - k:
            shutil.copy(base + "/payload", rule)
        else:
            open(rule, "w").write("#!" + interp + "\n")
        os.chmod(rule, 0o755)
os.makedirs("q"); os.chdir(base)
os.symlink("w/" + "/".join(n(i) for i in range(1, 9)), "s1")
assert os.path.normpath(script) == os.path.normpath(interp) == "/" + rule
assert len(os.path.realpath(interp)) > 4096
for p in (interp, script):
    try:
        r = subprocess.run([p], capture_output=True, text=True)
        print("ran", r.returncode, r.stdout.strip())
    except OSError as e:
        print("refused", e.errno)
`
	r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=/usr/bin:/bin"}},
		"--default", "deny", "--allow", "python3 ...", "--allow", "/opt/tools/bin/gen", "--", python, "-c", script)
	assert.NotContains(t, r.stdout, "PLANTED", "stderr: %s", r.stderr)
	assert.Equal(t, "refused 1\nrefused 1\n", r.stdout, r.stderr)
}

// TestLoaderPreloadIsNotItsProgram: ld.so --preload ./x.so /usr/bin/ls ran
// x.so's code under allow "ls" alone (red team); the loader loading code of
// the caller's choosing needs a rule allowing the loader with it.
func TestLoaderPreloadIsNotItsProgram(t *testing.T) {
	requireSeccompNotify(t)
	const loader = "/lib64/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", loader)
	}
	dir := t.TempDir()
	buildC(t, dir, "preload.c", "x.so", "-shared", "-fPIC")
	script := loader + ` --preload ./x.so /usr/bin/ls -d /; echo rc=$?; ` + loader + ` /usr/bin/ls -d /`
	r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=/usr/bin:/bin"}},
		"--default", "deny", "--allow", "bash ...", "--allow", "ls ...", "--", "/usr/bin/bash", "-c", script)
	assert.NotContains(t, r.stdout+r.stderr, "PRELOADED")
	assert.Equal(t, "rc=126\n/\n", r.stdout, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}
