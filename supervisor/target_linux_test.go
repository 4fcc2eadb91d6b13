package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// checkTarget is openTarget's errno, with the fd released.
func checkTarget(pid int, path string) syscall.Errno {
	t, errno := openTarget(pid, path)
	if t.fd >= 0 {
		unix.Close(t.fd)
	}
	return errno
}

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	ownerOnly := filepath.Join(dir, "owner-only")
	require.NoError(t, os.WriteFile(ownerOnly, []byte("#!/bin/sh\n"), 0o700))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("data"), 0o644))
	require.NoError(t, os.Symlink(exe, filepath.Join(dir, "link-to-exe")))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "subdir"), 0o755))

	self := os.Getpid()
	tests := []struct {
		name string
		pid  int
		path string
		want syscall.Errno
	}{
		{name: "executable file", pid: self, path: exe, want: 0},
		{name: "system binary", pid: self, path: "/bin/sh", want: 0},
		{name: "executable for its owner only", pid: self, path: ownerOnly, want: 0},
		{name: "symlink to an executable", pid: self, path: filepath.Join(dir, "link-to-exe"), want: 0},
		{name: "missing file", pid: self, path: filepath.Join(dir, "missing"), want: unix.ENOENT},
		{name: "under a missing directory", pid: self, path: filepath.Join(dir, "nodir", "exe"), want: unix.ENOENT},
		{name: "dangling symlink", pid: self, path: filepath.Join(dir, "dangling"), want: unix.ENOENT},
		{name: "directory", pid: self, path: filepath.Join(dir, "subdir"), want: unix.EACCES},
		{name: "non-executable regular file", pid: self, path: plain, want: unix.EACCES},
		{name: "device", pid: self, path: "/dev/null", want: unix.EACCES},
		{name: "regular file used as a directory", pid: self, path: filepath.Join(plain, "x"), want: unix.ENOTDIR},
		{name: "symlink loop", pid: self, path: filepath.Join(dir, "loop"), want: unix.ELOOP},
		{name: "relative path cannot be told", pid: self, path: "bin/tool", want: 0},
		{name: "empty path cannot be told", pid: self, path: "", want: 0},
		{name: "unknown pid cannot be told", pid: 1 << 30, path: filepath.Join(dir, "missing"), want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, checkTarget(tc.pid, tc.path), "checkTarget(%d, %q)", tc.pid, tc.path)
		})
	}
}

// TestCheckTargetMatchesExecve: for the cases above that the kernel
// decides, checkTarget must agree with what execve itself says, since a
// shell relies on that errno to go on searching PATH.
func TestCheckTargetMatchesExecve(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("data"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "subdir"), 0o755))
	for _, p := range []string{
		filepath.Join(dir, "missing"),
		filepath.Join(dir, "nodir", "x"),
		filepath.Join(dir, "subdir"),
		plain,
		filepath.Join(plain, "x"),
		"/dev/null",
	} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, err := syscall.ForkExec(p, []string{p}, &syscall.ProcAttr{})
			var errno syscall.Errno
			require.ErrorAs(t, err, &errno, "execve of %s should fail", p)
			assert.Equal(t, errno, checkTarget(os.Getpid(), p), "checkTarget(%q) disagrees with execve", p)
		})
	}
}

// TestCheckTargetInCallersRoot: the lookup happens in the caller's root, so
// an absolute symlink means what it means to the caller. The test process
// plays the caller, with / as its root: a link to /bin/sh is fine.
func TestCheckTargetInCallersRoot(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "sh")
	require.NoError(t, os.Symlink("/bin/sh", link))
	assert.Equal(t, syscall.Errno(0), checkTarget(os.Getpid(), link))
}

func TestResolve(t *testing.T) {
	self := os.Getpid()
	cwd, err := os.Getwd()
	require.NoError(t, err)
	dir := t.TempDir()
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer d.Close()
	f, err := os.Open("/bin/sh")
	require.NoError(t, err)
	defer f.Close()
	fileTarget, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	require.NoError(t, err)

	tests := []struct {
		name  string
		dirfd int32
		path  string
		flags uint64
		want  string
	}{
		{name: "absolute", dirfd: unix.AT_FDCWD, path: "/usr/bin/../bin/git", want: "/usr/bin/git"},
		{name: "relative to cwd", dirfd: unix.AT_FDCWD, path: "./tool", want: filepath.Join(cwd, "tool")},
		{name: "relative to dirfd", dirfd: int32(d.Fd()), path: "sub/tool", want: filepath.Join(dir, "sub/tool")},
		{name: "absolute ignores dirfd", dirfd: int32(d.Fd()), path: "/bin/true", want: "/bin/true"},
		{name: "AT_EMPTY_PATH runs the fd itself", dirfd: int32(f.Fd()), path: "", flags: unix.AT_EMPTY_PATH, want: fileTarget},
		{name: "closed dirfd cannot be resolved", dirfd: 1 << 20, path: "tool", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resolve(self, tc.dirfd, tc.path, tc.flags))
		})
	}
}
