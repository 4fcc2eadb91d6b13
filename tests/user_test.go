package tests

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunsAsUnprivilegedUser runs cordon as nobody: bubblewrap then uses a
// user namespace, and the supervisor reads the memory of processes in it.
func TestRunsAsUnprivilegedUser(t *testing.T) {
	requireSeccompNotify(t)
	if os.Getuid() != 0 {
		// Already unprivileged: every other test covers this case.
		r := cordon(t, "--", "true")
		require.Equal(t, 0, r.code, r.stderr)
		return
	}
	setpriv, _, bin, work := unprivilegedWorkspace(t)

	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"--deny", "ls", "--", "sh", "-c", `id -u; grep CapEff /proc/self/status; echo hi > f && cat f; ls; echo rc=$?`)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), raceEnv, "HOME="+work)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	stderr := errBuf.String()
	require.NoError(t, err, "stderr: %s", stderr)
	assert.Equal(t, "65534\nCapEff:\t0000000000000000\nhi\nrc=126\n", string(out), "stderr: %s", stderr)
	b, err := os.ReadFile(filepath.Join(work, "f"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))
	assert.False(t, strings.Contains(stderr, "panic"))
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

// unprivilegedWorkspace prepares a run of cordon as nobody (with setpriv):
// a world-readable temporary directory dir holding a copy of the binary
// (bin) and a world-writable working directory (work).
func unprivilegedWorkspace(t *testing.T) (setpriv, dir, bin, work string) {
	t.Helper()
	setpriv = requireTool(t, "setpriv")
	dir = t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755)) // t.TempDir's parent is 0700
	require.NoError(t, os.Chmod(dir, 0o777))
	bin = filepath.Join(dir, "cordon")
	copyFile(t, cordonBin, bin, 0o755)
	work = filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o777))
	require.NoError(t, os.Chmod(work, 0o777)) // Mkdir applied the umask
	return setpriv, dir, bin, work
}
