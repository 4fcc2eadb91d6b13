package supervisor

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkTarget answers what the kernel would say about running resolved in
// pid's view of the file system before the policy is asked: ENOENT when it
// does not exist, EACCES when it is not a regular file with an execute bit.
// Shells probe every PATH entry with execve; those probes must fail the
// normal way, with no denial printed. It returns 0 when the file exists and
// looks executable, or when it cannot tell (the policy then decides).
//
// The lookup runs inside the caller's root (RESOLVE_IN_ROOT), so absolute
// symlinks resolve as they do for the caller, not on the host.
func checkTarget(pid int, resolved string) syscall.Errno {
	if resolved == "" || resolved[0] != '/' {
		return 0
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, resolved, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.ENAMETOOLONG:
		return err.(syscall.Errno)
	default:
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return unix.EACCES
	}
	return 0
}
