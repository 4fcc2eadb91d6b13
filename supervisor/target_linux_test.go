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

// checkTarget is what decide answers for path before the policy is asked
// (absPath, then openTarget), with the fd released.
func checkTarget(pid int, path string) syscall.Errno {
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return unix.ESRCH
	}
	defer unix.Close(root)
	abs, errno := absPath(pid, root, unix.AT_FDCWD, path)
	if errno != 0 {
		return errno
	}
	t, errno := openTarget(pid, root, abs, nil)
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

	wd, err := os.Getwd()
	require.NoError(t, err)
	exeHere := filepath.Join(wd, "exe-here")
	require.NoError(t, os.WriteFile(exeHere, []byte("#!/bin/sh\n"), 0o755))
	t.Cleanup(func() { os.Remove(exeHere) })
	sh, err := os.Open("/bin/sh")
	require.NoError(t, err)
	defer sh.Close()

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
		{name: "relative path from the working directory", pid: self, path: "bin/tool", want: unix.ENOENT},
		{name: "relative path that exists", pid: self, path: "../" + filepath.Base(wd) + "/" + filepath.Base(exeHere), want: 0},
		{name: "empty path", pid: self, path: "", want: unix.ENOENT},
		{name: "unknown pid", pid: 1 << 30, path: filepath.Join(dir, "missing"), want: unix.ESRCH},
		{name: "own executable through /proc/self/exe", pid: self, path: "/proc/self/exe", want: 0},
		{name: "own descriptor through /proc/self/fd", pid: self, path: "/proc/self/fd/" + strconv.Itoa(int(sh.Fd())), want: 0},
		{name: "after a magic link nothing is followed", pid: self, path: "/proc/self/cwd/" + filepath.Base(exeHere), want: unix.ELOOP},
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

func TestAbsPath(t *testing.T) {
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
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(root)

	tests := []struct {
		name  string
		dirfd int32
		path  string
		want  string
		errno syscall.Errno
	}{
		// Never cleaned: "bin/.." is not "" when bin is a symlink.
		{name: "absolute, as written", dirfd: unix.AT_FDCWD, path: "/usr/bin/../bin/git", want: "/usr/bin/../bin/git"},
		{name: "relative to cwd", dirfd: unix.AT_FDCWD, path: "./tool", want: cwd + "/./tool"},
		{name: "relative to dirfd", dirfd: int32(d.Fd()), path: "sub/tool", want: dir + "/sub/tool"},
		{name: "absolute ignores dirfd", dirfd: int32(d.Fd()), path: "/bin/true", want: "/bin/true"},
		{name: "closed dirfd", dirfd: 1 << 20, path: "tool", errno: unix.EBADF},
		{name: "dirfd that is not a directory", dirfd: int32(f.Fd()), path: "tool", errno: unix.ENOTDIR},
		{name: "empty path", dirfd: unix.AT_FDCWD, path: "", errno: unix.ENOENT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errno := absPath(self, root, tc.dirfd, tc.path)
			assert.Equal(t, tc.errno, errno)
			assert.Equal(t, tc.want, got)
		})
	}
}
