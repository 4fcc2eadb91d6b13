package proc

import "golang.org/x/sys/unix"

// openat2Tries bounds Openat2's retries: each EAGAIN means a rename or a
// mount happened somewhere on the system while one lookup ran.
const openat2Tries = 16

// Openat2 is openat2(2) retried on EINTR and on EAGAIN, which the kernel
// answers a lookup with RESOLVE_IN_ROOT or RESOLVE_BENEATH that met ".."
// while any rename or mount ran anywhere on the system (it cannot then
// prove the ".." stayed inside): a busy machine's ordinary answer, for
// which the caller "may choose to retry" (openat2(2)). Still EAGAIN after
// openat2Tries, it is returned as it is, for the caller to fail closed.
func Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	var err error
	for range openat2Tries {
		var fd int
		fd, err = unix.Openat2(dirfd, path, how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, err
}
