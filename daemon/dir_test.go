package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testEnv is a location environment rooted in a temporary directory.
func testEnv(t *testing.T, vars map[string]string) (env, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "run", "user"), 0o755))
	return env{
		getenv:  func(k string) string { return vars[k] },
		uid:     os.Geteuid(),
		home:    func() (string, error) { return home, nil },
		runUser: filepath.Join(root, "run", "user"),
	}, root
}

func mkdir(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(path, 0o700))
	require.NoError(t, os.Chmod(path, mode))
	return path
}

// Edge 31: XDG_RUNTIME_DIR unset, with the wrong mode or owner, or a
// symlink: a verified fallback.
func TestLocateFallbacks(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string) map[string]string
		want    string // relative to root
		skipped string
	}{
		{
			name: "XDG_RUNTIME_DIR 0700 and ours",
			setup: func(t *testing.T, root string) map[string]string {
				return map[string]string{"XDG_RUNTIME_DIR": mkdir(t, filepath.Join(root, "xdg"), 0o700)}
			},
			want: "xdg/cordon",
		},
		{
			name: "XDG_RUNTIME_DIR unset: /run/user/UID",
			setup: func(t *testing.T, root string) map[string]string {
				mkdir(t, filepath.Join(root, "run", "user", uidString()), 0o700)
				return nil
			},
			want: "run/user/" + uidString() + "/cordon",
		},
		{
			name:  "nothing: home",
			setup: func(t *testing.T, root string) map[string]string { return nil },
			want:  "home/.cache/cordon/run",
		},
		{
			name: "XDG_RUNTIME_DIR with mode 0755",
			setup: func(t *testing.T, root string) map[string]string {
				return map[string]string{"XDG_RUNTIME_DIR": mkdir(t, filepath.Join(root, "xdg"), 0o755)}
			},
			want:    "home/.cache/cordon/run",
			skipped: "has mode 0755, want 0700",
		},
		{
			name: "XDG_RUNTIME_DIR owned by someone else",
			setup: func(t *testing.T, root string) map[string]string {
				x := mkdir(t, filepath.Join(root, "xdg"), 0o700)
				if os.Geteuid() != 0 {
					testcap.SkipOrFail(t, "needs root to give a directory away")
				}
				require.NoError(t, os.Chown(x, 4242, 4242))
				return map[string]string{"XDG_RUNTIME_DIR": x}
			},
			want:    "home/.cache/cordon/run",
			skipped: "owned by uid 4242",
		},
		{
			name: "XDG_RUNTIME_DIR a symlink to a good directory",
			setup: func(t *testing.T, root string) map[string]string {
				real := mkdir(t, filepath.Join(root, "real"), 0o700)
				require.NoError(t, os.Symlink(real, filepath.Join(root, "xdg")))
				return map[string]string{"XDG_RUNTIME_DIR": filepath.Join(root, "xdg")}
			},
			want:    "home/.cache/cordon/run",
			skipped: "is a symlink",
		},
		{
			name: "XDG_RUNTIME_DIR relative",
			setup: func(t *testing.T, root string) map[string]string {
				return map[string]string{"XDG_RUNTIME_DIR": "run/me"}
			},
			want:    "home/.cache/cordon/run",
			skipped: "not absolute",
		},
		{
			name: "cordon inside XDG_RUNTIME_DIR is a symlink planted there",
			setup: func(t *testing.T, root string) map[string]string {
				x := mkdir(t, filepath.Join(root, "xdg"), 0o700)
				elsewhere := mkdir(t, filepath.Join(root, "elsewhere"), 0o700)
				require.NoError(t, os.Symlink(elsewhere, filepath.Join(x, "cordon")))
				return map[string]string{"XDG_RUNTIME_DIR": x}
			},
			want:    "home/.cache/cordon/run",
			skipped: "cordon is a symlink",
		},
		{
			name: "our cordon directory with a loose mode is tightened",
			setup: func(t *testing.T, root string) map[string]string {
				x := mkdir(t, filepath.Join(root, "xdg"), 0o700)
				mkdir(t, filepath.Join(x, "cordon"), 0o755)
				return map[string]string{"XDG_RUNTIME_DIR": x}
			},
			want: "xdg/cordon",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, root := testEnv(t, nil)
			vars := tc.setup(t, root)
			e.getenv = func(k string) string { return vars[k] }
			p, err := e.locate()
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(root, tc.want), p.Dir)
			fi, err := os.Lstat(p.Dir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the directory is 0700")
			if tc.skipped != "" {
				assert.Contains(t, strings.Join(p.Skipped, "; "), tc.skipped)
			}
		})
	}
}

// Edge 30: the location does not depend on TMPDIR.
func TestLocateIgnoresTMPDIR(t *testing.T) {
	e, root := testEnv(t, nil)
	xdg := mkdir(t, filepath.Join(root, "xdg"), 0o700)
	var dirs []string
	for _, tmp := range []string{"/tmp", filepath.Join(root, "other-tmp"), ""} {
		vars := map[string]string{"XDG_RUNTIME_DIR": xdg, "TMPDIR": tmp}
		e.getenv = func(k string) string { return vars[k] }
		p, err := e.locate()
		require.NoError(t, err)
		dirs = append(dirs, p.Dir)
	}
	assert.Equal(t, []string{dirs[0], dirs[0], dirs[0]}, dirs)
	assert.False(t, strings.HasPrefix(dirs[0], os.TempDir()+"/cordon"), "never under TMPDIR")
}

func TestLocateNothingUsable(t *testing.T) {
	e, _ := testEnv(t, nil)
	e.home = func() (string, error) { return "", errors.New("no home directory for uid 1") }
	_, err := e.locate()
	assert.ErrorIs(t, err, ErrNoDir)
	assert.Contains(t, err.Error(), "no home directory")
}

func TestSocketFits(t *testing.T) {
	assert.True(t, SocketFits("/run/user/1000/cordon/daemon.sock"))
	assert.True(t, SocketFits("/"+strings.Repeat("a", 106)))
	assert.False(t, SocketFits("/"+strings.Repeat("a", 107)), "108 bytes leave no room for the NUL")
}

func TestHidePaths(t *testing.T) {
	e, root := testEnv(t, nil)
	xdg := mkdir(t, filepath.Join(root, "xdg"), 0o700)
	vars := map[string]string{"XDG_RUNTIME_DIR": xdg}
	e.getenv = func(k string) string { return vars[k] }
	require.NoDirExists(t, filepath.Join(xdg, "cordon"))
	dirs, files := e.hidePaths()
	// Created before any daemon runs, so that one started later is
	// hidden from a sandbox started now.
	assert.Equal(t, []string{filepath.Join(xdg, "cordon")}, dirs)
	assert.Empty(t, files)
	require.NoError(t, e.verify(dirs[0], 0o700))
	p, err := e.locate()
	require.NoError(t, err)
	assert.Equal(t, p.Dir, dirs[0])
}

func uidString() string { return strconv.Itoa(os.Geteuid()) }
