package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// multiCallEnv is a working directory whose bin/, first on PATH, holds
// links to a multi-call program, and an empty XDG_CONFIG_HOME.
func multiCallEnv(t *testing.T, target string, links ...string) runOpts {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	for _, l := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(bin, l)))
	}
	return runOpts{dir: dir, env: []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + t.TempDir()}}
}

// TestMultiCallBusybox runs busybox applets under names a denied applet can
// hide behind: the login-shell dash and more wrappers than cordon unwraps.
func TestMultiCallBusybox(t *testing.T) {
	requireSeccompNotify(t)
	bb := requireTool(t, "busybox")
	o := multiCallEnv(t, bb, "echo")
	nest := func(n int) string { return strings.Repeat("busybox ", n) }
	const loader = "/lib64/ld-linux-x86-64.so.2"
	tests := []struct {
		name, cmd string
		denied    string // the denial line's rule; "" when it runs
	}{
		{"applet", "busybox echo ran", `(rule: deny "echo")`},
		{"login dash", "(exec -a -echo busybox ran)", `(rule: deny "echo")`},
		{"login dash through a symlink", "(exec -a -echo bin/echo ran)", `(rule: deny "echo")`},
		{"other applet", "busybox true && echo ran", ""},
		{"nested below the limit", nest(3) + "true && echo ran", ""},
		{"nested past the limit", nest(12) + "true && echo ran", `(rule: deny "too many wrapper levels"`},
		{"loaders past the limit", strings.Repeat(loader+" ", 12) + "/bin/true && echo ran", `(rule: deny "too many wrapper levels"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCordon(t, o, "--deny", "echo", "--", "bash", "-c", tc.cmd+"; echo rc=$?")
			if tc.denied == "" {
				assert.Contains(t, r.stdout, "ran\nrc=0\n", "stderr: %s", r.stderr)
				assert.NotContains(t, r.stderr, "cordon: denied:")
				return
			}
			assert.NotContains(t, r.stdout, "ran", "the denied applet must not run")
			assert.Contains(t, r.stdout, "rc=126\n", "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, "cordon: denied:")
			assert.Contains(t, r.stderr, tc.denied)
		})
	}
}

// TestMultiCallSystemctl checks the built-in reboot rule on a systemd host,
// where reboot is a symlink to systemctl: systemctl itself still runs, and
// reboot does not, however it is started. Every command carries --help, so
// a wrong allow prints help instead of rebooting.
func TestMultiCallSystemctl(t *testing.T) {
	requireSeccompNotify(t)
	sc, err := filepath.EvalSymlinks(requireTool(t, "systemctl"))
	require.NoError(t, err)
	o := multiCallEnv(t, sc, "reboot", "poweroff")
	copyFile(t, sc, filepath.Join(o.dir, "renamed"), 0o755)
	tests := []struct {
		name, cmd string
		denied    bool
	}{
		{"systemctl --version", "systemctl --version", false},
		{"systemctl by path", sc + " --version", false},
		{"reboot symlink", "reboot --help", true},
		{"poweroff symlink", "poweroff --help", true},
		{"systemctl reboot", "systemctl reboot --help", true},
		{"argv0 reboot", "(exec -a reboot systemctl --help)", true},
		{"argv0 -reboot", "(exec -a -reboot systemctl --help)", true},
		{"argv0 spoofed on the symlink", "(exec -a systemctl bin/reboot --help)", true},
		{"renamed copy started as reboot", "(exec -a reboot ./renamed --help)", true},
		{"renamed copy started as itself", "./renamed --version", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCordon(t, o, "--", "bash", "-c", tc.cmd+" >/dev/null; echo rc=$?")
			if !tc.denied {
				assert.Contains(t, r.stdout, "rc=0\n", "stderr: %s", r.stderr)
				assert.NotContains(t, r.stderr, "cordon: denied:")
				return
			}
			assert.Contains(t, r.stdout, "rc=126\n", "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, "cordon: denied:")
			assert.Contains(t, r.stderr, `(rule: deny "`)
		})
	}
}
