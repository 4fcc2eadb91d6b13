package bwrap

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runSandbox runs spec with bwrap and returns the command's stdout; it
// fails the test if the command fails or takes over 20s.
func runSandbox(t *testing.T, spec Spec) string {
	t.Helper()
	out, err := trySandbox(t, spec)
	require.NoError(t, err, "sandboxed %q", spec.Command)
	return out
}

func trySandbox(t *testing.T, spec Spec) (string, error) {
	t.Helper()
	bw := testcap.RequireBwrap(t)
	args, err := spec.Args()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bw, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil && stderr.Len() > 0 {
		t.Logf("bwrap %s\nstderr: %s", Describe(args), stderr.String())
	}
	return strings.TrimSpace(stdout.String()), err
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestSandboxSmoke(t *testing.T) {
	spec := Spec{Dir: t.TempDir(), Command: sh(`test -w "$PWD" && ! test -w /usr && echo ok`)}
	assert.Equal(t, "ok", runSandbox(t, spec))
}

func TestSandboxWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	out := runSandbox(t, Spec{Dir: dir, Command: sh(`pwd; echo made > file`)})
	assert.Equal(t, dir, out, "the command starts in Dir")
	b, err := os.ReadFile(filepath.Join(dir, "file"))
	require.NoError(t, err, "a write in the working directory reaches the host")
	assert.Equal(t, "made\n", string(b))
}

func TestSandboxPrivateTmp(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir() // also under the host's /tmp, but not bound
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret"), []byte("x"), 0o600))
	marker := "cordon-private-tmp-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", marker)) })
	out := runSandbox(t, Spec{Dir: dir, Command: []string{"/bin/sh", "-c",
		`test -e "$0/secret" && echo visible; touch "/tmp/$1" && echo writable`, other, marker}})
	assert.Equal(t, "writable", out, "/tmp is private and writable; other host /tmp content is not visible")
	_, err := os.Stat(filepath.Join("/tmp", marker))
	assert.True(t, os.IsNotExist(err), "the sandbox's /tmp must not be the host's")
}

func TestSandboxBinds(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"w/ro", "rw", "ro"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	spec := Spec{
		Dir: filepath.Join(base, "w"),
		RW:  []string{filepath.Join(base, "rw")},
		RO:  []string{filepath.Join(base, "w/ro"), filepath.Join(base, "ro")},
		Command: []string{"/bin/sh", "-c", `
			for d in "$@"; do if test -w "$d"; then echo "$d rw"; else echo "$d ro"; fi; done`,
			"sh", filepath.Join(base, "w"), filepath.Join(base, "rw"), filepath.Join(base, "w/ro"), filepath.Join(base, "ro")},
	}
	want := strings.Join([]string{
		filepath.Join(base, "w") + " rw",
		filepath.Join(base, "rw") + " rw",
		filepath.Join(base, "w/ro") + " ro",
		filepath.Join(base, "ro") + " ro",
	}, "\n")
	assert.Equal(t, want, runSandbox(t, spec))
}

// TestSandboxNestedBinds: a bind must not hide one nested inside it, so
// that what the user asked for is what the command gets regardless of the
// order of --rw and --ro: the working directory stays writable under a
// read-only parent, and a read-write cache stays writable inside a
// read-only home.
func TestSandboxNestedBinds(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	proj := filepath.Join(home, "proj")
	cache := filepath.Join(home, ".cache")
	for _, d := range []string{proj, cache} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	probe := `for d in "$@"; do if test -w "$d"; then echo "$d rw"; else echo "$d ro"; fi; done`
	tests := []struct {
		name string
		spec Spec
		want map[string]string
	}{
		{
			name: "working directory under a read-only parent",
			spec: Spec{Dir: proj, RO: []string{home}},
			want: map[string]string{proj: "rw", home: "ro"},
		},
		{
			name: "read-write path inside a read-only one",
			spec: Spec{Dir: base, RW: []string{cache}, RO: []string{home}},
			want: map[string]string{cache: "rw", home: "ro"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Command = []string{"/bin/sh", "-c", probe, "sh"}
			for p := range tc.want {
				spec.Command = append(spec.Command, p)
			}
			got := map[string]string{}
			for _, l := range strings.Split(runSandbox(t, spec), "\n") {
				if p, mode, ok := strings.Cut(l, " "); ok {
					got[p] = mode
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSandboxExeThroughPrivateTmp(t *testing.T) {
	// Test binaries, and cordon when run from a build directory, live
	// under /tmp, which the sandbox replaces: Exe must show through.
	dir := t.TempDir()
	exe := filepath.Join(dir, "true-copy")
	b, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, b, 0o755))
	_, err = trySandbox(t, Spec{Dir: "/", Exe: exe, Command: []string{exe}})
	assert.NoError(t, err, "Exe under /tmp must be runnable in the sandbox")
	_, err = trySandbox(t, Spec{Dir: "/", Command: []string{exe}})
	assert.Error(t, err, "without Exe the private /tmp hides it (else the case above proves nothing)")
}

func TestSandboxNetNone(t *testing.T) {
	ifaces := func(net Net) []string {
		out := runSandbox(t, Spec{Dir: "/", Net: net, Command: []string{"/bin/cat", "/proc/net/dev"}})
		var names []string
		for _, l := range strings.Split(out, "\n") {
			if name, _, ok := strings.Cut(l, ":"); ok {
				names = append(names, strings.TrimSpace(name))
			}
		}
		return names
	}
	assert.Equal(t, []string{"lo"}, ifaces(NetNone), "--net none leaves loopback only")
}

func TestSandboxPidNamespace(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	out := runSandbox(t, Spec{Dir: "/", Command: []string{"/bin/sh", "-c", `test -e /proc/"$0" && echo host-visible; echo $$`, self}})
	lines := strings.Split(out, "\n")
	assert.NotContains(t, lines, "host-visible", "the host's processes must not be visible")
	require.NotEmpty(t, lines)
	pid, err := strconv.Atoi(lines[len(lines)-1])
	require.NoError(t, err)
	assert.Less(t, pid, 10, "the command runs in a fresh pid namespace")
}

// A Unix socket on a read-only mount is still connectable: hiding is what
// keeps a sandbox away from the cordon daemon's socket and token.
func TestHiddenSocketIsUnreachable(t *testing.T) {
	testcap.RequireBwrap(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		testcap.SkipOrFail(t, "python3 not installed")
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(run, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(run, "daemon.json"), []byte(`{"token":"secret"}`), 0o600))
	other := filepath.Join(dir, "other.sock")
	for _, p := range []string{filepath.Join(run, "daemon.sock"), other} {
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
	}
	probe := `import socket,sys,os
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); print("connected", p)
    except OSError as e:
        print("refused", p, e.errno)
print("listing", sorted(os.listdir(os.path.dirname(sys.argv[1]))))`
	args := []string{py, "-c", probe, filepath.Join(run, "daemon.sock"), other}

	out := runSandbox(t, Spec{Dir: dir, Command: args})
	assert.Contains(t, out, "connected "+filepath.Join(run, "daemon.sock"), "without hiding, a read-only socket is reachable (this is why Hide exists)")

	out = runSandbox(t, Spec{Dir: dir, Hide: []string{run}, HideFiles: []string{other}, Command: args})
	assert.Contains(t, out, "refused "+filepath.Join(run, "daemon.sock"))
	assert.Contains(t, out, "refused "+other)
	assert.Contains(t, out, "listing []", "the hidden directory is empty: no socket, no token")
}
