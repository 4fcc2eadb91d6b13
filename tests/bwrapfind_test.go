package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecurityPlantedBwrapNeverRuns: cordon runs bubblewrap on the host,
// outside any sandbox. A workload that writes a bwrap into a PATH
// directory of its writable tree (an activated virtualenv's bin) must not
// get it run by the next cordon whose PATH has that directory first: the
// red team's planted wrapper dropped the next sandbox's protections, or ran
// anything as the user. Only a bwrap nobody but root can replace is run,
// and run by root only one under the system's directories.
func TestSecurityPlantedBwrapNeverRuns(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	venv := filepath.Join(dir, ".venv", "bin")
	marker := filepath.Join(dir, "PLANTED-RAN")
	r := runCordon(t, runOpts{dir: dir}, "--isolation", "bwrap", "--", "sh", "-c",
		`mkdir -p .venv/bin && printf '#!/bin/sh\ntouch `+marker+`\nexec /usr/bin/bwrap "$@"\n' > .venv/bin/bwrap && chmod 755 .venv/bin/bwrap`)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(venv, "bwrap"))

	path := "PATH=" + venv + ":" + os.Getenv("PATH")
	for _, iso := range []string{"bwrap", "auto"} {
		r = runCordon(t, runOpts{dir: dir, env: []string{path}}, "--isolation", iso, "--", "true")
		assert.Equal(t, 0, r.code, "%s: %s", iso, r.stderr)
		assert.NoFileExists(t, marker, "%s: the planted bwrap ran", iso)
	}
	// A link named bwrap to a root-owned program that is not bubblewrap
	// (the red team's led to mvn, which loaded a Java agent from the
	// working directory; /bin/false made auto step down to landlock): never
	// run, never probed.
	require.NoError(t, os.Remove(filepath.Join(venv, "bwrap")))
	require.NoError(t, os.Symlink("/bin/false", filepath.Join(venv, "bwrap")))
	for _, iso := range []string{"bwrap", "auto"} {
		r = runCordon(t, runOpts{dir: dir, env: []string{path, "XDG_CACHE_HOME=" + t.TempDir()}}, "--isolation", iso, "--", "true")
		assert.Equal(t, 0, r.code, "%s: %s", iso, r.stderr)
		assert.NotContains(t, r.stderr, "landlock", "%s: stepped down", iso)
	}
	// A copy of bubblewrap itself (an ELF file named bwrap), which the
	// workload could have changed: its user owns it, or run by root it is
	// outside the system's directories (the red team's root workload under
	// a working directory in /usr): the system's runs.
	sys, err := filepath.EvalSymlinks(requireTool(t, "bwrap"))
	require.NoError(t, err)
	b, err := os.ReadFile(sys)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(venv, "bwrap")))
	require.NoError(t, os.WriteFile(filepath.Join(venv, "bwrap"), b, 0o755))
	r = runCordon(t, runOpts{dir: dir, env: []string{path}}, "--isolation", "bwrap", "--debug", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, `argv="`+sys+" ", "the system's bubblewrap runs")
	assert.NotContains(t, r.stderr, `argv="`+filepath.Join(venv, "bwrap"), "the copy ran")

	require.NoError(t, os.Remove(filepath.Join(venv, "bwrap")))
	require.NoError(t, os.WriteFile(filepath.Join(venv, "bwrap"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))

	// Nothing but the planted one on PATH: a refusal that says why.
	r = runCordon(t, runOpts{dir: dir, env: []string{"PATH=" + venv}}, "--isolation", "bwrap", "--", "/bin/true")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no trusted bubblewrap on PATH: "+filepath.Join(venv, "bwrap"))
	assert.NoFileExists(t, marker)
}

// TestTooManyHiddenFilesIsSaidNotForgotten: a workload can leave thousands
// of files a deny_read glob matches (--deny-read '.env*') in its working
// directory; each is hidden by a bind of its own, more than bubblewrap
// takes. The next run fails saying so (exit 125), and the remembered
// bubblewrap probe stays: bubblewrap works, the layout was too big.
func TestTooManyHiddenFilesIsSaidNotForgotten(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	cache := "XDG_CACHE_HOME=" + t.TempDir()
	r := runCordon(t, runOpts{dir: dir, env: []string{cache}}, "--isolation", "auto", "--deny-read", ".env*", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	entry := filepath.Join(strings.TrimPrefix(cache, "XDG_CACHE_HOME="), "cordon", "bwrap-probe")
	require.FileExists(t, entry)
	for i := range 3100 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".env"+strconv.Itoa(i)), nil, 0o600))
	}
	r = runCordon(t, runOpts{dir: dir, env: []string{cache}, timeout: startBound}, "--isolation", "auto", "--deny-read", ".env*", "--", "echo", "RAN")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "RAN")
	assert.Contains(t, r.stderr, "more than the 9000 bubblewrap takes: deny_read rules match ")
	assert.Contains(t, r.stderr, "(3100 of them in "+dir+")")
	assert.Contains(t, r.stderr, "remove the files those rules match, or narrow the rules")
	assert.FileExists(t, entry, "the remembered probe stays")
}

// TestHostBwrapGetsNoEnvironment: the isolation probe and cordon doctor run
// bubblewrap on the host. With the user's environment and working
// directory, a library a workload left in the project was loaded into it
// (the red team's through an empty LD_LIBRARY_PATH entry, which means the
// working directory; here LD_PRELOAD names it relatively): they now run it
// with no environment, from /.
func TestHostBwrapGetsNoEnvironment(t *testing.T) {
	requireSeccompNotify(t)
	cc := requireTool(t, "cc")
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "LOADED-INTO-BWRAP")
	src := filepath.Join(dir, "evil.c")
	require.NoError(t, os.WriteFile(src, []byte(`#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
	char exe[256] = {0};
	if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0 && strstr(exe, "bwrap")) {
		FILE *f = fopen("`+marker+`", "a");
		if (f) { fputs(exe, f); fputs("\n", f); fclose(f); }
	}
}
`), 0o644))
	out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "evil.so"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)

	env := []string{"LD_PRELOAD=./evil.so", "XDG_CACHE_HOME=" + t.TempDir()}
	r := runCordon(t, runOpts{dir: dir, env: env}, "--isolation", "auto", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	_ = runCordon(t, runOpts{dir: dir, env: env}, "doctor")
	b, _ := os.ReadFile(marker)
	assert.Empty(t, string(b), "a library from the working directory was loaded into the host's bubblewrap")
}

// TestDoctorRunsTheSystemsTrue: cordon doctor's smoke run starts a program
// in a bare bubblewrap sandbox on the host (no supervisor, nothing
// hidden). It took the first true on PATH: a planted .venv/bin/true read
// the user's keys (red team 4). It runs the system's true now.
func TestDoctorRunsTheSystemsTrue(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	venv := filepath.Join(dir, ".venv", "bin")
	require.NoError(t, os.MkdirAll(venv, 0o755))
	marker := filepath.Join(t.TempDir(), "PLANTED-TRUE-RAN")
	require.NoError(t, os.WriteFile(filepath.Join(venv, "true"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	r := runCordon(t, runOpts{dir: dir, env: []string{"PATH=" + venv + ":" + os.Getenv("PATH")}}, "doctor")
	assert.Contains(t, r.stdout+r.stderr, "ran true in a sandbox")
	assert.NoFileExists(t, marker, "doctor ran the planted true")
}

// TestSecurityRootSandboxCannotWriteWhereBwrapIsFound: run by root, cordon
// takes bubblewrap from the system's directories (/usr/bin, /usr/sbin, /bin,
// /sbin, the nix and guix stores), where a root sandbox's files look like
// the system's. A red team gave one run --rw /usr/sbin, copied its own
// program there as bwrap, and the next cordon started it outside any
// sandbox (/usr/sbin comes before /usr/bin on root's PATH). A writable
// tree that is, holds or lies inside such a directory (a store), or is the
// bwrap in one, is refused before anything runs. The probe here writes a
// marker of another name, so the host's bubblewrap is never at stake.
func TestSecurityRootSandboxCannotWriteWhereBwrapIsFound(t *testing.T) {
	requireSeccompNotify(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "needs root: only a root sandbox's files are root's")
	}
	for _, c := range []struct {
		name string
		dir  string
		args []string
		mark string
	}{
		{"--rw /usr/sbin", "", []string{"--rw", "/usr/sbin"}, "/usr/sbin"},
		{"--rw /sbin (a link on merged /usr)", "", []string{"--rw", "/sbin"}, "/sbin"},
		{"--rw /usr", "", []string{"--rw", "/usr"}, "/usr/bin"},
		{"working directory /usr/bin", "/usr/bin", nil, "/usr/bin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(c.mark, "cordon-test-planted")
			t.Cleanup(func() { _ = os.Remove(marker) })
			r := runCordon(t, runOpts{dir: c.dir}, append(c.args, "--", "sh", "-c", "touch "+marker+" && echo PLANTED")...)
			assert.NoFileExists(t, marker)
			assert.Equal(t, 125, r.code, "%s\n%s", r.stdout, r.stderr)
			assert.NotContains(t, r.stdout, "PLANTED")
			assert.Contains(t, r.stderr, "where cordon run by root takes bubblewrap from")
		})
	}
	// Not a system directory: bound as asked.
	r := runCordon(t, runOpts{}, "--rw", "/usr/local", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
}

// TestSecurityRootWrittenBwrapNotTakenByOthers: files a root sandbox
// writes are root's, wherever it may write; a red team's root run left its
// own ELF as bwrap in a directory on another user's PATH (/opt/x/bin,
// /usr/local/bin: a root run from /usr/local), and that user's next cordon
// started it outside any sandbox, since it was root's and writable by no
// one else. Every user's cordon takes bubblewrap from the system's
// directories only, which a root run cannot write (the test above).
func TestSecurityRootWrittenBwrapNotTakenByOthers(t *testing.T) {
	requireSeccompNotify(t)
	if os.Geteuid() != 0 {
		testcap.SkipOrFail(t, "needs root, to plant a root-owned bwrap and run cordon as another user")
	}
	setpriv := requireTool(t, "setpriv")
	base, err := os.MkdirTemp("", "cordon-plant-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	plant, work := filepath.Join(base, "bin"), filepath.Join(base, "work")
	require.NoError(t, os.Mkdir(plant, 0o755))
	require.NoError(t, os.Mkdir(work, 0o777))
	// A root-owned ELF that is not bubblewrap: started as one, it makes no
	// sandbox, and the run fails.
	elf, err := os.ReadFile("/usr/bin/true")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(plant, "bwrap"), elf, 0o755))
	bin := filepath.Join(base, "cordon")
	b, err := os.ReadFile(cordonBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))

	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "--debug", "--", "true")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + plant + ":/usr/bin:/bin", "HOME=" + work, "GORACE=atexit_sleep_ms=0"}
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), filepath.Join(plant, "bwrap")+" --", "the planted bwrap was started")
	sys, err := filepath.EvalSymlinks("/usr/bin/bwrap")
	require.NoError(t, err)
	assert.Contains(t, string(out), `argv="`+sys+` --`, "the system's bubblewrap is the one started")
}
