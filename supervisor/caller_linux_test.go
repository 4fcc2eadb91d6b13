package supervisor

import (
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
	"golang.org/x/sys/unix"
)

// TestOpenRootProvesTheMount tries to pass a foreign root off as the
// sandbox's. In a mount namespace of its own, a reference process (the
// sandbox's init) keeps the namespace's root; a second process chroots
// into a recursive bind mount of that same root: the same namespace, the
// same device and inode, but another mount, whose paths may lead
// elsewhere. openRoot must accept the first and refuse the second: the
// proof is the root's mount (its unique id), not only its inode. The held
// root handed out must be the reference's, and a closed view must refuse.
func TestOpenRootProvesTheMount(t *testing.T) {
	dir := t.TempDir()
	bound := filepath.Join(dir, "root")
	require.NoError(t, os.Mkdir(bound, 0o755))
	pidFile := filepath.Join(dir, "pid")
	script := `mount --make-rprivate / && mount --rbind / "$1" && { chroot "$1" /bin/sleep 60 & echo $! > "$2"; } && exec /bin/sleep 60`
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", script, "sh", bound, pidFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var chrooted int
	t.Cleanup(func() {
		if chrooted > 0 {
			_ = unix.Kill(chrooted, unix.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for chrooted == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			chrooted, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if chrooted == 0 && (time.Now().After(deadline) || cmd.ProcessState != nil) {
			testcap.SkipOrFail(t, "no mount namespace with a bind-mounted root to test with: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ref := cmd.Process.Pid
	// Wait for both to be the sleeps: before the exec, the reference is
	// still the shell (same root), and the chroot not done yet.
	for _, pid := range []int{ref, chrooted} {
		for {
			exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
			if strings.HasSuffix(exe, "sleep") {
				break
			}
			require.True(t, time.Now().Before(deadline), "pid %d never ran sleep", pid)
			time.Sleep(10 * time.Millisecond)
		}
	}

	v := newSandboxView(ref)
	fd, err := v.openRoot(ref)
	require.NoError(t, err, "the reference's own root")
	var got, want unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &got))
	require.NoError(t, unix.Stat("/proc/"+strconv.Itoa(ref)+"/root", &want))
	assert.Equal(t, [2]uint64{want.Dev, want.Ino}, [2]uint64{got.Dev, got.Ino})
	v.release(fd)
	if v.rootMnt == 0 {
		testcap.SkipOrFail(t, "the kernel reports no unique mount ids (Linux 6.8+): the slow proof is in use")
	}

	var sameInode unix.Stat_t
	require.NoError(t, unix.Stat("/proc/"+strconv.Itoa(chrooted)+"/root", &sameInode))
	require.Equal(t, [2]uint64{want.Dev, want.Ino}, [2]uint64{sameInode.Dev, sameInode.Ino},
		"the bind mount's root is the same directory: only the mount tells them apart")
	_, err = v.openRoot(chrooted)
	assert.ErrorIs(t, err, errForeign, "a root on another mount of the same directory")
	_, err = v.openRoot(os.Getpid())
	assert.ErrorIs(t, err, errForeign, "the host's root")

	v.close()
	_, err = v.openRoot(ref)
	assert.ErrorIs(t, err, errViewClosed, "after close, nothing is handed out")
}

// TestViewClosedBeforeInitHoldsNothing: New reads the sandbox's view on a
// goroutine of its own, which a Close may overtake. A view closed before
// its init finished must not keep the root it then opens (a descriptor
// nobody would close), and refuses like any closed view.
func TestViewClosedBeforeInitHoldsNothing(t *testing.T) {
	v := newSandboxView(0)
	v.close()
	v.init()
	require.NoError(t, v.err)
	assert.Equal(t, -1, v.rootFD, "a closed view holds no root")
	assert.Equal(t, -1, v.heldRoot())
	_, err := v.openRoot(os.Getpid())
	assert.ErrorIs(t, err, errViewClosed)

	open := newSandboxView(0)
	open.init()
	t.Cleanup(open.close)
	assert.GreaterOrEqual(t, open.rootFD, 0, "an open view holds the root (the kernel names its mount)")
}

// TestViewReleasesTheRootAfterTheLastUse: the held root is handed out
// itself, not a duplicate, so a close while a decision still resolves paths
// from it must leave it open (a number closed under a decision could name
// another file by the time the decision uses it) until the last hand-out
// is released, and then close it; nothing is handed out after close.
func TestViewReleasesTheRootAfterTheLastUse(t *testing.T) {
	v := newSandboxView(0)
	v.init()
	require.NoError(t, v.err)
	if v.rootMnt == 0 {
		testcap.SkipOrFail(t, "the kernel reports no unique mount ids (Linux 6.8+): no root is held")
	}
	a := v.heldRoot()
	b, err := v.openRoot(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, a, 0)
	assert.Equal(t, a, b, "the held root itself, both times")
	open := func(fd int) bool {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		return err == nil
	}

	v.close()
	assert.Equal(t, -1, v.heldRoot(), "nothing is handed out after close")
	_, err = v.openRoot(os.Getpid())
	assert.ErrorIs(t, err, errViewClosed)
	assert.True(t, open(a), "closed while two decisions use it")
	v.release(a)
	assert.True(t, open(a), "closed while a decision uses it")
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(b, &st), "the last user resolves from it")
	v.release(b)
	assert.False(t, open(a), "the last release leaves the root open")
	assert.Equal(t, -1, v.rootFD)

	// A descriptor that is not the held root is closed by release.
	other, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	v.release(other)
	assert.False(t, open(other), "release left a slow proof's descriptor open")
}
