package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The landlock tier and --isolation auto, on hosts made to fail bubblewrap
// the way real ones do: a container's seccomp profile (nsdeny.c), the same
// for an unprivileged user, no bwrap on PATH; and a kernel without Landlock.

// fsProbe tries, from inside the sandbox, every way out of the writable set
// it knows and prints NAME=ok or NAME=ERRNO for each. argv[1] is a
// directory outside the writable set that DAC would let anyone write
// (mode 0777, a 0666 file "existing" in it): only Landlock stands between.
const fsProbe = `
import errno, os, sys
out = sys.argv[1]
ex = os.path.join(out, "existing")
def t(name, f):
    try:
        f()
        print(name + "=ok")
    except OSError as e:
        print(name + "=" + errno.errorcode[e.errno])
def symlink_write():
    os.symlink(ex, "link")
    open("link", "w").write("x")
def dirlink_create():
    os.symlink(out, "dirlink")
    open("dirlink/viadir", "w")
t("write_inside", lambda: open("inside", "w").write("x"))
t("write_tmpdir", lambda: open(os.path.join(os.environ["TMPDIR"], "t"), "w").write("x"))
t("create_outside", lambda: open(os.path.join(out, "new"), "w"))
t("write_outside", lambda: open(ex, "w"))
t("append_outside", lambda: open(ex, "a"))
t("truncate_outside", lambda: os.truncate(ex, 0))
t("unlink_outside", lambda: os.unlink(ex))
t("mkdir_outside", lambda: os.mkdir(os.path.join(out, "d")))
t("dotdot", lambda: open("../" + os.path.basename(out) + "/existing", "w"))
t("symlink_write", symlink_write)
t("dirlink_create", dirlink_create)
t("rename_out_in", lambda: os.rename(ex, "stolen"))
t("rename_in_out", lambda: os.rename("inside", os.path.join(out, "moved")))
t("link_out_in", lambda: os.link(ex, "hard"))
t("write_tmp", lambda: open("/tmp/cordon-landlock-probe-%d" % os.getpid(), "w"))
t("proc_mem", lambda: open("/proc/%d/mem" % os.getppid(), "r+b"))
t("signal_host", lambda: os.kill(1, 0))
t("write_cache", lambda: open(os.path.join(os.environ["XDG_CACHE_HOME"], "c"), "w").write("x"))
print("tmpdir=" + os.environ["TMPDIR"])
`

// tierHost is a host layout for one landlock-tier run: a shared parent
// with the working directory and an outside directory in it, readable (and
// the outside writable, by DAC) for any user.
type tierHost struct {
	parent, work, out, probe string
}

func newTierHost(t *testing.T) tierHost {
	t.Helper()
	parent := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(parent), 0o755)) // t.TempDir's parent is 0700
	require.NoError(t, os.Chmod(parent, 0o755))
	h := tierHost{parent: parent, work: filepath.Join(parent, "work"), out: filepath.Join(parent, "out"),
		probe: filepath.Join(parent, "probe.py")}
	for _, d := range []string{h.work, h.out} {
		require.NoError(t, os.Mkdir(d, 0o777))
		require.NoError(t, os.Chmod(d, 0o777))
	}
	require.NoError(t, os.WriteFile(filepath.Join(h.out, "existing"), []byte("keep\n"), 0o666))
	require.NoError(t, os.Chmod(filepath.Join(h.out, "existing"), 0o666))
	require.NoError(t, os.WriteFile(h.probe, []byte(fsProbe), 0o644))
	return h
}

// script is what every tier run does: the filesystem probe, then a denied
// exec and an allowed one.
func (h tierHost) script() string {
	return "python3 " + h.probe + " " + h.out + "; git push origin main; echo push_rc=$?; echo allowed"
}

// check asserts what the landlock tier must enforce, from the run's
// output and the host's files afterwards.
func (h tierHost) check(t *testing.T, r result) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	assert.Equal(t, "ok", got["write_inside"], "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, "ok", got["write_tmpdir"])
	assert.Equal(t, "ok", got["write_cache"], "XDG_CACHE_HOME is the run's private cache")
	for _, k := range []string{"create_outside", "write_outside", "append_outside", "truncate_outside",
		"unlink_outside", "mkdir_outside", "dotdot", "symlink_write", "dirlink_create", "rename_in_out", "write_tmp",
		"proc_mem"} {
		assert.Equal(t, "EACCES", got[k], "%s must fail with EACCES; stdout: %s", k, r.stdout)
	}
	// Moving a file between a read-only and a writable hierarchy is a
	// "refer" the kernel refuses with EXDEV or EACCES, depending on which
	// side lacks the right.
	for _, k := range []string{"rename_out_in", "link_out_in"} {
		assert.Contains(t, []string{"EACCES", "EXDEV"}, got[k], "%s must fail; stdout: %s", k, r.stdout)
	}
	if isolation.LandlockABI() >= 6 {
		// Signals are scoped to the sandbox: not even pid 1, which root
		// could otherwise signal.
		assert.Equal(t, "EPERM", got["signal_host"], "stdout: %s", r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(h.out, "existing"))
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(b), "the outside file is untouched")
	entries, err := os.ReadDir(h.out)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing was created outside: %v", entries)
	_, err = os.Stat(filepath.Join(h.work, "inside"))
	assert.NoError(t, err, "the write inside landed")

	// Execs are still decided.
	assert.Contains(t, r.stderr, "cordon: denied: git push origin main")
	assert.Contains(t, r.stdout, "push_rc=126\n")
	assert.Contains(t, r.stdout, "allowed\n")

	// The private TMPDIR is cordon's, and gone after the run.
	tmp := got["tmpdir"]
	require.NotEmpty(t, tmp)
	_, err = os.Stat(tmp)
	assert.True(t, os.IsNotExist(err), "TMPDIR %s removed after the run: %v", tmp, err)
	requireNoOwnLeftovers(t)
}

// stepDownLines returns the lines that announce auto's step down.
func stepDownLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "isolation landlock (bubblewrap cannot run here") {
			out = append(out, l)
		}
	}
	return out
}

func requireLandlock(t *testing.T) {
	t.Helper()
	testcap.RequireSeccompNotify(t)
	if isolation.LandlockABI() < 1 {
		testcap.SkipOrFail(t, "Landlock is not available on this kernel")
	}
	requireTool(t, "python3")
	requireTool(t, "git")
}

// A container whose seccomp profile refuses namespaces: auto runs the
// landlock tier, says so once with the reason, and the tier holds.
func TestIsolationAutoInContainerSeccomp(t *testing.T) {
	requireLandlock(t)
	nsdeny := buildC(t, t.TempDir(), "nsdeny.c", "nsdeny")
	h := newTierHost(t)
	if os.Getuid() == 0 {
		// Run by root, auto refuses the landlock tier (Landlock cannot
		// stop root changing the mode of the host's files); naming it
		// runs it with a warning. TestIsolationAutoInContainerSeccompUnprivileged
		// covers the step-down.
		r := runCordonVia(t, runOpts{dir: h.work}, nsdeny, cordonBin, "--", "sh", "-c", "echo ran > f")
		assert.Equal(t, 125, r.code, r.stderr)
		assert.Contains(t, r.stderr, "run by root the landlock tier cannot protect the host's files")
		assert.Contains(t, r.stderr, "docker run --user")
		assert.NoFileExists(t, filepath.Join(h.work, "f"), "nothing ran")
		r = runCordonVia(t, runOpts{dir: h.work}, nsdeny, cordonBin, "--isolation", "landlock", "--deny", "git push", "--", "sh", "-c", h.script())
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "cordon: warning: --isolation landlock as root: run by root the landlock tier cannot protect")
		assert.Empty(t, stepDownLines(r.stderr), r.stderr)
		h.check(t, r)
		return
	}
	r := runCordonVia(t, runOpts{dir: h.work}, nsdeny, cordonBin, "--deny", "git push", "--", "sh", "-c", h.script())
	assert.Equal(t, 0, r.code, r.stderr)
	lines := stepDownLines(r.stderr)
	require.Len(t, lines, 1, "one step-down line: %s", r.stderr)
	assert.True(t, strings.HasPrefix(lines[0], "cordon: "), lines[0])
	assert.Contains(t, lines[0], "Creating new namespace failed: Operation not permitted")
	assert.Contains(t, lines[0], "To get the bwrap tier: ")
	h.check(t, r)

	// Naming the tier silences the line; the tier is the same.
	h2 := newTierHost(t)
	r = runCordonVia(t, runOpts{dir: h2.work}, nsdeny, cordonBin, "--isolation", "landlock", "--deny", "git push", "--", "sh", "-c", h2.script())
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, stepDownLines(r.stderr), r.stderr)
	h2.check(t, r)
}

// The same container, cordon run by an unprivileged user: DAC would let
// nobody write the outside directory; Landlock does not.
func TestIsolationAutoInContainerSeccompUnprivileged(t *testing.T) {
	requireLandlock(t)
	if os.Getuid() != 0 {
		testcap.SkipOrFail(t, "needs root to switch to nobody (setpriv)")
	}
	setpriv := requireTool(t, "setpriv")
	h := newTierHost(t)
	bins := filepath.Join(h.parent, "bin")
	require.NoError(t, os.Mkdir(bins, 0o755))
	nsdeny := buildC(t, bins, "nsdeny.c", "nsdeny")
	bin := filepath.Join(bins, "cordon")
	copyFile(t, cordonBin, bin, 0o755)
	r := runCordonVia(t, runOpts{dir: h.work, env: []string{"HOME=" + h.work}},
		setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", nsdeny, bin,
		"--deny", "git push", "--", "sh", "-c", "id -u; "+h.script())
	assert.Equal(t, 0, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "65534\n"), r.stdout)
	require.Len(t, stepDownLines(r.stderr), 1, r.stderr)
	h.check(t, r)

	// A session's sandbox (exec without a daemon) the same way: its
	// processes are spawned by the init's shims, and an unprivileged
	// supervisor verifies their execs too.
	h2 := newTierHost(t)
	r = runCordonVia(t, runOpts{dir: h2.work, env: []string{"HOME=" + h2.work}},
		setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", nsdeny, bin,
		"exec", "--no-daemon", "--deny", "git push", "--", "sh", "-c", "id -u; "+h2.script())
	assert.Equal(t, 0, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "65534\n"), r.stdout)
	h2.check(t, r)
}

// No bubblewrap on PATH: auto says so and what to install.
func TestIsolationAutoWithoutBwrap(t *testing.T) {
	requireLandlock(t)
	h := newTierHost(t)
	bins := filepath.Join(h.parent, "path")
	require.NoError(t, os.Mkdir(bins, 0o755))
	for _, tool := range []string{"sh", "git", "id"} {
		p := requireTool(t, tool)
		require.NoError(t, os.Symlink(p, filepath.Join(bins, tool)))
	}
	// python3 may be a shim (pyenv) that needs more of PATH: link the
	// interpreter itself.
	py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	require.NoError(t, err)
	pyPath := strings.TrimSpace(string(py))
	if os.Getuid() == 0 {
		// nobody runs it below: root's own interpreter (pyenv under
		// /root) is out of its reach.
		pyPath = requireTool(t, "/usr/bin/python3")
	}
	require.NoError(t, os.Symlink(pyPath, filepath.Join(bins, "python3")))
	argv := []string{cordonBin}
	env := []string{"PATH=" + bins}
	if os.Getuid() == 0 {
		// Run by root, auto refuses the landlock tier
		// (TestIsolationAutoInContainerSeccomp): step down as nobody.
		setpriv := requireTool(t, "setpriv")
		bin := filepath.Join(bins, "cordon")
		copyFile(t, cordonBin, bin, 0o755)
		argv = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin}
		env = append(env, "HOME="+h.work)
	}
	r := runCordonVia(t, runOpts{dir: h.work, env: env},
		append(argv, "--isolation", "auto", "--deny", "git push", "--", "sh", "-c", h.script())...)
	assert.Equal(t, 0, r.code, r.stderr)
	lines := stepDownLines(r.stderr)
	require.Len(t, lines, 1, r.stderr)
	assert.Contains(t, lines[0], "bubblewrap is not installed")
	assert.Contains(t, lines[0], "apt-get install bubblewrap")
	h.check(t, r)
}

// Neither bubblewrap nor Landlock: auto refuses (never steps down to none
// silently), naming the tier explicitly fails the same way, and none still
// runs with its warning.
func TestIsolationAutoRefusesWithoutLandlock(t *testing.T) {
	requireLandlock(t)
	nsdeny := buildC(t, t.TempDir(), "nsdeny.c", "nsdeny-noll", "-DNO_LANDLOCK")
	work := t.TempDir()
	r := runCordonVia(t, runOpts{dir: work}, nsdeny, cordonBin, "--", "sh", "-c", "echo ran > f")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no isolation tier works on this host")
	assert.Contains(t, r.stderr, "--isolation none")
	_, err := os.Stat(filepath.Join(work, "f"))
	assert.True(t, os.IsNotExist(err), "nothing ran")

	r = runCordonVia(t, runOpts{dir: work}, nsdeny, cordonBin, "--isolation", "landlock", "--", "true")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "Landlock unavailable")

	r = runCordonVia(t, runOpts{dir: work}, nsdeny, cordonBin, "--isolation", "none", "--deny", "git push", "--", "sh", "-c", "git push; echo rc=$?")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the command is NOT sandboxed")
	assert.Contains(t, r.stdout, "rc=126")
}

// --net none, --net filter and network rules run in the landlock tier
// (TestLandlockNetFilter and the tests beside it say what holds), also
// when auto stepped down and the policy has network rules.
func TestIsolationLandlockNetworkLimits(t *testing.T) {
	requireLandlock(t)
	if isolation.LandlockABI() < 4 {
		for _, args := range [][]string{{"--net", "none"}, {"--net", "filter"}, {"--allow-net", "example.com"}} {
			r := cordon(t, append(append([]string{"--isolation", "landlock"}, args...), "--", "true")...)
			assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "needs Landlock ABI 4", args)
		}
		return
	}
	for _, args := range [][]string{{"--net", "none"}, {"--net", "filter"}, {"--allow-net", "example.com"}} {
		r := cordon(t, append(append([]string{"--isolation", "landlock"}, args...), "--", "sh", "-c", "echo ran")...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, "ran\n", r.stdout, args)
	}
	nsdeny := buildC(t, t.TempDir(), "nsdeny.c", "nsdeny")
	work := t.TempDir()
	r := runCordonVia(t, runOpts{dir: work}, nsdeny, cordonBin, "--allow-net", "example.com", "--", "sh", "-c",
		"curl -sS -m 10 --noproxy '*' http://127.0.0.1:9/; echo ran > f")
	if os.Getuid() == 0 {
		// auto refuses the landlock tier to root before it looks at
		// the network (TestIsolationAutoInContainerSeccomp).
		assert.Equal(t, 125, r.code, r.stderr)
		assert.Contains(t, r.stderr, "run by root the landlock tier cannot protect")
		_, err := os.Stat(filepath.Join(work, "f"))
		assert.True(t, os.IsNotExist(err), "nothing ran")
		return
	}
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, stepDownLines(r.stderr), 1, r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied: connect 127.0.0.1:9 by curl")
}

// A session made through the daemon runs in the landlock tier too, with
// its processes confined the same way.
func TestIsolationLandlockSession(t *testing.T) {
	requireLandlock(t)
	d := newDaemonEnv(t)
	d.start()
	h := newTierHost(t)
	r := d.cordonOpts(runOpts{dir: h.work}, "session", "create", "--name", "ll", "--isolation", "landlock", "--deny", "git push")
	require.Equal(t, 0, r.code, r.stderr)
	r = d.cordonOpts(runOpts{dir: h.work}, "exec", "--session", "ll", "-c", h.script())
	assert.Equal(t, 0, r.code, r.stderr)
	got := r.stdout
	assert.Contains(t, got, "write_inside=ok")
	assert.Contains(t, got, "write_tmpdir=ok")
	assert.Contains(t, got, "write_outside=EACCES")
	assert.Contains(t, got, "create_outside=EACCES")
	assert.Contains(t, got, "dotdot=EACCES")
	assert.Contains(t, got, "push_rc=126")
	r = d.cordonOpts(runOpts{dir: h.work}, "session", "rm", "ll")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(filepath.Join(h.out, "existing"))
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(b))
}

// doctor shows the tier each run would get: landlock under a container's
// seccomp profile, with the fix, and cordon still counts as runnable.
func TestIsolationDoctorShowsTier(t *testing.T) {
	requireLandlock(t)
	isoRow := func(stdout string) string {
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "isolation ") {
				return l
			}
		}
		return ""
	}
	h := newTierHost(t)
	nsdeny := buildC(t, h.parent, "nsdeny.c", "nsdeny")
	argv := []string{nsdeny, cordonBin, "doctor"}
	if os.Getuid() == 0 {
		// Run by root, auto refuses the landlock tier, and doctor
		// says so; as nobody it steps down.
		r := runCordonVia(t, runOpts{}, nsdeny, cordonBin, "doctor")
		assert.Equal(t, 1, r.code, r.stdout+r.stderr)
		row := isoRow(r.stdout)
		assert.Contains(t, row, "FAIL")
		assert.Contains(t, row, "run by root the landlock tier cannot protect the host's files")
		bin := filepath.Join(h.parent, "cordon")
		copyFile(t, cordonBin, bin, 0o755)
		argv = []string{requireTool(t, "setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", nsdeny, bin, "doctor"}
	}
	r := runCordonVia(t, runOpts{dir: h.work, env: []string{"HOME=" + h.work}}, argv...)
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	row := isoRow(r.stdout)
	assert.Contains(t, row, "warn")
	assert.Contains(t, row, "runs get the landlock tier: bubblewrap cannot run here")
	assert.Contains(t, r.stdout, "Landlock ABI")

	r = runCordonVia(t, runOpts{}, cordonBin, "doctor")
	assert.Contains(t, r.stdout, "runs get the bwrap tier")
}

// The landlock tier cannot hide the daemon's socket: the daemon itself
// refuses clients that run inside a sandbox, which could otherwise ask it
// for a session under a policy of their choosing.
func TestIsolationLandlockCannotUseDaemon(t *testing.T) {
	requireLandlock(t)
	d := newDaemonEnv(t)
	d.start()
	work := t.TempDir()
	r := d.cordonOpts(runOpts{dir: work}, "exec", "-c", "echo outside-ok")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "outside-ok\n", r.stdout)

	r = d.cordonOpts(runOpts{dir: work}, "--isolation", "landlock", "--deny", "git push", "--",
		cordonBin, "exec", "--no-defaults", "-c", "git push; echo escaped=$?")
	assert.NotContains(t, r.stdout, "escaped=", "a sandboxed client must not get a sandbox of its own choosing")
	assert.Contains(t, r.stderr, "processes inside a cordon sandbox may not use the daemon")
	assert.NotEqual(t, 0, r.code)
}

// daemonRace connects to the daemon's socket (argv[1]) from a child that
// exits at once, then sends GET /v1/sessions from the parent on that socket,
// 50 times: when the daemon accepts, the process it identifies is gone.
// It prints answered=N, the replies that held more than the refusal.
const daemonRace = `
import os, socket, sys
req = b"GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
answered = 0
for i in range(50):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        s.connect(sys.argv[1])
        os._exit(0)
    os.waitpid(pid, 0)
    try:
        s.sendall(req)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        out = b""
    s.close()
    if out.count(b"HTTP/1.1 ") > 1 or (b"forbidden" not in out and b" 200 " in out) or out.count(b"}") > 1:
        answered += 1
print("answered=%d" % answered)
`

// A process of a landlock-tier sandbox that connects to the daemon from a
// child which exits before the daemon accepts is refused like any other
// (a red team's: the namespace check failed, the peer was refused with a
// 403, and the handler then ran anyway, a missing return; a denied command
// ran outside any sandbox through POST /v1/exec in about half the tries).
func TestIsolationLandlockDaemonRefusesVanishedPeer(t *testing.T) {
	requireLandlock(t)
	d := newDaemonEnv(t)
	disc := d.start()
	work := t.TempDir()
	r := d.cordonOpts(runOpts{dir: work, timeout: 60 * time.Second}, "--isolation", "landlock", "--",
		"python3", "-c", daemonRace, disc.Socket)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "answered=0\n", r.stdout)
}

// A writable set that holds cordon's trust store (running from the home
// directory) is refused in the landlock tier: Landlock cannot keep the
// store read-only, and the store decides the next run's policy.
func TestIsolationLandlockRefusesWritableTrustStore(t *testing.T) {
	requireLandlock(t)
	work := t.TempDir()
	r := runCordon(t, runOpts{dir: work, env: []string{"XDG_STATE_HOME=" + filepath.Join(work, "state")}},
		"--isolation", "landlock", "--", "sh", "-c", "echo ran > f")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "cannot keep "+filepath.Join(work, "state", "cordon"))
	_, err := os.Stat(filepath.Join(work, "f"))
	assert.True(t, os.IsNotExist(err), "nothing ran")
}

// The files policy in the landlock tier: every default secret outside the
// writable set is unreadable (Landlock grants every other entry of their
// parents instead of "/"), a public key beside them is not, creating a
// protected name in the working directory is refused by the supervisor,
// and a deny_read inside the writable set, which Landlock cannot carve, is
// refused rather than ignored.
func TestIsolationLandlockFilesPolicy(t *testing.T) {
	requireLandlock(t)
	home := scratchHome(t)
	work := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(work, 0o755))
	var script strings.Builder
	for _, s := range defaultSecrets {
		p := filepath.Join(home, s)
		script.WriteString("if cat " + shq(p) + " >/dev/null 2>err; then echo READ " + shq(s) + "; else cat err; fi; ")
	}
	script.WriteString("cat " + shq(filepath.Join(home, ".ssh/id_ed25519.pub")) + "; ")
	script.WriteString("mkdir .claude 2>&1; echo mkdir_rc=$?; rm -f err")
	r := runCordon(t, runOpts{dir: work, env: homeEnv(home)}, "--isolation", "landlock", "--", "sh", "-c", script.String())
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "READ ")
	for _, s := range defaultSecrets {
		assert.Contains(t, r.stdout, filepath.Join(home, s)+": Permission denied", "%s", s)
	}
	assert.Contains(t, r.stdout, "SECRET .ssh/id_ed25519.pub\n")
	assert.Contains(t, r.stdout, "mkdir_rc=1")
	_, err := os.Stat(filepath.Join(work, ".claude"))
	assert.True(t, os.IsNotExist(err), ".claude was not created")

	require.NoError(t, os.WriteFile(filepath.Join(work, ".env"), []byte("TOKEN=1\n"), 0o644))
	r = runCordon(t, runOpts{dir: work, env: homeEnv(home)}, "--isolation", "landlock", "--deny-read", "**/.env*", "--", "cat", ".env")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the landlock tier cannot make "+filepath.Join(work, ".env")+" unreadable")
	assert.NotContains(t, r.stdout, "TOKEN")
}

// startWithOrphan starts cordon in tier on a shell that runs python3 with
// setsid (sleeping in orphan, which names it) and then child, and returns
// once python has said it is ready. The run is bounded to 30 s.
func startWithOrphan(t *testing.T, tier, orphan, child string) *exec.Cmd {
	t.Helper()
	cmd, line := startCordonLine(t, "--isolation", tier, "--", "sh", "-c",
		`setsid python3 -c "import time; print('ready', flush=True); `+orphan+`" & `+child)
	require.Equal(t, "ready\n", line)
	return cmd
}

// startCordonLine starts cordon with args (bounded to a minute) and returns
// it once its command has printed a first line, which it returns too.
func startCordonLine(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, cordonBin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), raceEnv)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	return cmd, line
}

// requireBareTier skips (fails under CI) unless tier, landlock or none, can
// run here.
func requireBareTier(t *testing.T, tier string) {
	t.Helper()
	if tier == "landlock" {
		requireLandlock(t)
		return
	}
	testcap.RequireSeccompNotify(t)
	requireTool(t, "python3")
}

// Without a pid namespace a process can leave the init's tree when the
// init dies (killed from outside here; from inside, Landlock's signal
// scoping refuses it on this kernel): what the command had detached
// (setsid) is then adopted by cordon itself (a subreaper in the bare
// tiers) and killed when the run ends, instead of outliving it.
func TestIsolationLandlockInitKilledLeavesNothing(t *testing.T) {
	requireLandlock(t)
	requireTool(t, "python3")
	cmd := startWithOrphan(t, "landlock", "time.sleep(313)", "sleep 300")
	var initPid int
	for _, k := range proc.Children(cmd.Process.Pid) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k))
		if strings.Contains(string(b), proc.InitArg) {
			initPid = k
		}
	}
	require.NotZero(t, initPid, "cordon's init")
	require.NoError(t, syscall.Kill(initPid, syscall.SIGKILL))
	assert.Error(t, cmd.Wait(), "the run fails when its init dies")
	assertNoProcess(t, "time.sleep(313)")
	requireNoOwnLeftovers(t)
}

// cordon itself killed outright (kill -9, a CI job's hard timeout) in the
// tiers without a pid namespace: the init outlives it long enough to end the
// command's whole tree, a process that left it with setsid included. Before,
// the init died with cordon (parent-death signal) and the tree ran on. In the
// landlock tier the init must signal from the thread that started the
// command: go-landlock puts each thread in a Landlock domain of its own, and
// Landlock (ABI 6+) refuses signals into a sibling domain.
func TestIsolationCordonKilledLeavesNothing(t *testing.T) {
	for i, tier := range []string{"landlock", "none"} {
		t.Run(tier, func(t *testing.T) {
			requireBareTier(t, tier)
			orphan, child := fmt.Sprintf("time.sleep(%d)", 331+2*i), fmt.Sprintf("sleep %d", 332+2*i)
			cmd := startWithOrphan(t, tier, orphan, child)
			eventually(t, 5*time.Second, func() bool { return len(processesWith(child)) > 0 }, "%q never started", child)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			eventually(t, 5*time.Second, func() bool {
				return len(processesWith(orphan))+len(processesWith(child)) == 0
			}, "the command's processes outlived cordon: %v %v", processesWith(orphan), processesWith(child))
			requireNoOwnLeftovers(t)
		})
	}
}

// A chain of processes that regrows at its bottom as its top is killed (a
// red team's, rebuilt as testdata/adversarial/regrow.c), each link in a
// session of its own: killing the direct children of a subreaper a round at
// a time never ends it, so before, in the tiers without a pid namespace, it
// outlived cordon killed outright, a run's --timeout (cordon exited 124 and
// the chain ran on under the host's init), and the command's own exit (cordon
// did not return while the chain lived). Every pass now kills the whole tree
// one walk finds (proc.KillDescendants).
func TestIsolationRegrowingChainEnds(t *testing.T) {
	bin := buildC(t, t.TempDir(), "regrow.c", "regrow")
	for i, tier := range []string{"landlock", "none"} {
		for j, how := range []string{"cordon killed", "timeout", "command exits"} {
			t.Run(tier+"/"+how, func(t *testing.T) {
				requireBareTier(t, tier)
				marker := fmt.Sprintf("chain-%d%d", i, j)
				args := []string{"--isolation", tier}
				shell := "SETSID=1 " + bin + " 500 40 " + marker
				switch how {
				case "timeout":
					// Long enough for the chain to grow first on a loaded
					// machine (a 2 s timeout fired before it had).
					args = append(args, "--timeout", "8s")
					shell += "; sleep 600"
				case "cordon killed":
					shell += "; sleep 600"
				}
				t.Cleanup(func() { freezeAndKill(marker) })
				cmd, line := startCordonLine(t, append(args, "--", "sh", "-c", shell)...)
				require.Equal(t, "ready\n", line)
				if how != "command exits" { // then the init is already at it
					grow := 10 * time.Second
					if how == "timeout" {
						grow = 7 * time.Second // before the run's own
					}
					eventually(t, grow, func() bool { return len(processesWith(marker)) >= 400 }, "the chain never grew")
				}
				start := time.Now()
				if how == "cordon killed" {
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				}
				_ = cmd.Wait()
				if how != "cordon killed" {
					assert.Less(t, time.Since(start), 10*time.Second, "cordon returned only %v after the chain was ready", time.Since(start))
				}
				// The init keeps killing for up to 10 s (killTreeBound):
				// on a loaded machine (a red team running beside the
				// suite, load 10) a 5 s wait ended while it was still
				// at it.
				eventually(t, 15*time.Second, func() bool { return len(processesWith(marker)) == 0 },
					"%d links of the chain outlived the run", len(processesWith(marker)))
			})
		}
	}
}

// A process whose main thread has exited while another thread runs on (a
// second red team's): /proc says "Z" for its leader, and the tree walk took
// that for dead, so it neither killed the process nor walked its children,
// which outlived every way a bare run ends. Liveness is now the pidfd's (it
// polls readable only once the whole thread group has exited).
func TestIsolationLeaderExitedProcessEnds(t *testing.T) {
	bin := buildC(t, t.TempDir(), "leaderexit.c", "leaderexit")
	for i, tier := range []string{"landlock", "none"} {
		for j, how := range []string{"cordon killed", "command exits"} {
			t.Run(tier+"/"+how, func(t *testing.T) {
				requireBareTier(t, tier)
				marker := fmt.Sprintf("leader-%d%d", i, j)
				shell := bin + " 40 " + marker
				if how == "cordon killed" {
					shell += "; sleep 600"
				}
				t.Cleanup(func() { freezeAndKill(marker) })
				cmd, line := startCordonLine(t, "--isolation", tier, "--", "sh", "-c", shell)
				var pid int
				_, err := fmt.Sscanf(line, "ready %d", &pid)
				require.NoError(t, err, line)
				alive := func() bool {
					fd, err := unix.PidfdOpen(pid, 0)
					if err != nil {
						return false
					}
					defer unix.Close(fd)
					return proc.PidfdAlive(fd)
				}
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
				if how == "cordon killed" { // else the init may be at it already
					eventually(t, 5*time.Second, func() bool { return len(processesWith(marker)) > 0 }, "the child never started")
					require.True(t, alive(), "the process lives on its second thread")
				}
				start := time.Now()
				if how == "cordon killed" {
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				}
				_ = cmd.Wait()
				if how == "command exits" {
					assert.Less(t, time.Since(start), 5*time.Second, "cordon returned only %v after the command", time.Since(start))
				}
				eventually(t, 5*time.Second, func() bool { return !alive() && len(processesWith(marker)) == 0 },
					"the process (alive: %v) or its child (%v) outlived the run", alive(), processesWith(marker))
			})
		}
	}
}

// freezeAndKill ends every process whose command line holds marker, a
// regrowing chain included: stopped first, until a pass finds none running
// (a stopped process cannot fork), then killed.
func freezeAndKill(marker string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pids := processesWith(marker)
		if len(pids) == 0 {
			return
		}
		running := 0
		for _, pid := range pids {
			if st, err := proc.ReadStat(pid); err == nil && st.State != 'T' {
				running++
			}
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		if running == 0 {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The same for a session's processes when the daemon is killed outright:
// the session's init ends their trees, one that left its tree with setsid
// included.
func TestIsolationLandlockDaemonKilledLeavesNothing(t *testing.T) {
	requireLandlock(t)
	d := newDaemonEnv(t)
	d.start()
	work := t.TempDir()
	r := d.cordonOpts(runOpts{dir: work}, "session", "create", "--name", "ll", "--isolation", "landlock")
	require.Equal(t, 0, r.code, r.stderr)
	cmd := exec.Command(cordonBin, "exec", "--session", "ll", "-c", "setsid sleep 343 & sleep 344")
	cmd.Dir = work
	cmd.Env = append(append(os.Environ(), raceEnv), d.env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	eventually(t, 10*time.Second, func() bool { return len(sleeping("343")) > 0 && len(sleeping("344")) > 0 },
		"the session's processes never started")
	pids := d.daemonPids()
	require.NotEmpty(t, pids, "the daemon")
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	eventually(t, 5*time.Second, func() bool { return len(sleeping("343"))+len(sleeping("344")) == 0 },
		"the session's processes outlived the daemon: %v %v", sleeping("343"), sleeping("344"))
}

// Red team round on the landlock tier (issue 15 follow-up), finding 1:
// run by root, the landlock tier has no user namespace, so the command
// kept root's full capability set: mknod a block device and write a
// filesystem below Landlock, add an address to the host's loopback, chown
// a root-owned file outside the writable set. Every capability is dropped
// now (the bounding set too), and device nodes are refused by the seccomp
// filter in every tier.
func TestIsolationLandlockRootHasNoCapabilities(t *testing.T) {
	requireLandlock(t)
	if os.Getuid() != 0 {
		testcap.SkipOrFail(t, "needs root: the finding is about what root keeps")
	}
	ip := requireTool(t, "ip")
	h := newTierHost(t)
	victim := filepath.Join(h.out, "existing")
	const addr = "10.123.45.67/32"
	t.Cleanup(func() { _ = exec.Command(ip, "addr", "del", addr, "dev", "lo").Run() })
	script := `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status
mknod ./blk b 7 0 2>/dev/null; echo mknod_blk=$?
mknod ./chr c 1 3 2>/dev/null; echo mknod_chr=$?
mkfifo ./fifo; echo mkfifo=$?
` + ip + ` addr add ` + addr + ` dev lo 2>/dev/null; echo ip=$?
chown 65534 ` + victim + ` 2>/dev/null; echo chown=$?
`
	r := runCordon(t, runOpts{dir: h.work}, "--isolation", "landlock", "--", "sh", "-c", script)
	require.Equal(t, 0, r.code, r.stderr)
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Contains(t, r.stdout, k+":\t0000000000000000\n", "%s: %s", k, r.stdout)
	}
	assert.Contains(t, r.stdout, "mknod_blk=1\n")
	assert.Contains(t, r.stdout, "mknod_chr=1\n")
	assert.Contains(t, r.stdout, "mkfifo=0\n", "a FIFO is not a device")
	assert.Contains(t, r.stdout, "ip=2\n")
	assert.Contains(t, r.stdout, "chown=1\n")
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(victim, &st))
	assert.Equal(t, uint32(0), st.Uid, "the file outside kept its owner")
	out, err := exec.Command(ip, "addr", "show", "dev", "lo").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "10.123.45.67")
	_, err = os.Lstat(filepath.Join(h.work, "blk"))
	assert.True(t, os.IsNotExist(err), "no block device was made")

	// A session's sandbox (its init spawns commands through shims) the
	// same way.
	r = runCordon(t, runOpts{dir: t.TempDir()}, "exec", "--no-daemon", "--isolation", "landlock", "--", "sh", "-c",
		"grep -E '^Cap(Prm|Eff|Bnd):' /proc/self/status; mknod ./blk b 7 0 2>/dev/null; echo mknod_blk=$?")
	require.Equal(t, 0, r.code, r.stderr)
	for _, k := range []string{"CapPrm", "CapEff", "CapBnd"} {
		assert.Contains(t, r.stdout, k+":\t0000000000000000\n", "session %s: %s", k, r.stdout)
	}
	assert.Contains(t, r.stdout, "mknod_blk=1\n")

	// The seccomp filter refuses device nodes in every tier, even where
	// the sandbox still has CAP_MKNOD (--isolation none, run by root).
	for _, tier := range []string{"none", "bwrap"} {
		r = runCordon(t, runOpts{dir: t.TempDir()}, "--isolation", tier, "--", "sh", "-c",
			"mknod ./blk b 7 0; echo blk=$?; mknod ./chr c 1 3; echo chr=$?")
		require.Equal(t, 0, r.code, "%s: %s", tier, r.stderr)
		assert.Contains(t, r.stdout, "blk=1\n", tier)
		assert.Contains(t, r.stdout, "chr=1\n", tier)
		assert.Contains(t, r.stderr, "Operation not permitted", tier)
	}
}

// Finding 2: the landlock tier's refusals compared paths as written, so a
// working directory or --rw reached through a symlink (cd /tmp/h, where
// h -> $HOME) made the trust store and the deny_read defaults writable and
// readable. Every path is compared by its real location now.
func TestIsolationLandlockSymlinkedWorkdir(t *testing.T) {
	requireLandlock(t)
	home := scratchHome(t)
	links := t.TempDir()
	link := filepath.Join(links, "h")
	require.NoError(t, os.Symlink(home, link))
	store := filepath.Join(home, ".local/state/cordon")
	require.NoError(t, os.MkdirAll(store, 0o755))

	// The working directory is home, reached through the link ($PWD
	// names the link, as a shell's cd does).
	r := runCordon(t, runOpts{dir: link, env: append(homeEnv(home), "PWD="+link)},
		"--isolation", "landlock", "--", "sh", "-c", "echo pwned > "+shq(filepath.Join(store, "trusted.json")))
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the landlock tier cannot keep "+store)
	assert.NoFileExists(t, filepath.Join(store, "trusted.json"), "nothing ran")

	// --rw through a link to the state directory.
	work := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(work, 0o755))
	stateLink := filepath.Join(links, "state")
	require.NoError(t, os.Symlink(filepath.Join(home, ".local/state"), stateLink))
	r = runCordon(t, runOpts{dir: work, env: homeEnv(home)},
		"--isolation", "landlock", "--rw", stateLink, "--", "sh", "-c", "echo pwned > "+shq(filepath.Join(store, "trusted.json")))
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the landlock tier cannot keep "+store)
	assert.NoFileExists(t, filepath.Join(store, "trusted.json"), "nothing ran")

	// The state directory elsewhere: the deny_read defaults under home
	// (the writable working directory, through the link) are refused,
	// not silently left readable.
	env := append(homeEnv(home), "XDG_STATE_HOME="+filepath.Join(t.TempDir(), "state"), "PWD="+link)
	r = runCordon(t, runOpts{dir: link, env: env}, "--isolation", "landlock", "--", "cat", filepath.Join(home, ".ssh/id_rsa"))
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the landlock tier cannot make "+home)
	assert.NotContains(t, r.stdout, "SECRET")
}

// Finding 3: a deny_read under /tmp was dropped in the landlock tier
// (the files plan assumed bubblewrap's private /tmp); the landlock tier
// sees the host's /tmp, so the rule is enforced there.
func TestIsolationLandlockDenyReadInTmp(t *testing.T) {
	requireLandlock(t)
	dir, err := os.MkdirTemp("/tmp", "cordon-ll-secret-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	secret := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET\n"), 0o644))
	r := runCordon(t, runOpts{}, "--isolation", "landlock", "--deny-read", secret, "--", "cat", secret)
	assert.NotEqual(t, 0, r.code, r.stdout)
	assert.NotContains(t, r.stdout, "SECRET")
	assert.Contains(t, r.stderr, "Permission denied")
}

// startAgent runs a real ssh-agent on sock holding a fresh key, and
// returns the key's fingerprint.
func startAgent(t *testing.T, sock string) string {
	t.Helper()
	agent := requireTool(t, "ssh-agent")
	keygen := requireTool(t, "ssh-keygen")
	add := requireTool(t, "ssh-add")
	cmd := exec.Command(agent, "-D", "-a", sock)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		require.Less(t, i, 500, "ssh-agent made no socket at %s", sock)
		time.Sleep(10 * time.Millisecond)
	}
	key := filepath.Join(t.TempDir(), "id")
	out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput()
	require.NoError(t, err, "%s", out)
	add1 := exec.Command(add, key)
	add1.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	out, err = add1.CombinedOutput()
	require.NoError(t, err, "%s", out)
	fp, err := exec.Command(keygen, "-l", "-f", key+".pub").Output()
	require.NoError(t, err)
	return strings.Fields(string(fp))[1]
}

// Finding 4: with the ssh keys unreadable (deny_read defaults), the
// command still signed through the agent: Landlock (below ABI 9) does not
// cover connecting to a named socket, and scrubbing SSH_AUTH_SOCK does not
// hide ssh-agent's /tmp/ssh-*/agent.* socket. The landlock tier refuses
// to run while such an agent is reachable.
func TestIsolationLandlockRefusesReachableAgent(t *testing.T) {
	requireLandlock(t)
	home := scratchHome(t)
	work := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(work, 0o755))
	sockDir := t.TempDir()
	sock := filepath.Join(sockDir, "agent.sock")
	fp := startAgent(t, sock)
	list := "SSH_AUTH_SOCK=" + sock + " ssh-add -l"
	r := runCordon(t, runOpts{dir: work, env: append(homeEnv(home), "SSH_AUTH_SOCK="+sock)},
		"--isolation", "landlock", "--", "sh", "-c", list)
	assert.Equal(t, 125, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "cannot keep the agent socket "+sock)
	assert.NotContains(t, r.stdout, fp)

	// SSH_AUTH_SOCK unset: ssh-agent's default place is found anyway.
	tmpDir, err := os.MkdirTemp("/tmp", "ssh-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmpDir) })
	sock2 := filepath.Join(tmpDir, "agent.4242")
	fp2 := startAgent(t, sock2)
	r = runCordon(t, runOpts{dir: work, env: append(homeEnv(home), "SSH_AUTH_SOCK=")},
		"--isolation", "landlock", "--", "sh", "-c", "SSH_AUTH_SOCK="+sock2+" ssh-add -l")
	assert.Equal(t, 125, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "cannot keep the agent socket "+sock2)
	assert.NotContains(t, r.stdout, fp2)

	// Without the key rules there is nothing to keep: the run goes on
	// (and the agent is usable, as outside).
	r = runCordon(t, runOpts{dir: work, env: append(homeEnv(home), "SSH_AUTH_SOCK="+sock)},
		"--isolation", "landlock", "--no-defaults", "--", "sh", "-c", list)
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, fp)
}

// requireLandlockScope gates a test on Landlock's signal scoping (ABI 6,
// Linux 6.12).
func requireLandlockScope(t *testing.T) {
	t.Helper()
	requireLandlock(t)
	if isolation.LandlockABI() < 6 {
		testcap.SkipOrFail(t, "Landlock ABI 6 (signal scoping) is not available on this kernel")
	}
}

// scopeProbe signals, from a command of the sandbox, its parent ($1: the
// init, or a session process's shim), a grandchild's view of the same, its
// own background job and itself, and prints NAME=ok or NAME=refused.
const scopeProbe = `p=$1
kill -0 $p 2>/dev/null && echo parent=ok || echo parent=refused
kill -STOP $p 2>/dev/null && echo parent_stop=ok || echo parent_stop=refused
kill -CONT $p 2>/dev/null
sh -c 'kill -0 $1 2>/dev/null && echo grandchild=ok || echo grandchild=refused' _ $p
sleep 30 &
kill $! 2>/dev/null && echo own_job=ok || echo own_job=refused
wait
kill -0 $$ && echo self=ok
`

// A command cannot signal its init (nor, in a session, its shim, nor
// bubblewrap's pid 1): it runs in a Landlock domain that scopes signals only
// (Landlock ABI 6, a layer added between fork and exec), nested under the
// init's, so the init may signal it and it may not signal the init. Before,
// in the landlock tier it shared the init thread's domain: it could stop the
// init, and cordon then killed from outside left its processes running
// (ENOSYS on every exec), or kill it; in either tier a session process that
// stopped its shim (SIGSTOP, which the shim cannot block) hung `cordon exec`
// for ever (red teams'). Its own processes and itself it still signals.
func TestIsolationLandlockCommandCannotSignalItsInit(t *testing.T) {
	want := []string{"parent=refused", "parent_stop=refused", "grandchild=refused", "own_job=ok", "self=ok"}
	for _, tier := range []string{"landlock", "bwrap"} {
		t.Run(tier+"/one-shot", func(t *testing.T) {
			requireLandlockScope(t)
			r := runCordon(t, runOpts{timeout: 20 * time.Second}, "--isolation", tier, "--",
				"sh", "-c", `sh -c "$0" _ "$PPID"`, scopeProbe)
			require.Equal(t, 0, r.code, r.stderr)
			for _, w := range want {
				assert.Contains(t, r.stdout, w)
			}
			assert.NotContains(t, r.stderr, "init was stopped")
		})
		t.Run(tier+"/session", func(t *testing.T) {
			requireLandlockScope(t)
			d := newDaemonEnv(t)
			d.start()
			work := t.TempDir()
			r := d.cordonOpts(runOpts{dir: work}, "session", "create", "--name", "scope", "--isolation", tier)
			require.Equal(t, 0, r.code, r.stderr)
			script := filepath.Join(work, "probe.sh")
			require.NoError(t, os.WriteFile(script, []byte(scopeProbe), 0o644))
			r = d.cordonOpts(runOpts{dir: work, timeout: 20 * time.Second}, "exec", "--session", "scope", "-c", `sh ./probe.sh "$PPID"`)
			require.Equal(t, 0, r.code, r.stderr)
			for _, w := range want {
				assert.Contains(t, r.stdout, w)
			}
		})
	}
	t.Run("bwrap/pid 1", func(t *testing.T) {
		requireLandlockScope(t)
		r := runCordon(t, runOpts{timeout: 20 * time.Second}, "--isolation", "bwrap", "--",
			"sh", "-c", `kill -0 1 2>/dev/null && echo pid1=ok || echo pid1=refused`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "pid1=refused\n", r.stdout)
	})
}

// Run as a normal user in the tiers without bubblewrap, the command is made
// dumpable so that the supervisor can verify its first exec; the init must
// stay non-dumpable, or the command reaches its control socket through
// /proc/INIT (and in --isolation none forges the command's exit status). A
// red team's: the command's clone shared the init's memory, and
// dumpability is the memory's, so the init stayed dumpable for the whole
// run. Its /proc entries are then the user's instead of root's. With
// --isolation none the same holds for cordon itself.
func TestIsolationBareInitStaysNonDumpable(t *testing.T) {
	for _, tier := range []string{"landlock", "none"} {
		t.Run(tier, func(t *testing.T) {
			requireBareTier(t, tier)
			work, _ := nobodyCordon(t)
			// Below HOME (work): the landlock tier refuses a writable home.
			proj := filepath.Join(work, "proj")
			asNobody(t, work, "mkdir proj")
			argv := []string{cordonBin}
			if os.Getuid() == 0 {
				argv = []string{requireTool(t, "setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups",
					filepath.Join(filepath.Dir(work), "cordon")}
			}
			argv = append(argv, "--isolation", tier, "--", "sh", "-c",
				`stat -c 'owner=%u' /proc/$PPID/fd; ls /proc/$PPID/fd >/dev/null 2>&1 && echo fds=listed || echo fds=refused
h=$(awk '{print $4}' /proc/$PPID/stat); stat -c 'host_owner=%u' /proc/$h/fd
(exec 3<>/proc/$h/mem) 2>/dev/null && echo host_mem=open || echo host_mem=refused; id -u`)
			r := runCordonVia(t, runOpts{dir: proj, env: homeEnv(work)}, argv...)
			require.Equal(t, 0, r.code, r.stderr)
			if tier == "none" {
				// Nothing scopes the command: cordon itself (the
				// supervisor) is non-dumpable, or the command rewrote it
				// through /proc/CORDON/mem (a red team's).
				assert.Contains(t, r.stdout, "host_owner=0\n")
				assert.Contains(t, r.stdout, "host_mem=refused")
			}
			uid := strings.TrimSpace(r.stdout[strings.LastIndex(strings.TrimSpace(r.stdout), "\n")+1:])
			require.NotEqual(t, "0", uid, "the premise: cordon runs as a normal user")
			assert.Contains(t, r.stdout, "owner=0\n", "the init's /proc entries are root's (non-dumpable)")
			assert.Contains(t, r.stdout, "fds=refused")
		})
	}
}

// The command starts with the open-file limit cordon was started with: the
// Go runtime raises its own soft RLIMIT_NOFILE to the hard limit, and
// syscall.ForkExec gave children the original back; cordon's own start path
// (C) did not (a red team's: 1024 became the hard limit, which breaks
// select(2)-based programs), nor had a session's.
func TestIsolationCommandKeepsOpenFileLimit(t *testing.T) {
	requireSeccompNotify(t)
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Max < 1000 {
		testcap.SkipOrFail(t, "the hard open-file limit (%d) leaves no room to lower the soft one", lim.Max)
	}
	// Children of this (Go) process start with the limit set here.
	lowered := syscall.Rlimit{Cur: 777, Max: lim.Max}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
	tiers := []string{"bwrap", "landlock"}
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			if tier == "landlock" {
				requireLandlock(t)
			} else {
				testcap.RequireBwrap(t)
			}
			r := runCordon(t, runOpts{}, "--isolation", tier, "--", "sh", "-c", "ulimit -Sn")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "777\n", r.stdout)
		})
	}
	t.Run("session", func(t *testing.T) {
		d := newDaemonEnv(t)
		d.start()
		work := t.TempDir()
		r := d.cordonOpts(runOpts{dir: work}, "session", "create", "--name", "nofile")
		require.Equal(t, 0, r.code, r.stderr)
		r = d.cordonOpts(runOpts{dir: work}, "exec", "--session", "nofile", "-c", "ulimit -Sn")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "777\n", r.stdout)
	})
}

// TestIsolationCommandStartsWithDefaultSignals: the init ignores the signals
// meant for its command's process group (it is a member), and an ignored
// disposition survives execve: the command must still start with every one
// of them at its default, whatever cordon itself was started with ignored
// (a shell's trap with an empty action, nohup), in every tier and in a
// session.
func TestIsolationCommandStartsWithDefaultSignals(t *testing.T) {
	requireSeccompNotify(t)
	// SIGINT SIGTERM SIGHUP SIGQUIT SIGTSTP SIGTTIN SIGTTOU SIGWINCH SIGUSR1
	// SIGUSR2 SIGPIPE, as /proc/PID/status counts them (bit N-1 for N).
	var survived uint64
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGWINCH, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGPIPE} {
		survived |= 1 << (uint(s) - 1)
	}
	ignored := func(t *testing.T, status string) uint64 {
		t.Helper()
		for _, line := range strings.Split(status, "\n") {
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatalf("no SigIgn line in %q", status)
		return 0
	}
	for _, tier := range []string{"bwrap", "landlock", "none"} {
		for _, how := range []string{"plain", "started with them ignored"} {
			t.Run(tier+"/"+how, func(t *testing.T) {
				if tier == "landlock" {
					requireLandlock(t)
				} else if tier == "bwrap" {
					testcap.RequireBwrap(t)
				}
				argv := []string{cordonBin, "--isolation", tier, "--", "cat", "/proc/self/status"}
				if how != "plain" {
					argv = append([]string{"sh", "-c", `trap '' HUP INT QUIT TERM PIPE USR1 USR2 WINCH TSTP TTIN TTOU; exec "$@"`, "sh"}, argv...)
				}
				r := runCordonVia(t, runOpts{}, argv...)
				require.Equal(t, 0, r.code, r.stderr)
				assert.Zero(t, ignored(t, r.stdout)&survived, "signals the command starts with ignored (SigIgn %x)", ignored(t, r.stdout))
			})
		}
	}
	t.Run("session", func(t *testing.T) {
		d := newDaemonEnv(t)
		d.start()
		work := t.TempDir()
		r := d.cordonOpts(runOpts{dir: work}, "session", "create", "--name", "sigs")
		require.Equal(t, 0, r.code, r.stderr)
		r = d.cordonOpts(runOpts{dir: work}, "exec", "--session", "sigs", "--", "cat", "/proc/self/status")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Zero(t, ignored(t, r.stdout)&survived, "signals the session's command starts with ignored")
	})
}
