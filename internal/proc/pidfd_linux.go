package proc

import (
	"time"

	"golang.org/x/sys/unix"
)

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

// PidfdWait waits until the process fd refers to has exited, or until
// deadline; it reports whether it exited. Blocking in poll(2) wakes the
// moment the process exits, where polling PidfdAlive with sleeps in between
// would add up to one sleep.
func PidfdWait(fd int, deadline time.Time) bool {
	if fd < 0 {
		return true
	}
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n > 0 {
			return true
		}
		if left == 0 {
			return false
		}
	}
}
