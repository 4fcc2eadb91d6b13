package proc

import "golang.org/x/sys/unix"

// PidfdAlive reports whether the process behind pidfd fd has not exited: a
// pidfd polls readable once its process has exited (Linux 5.3+). An error
// reads as not alive.
func PidfdAlive(fd int) bool {
	if fd < 0 {
		return false // poll(2) would skip it and report nothing pending
	}
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}
