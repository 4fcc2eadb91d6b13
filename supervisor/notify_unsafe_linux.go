package supervisor

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompData mirrors struct seccomp_data (linux/seccomp.h).
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// seccompNotif mirrors struct seccomp_notif: 80 bytes on every architecture.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompNotifResp mirrors struct seccomp_notif_resp: 24 bytes.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

const (
	sizeofNotif     = unsafe.Sizeof(seccompNotif{})
	sizeofNotifResp = unsafe.Sizeof(seccompNotifResp{})
)

// ioctl retries EINTR; seccomp(2) notify ioctls are restartable.
func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// notifRecv reads one notification. The kernel requires the buffer to be
// zeroed (EINVAL otherwise), so n is cleared first.
func notifRecv(fd int, n *seccompNotif) error {
	*n = seccompNotif{}
	if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n)); err != nil {
		return os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", err)
	}
	return nil
}

// notifSend answers a notification.
func notifSend(fd int, r *seccompNotifResp) error {
	if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r)); err != nil {
		return os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", err)
	}
	return nil
}

// notifIDValid reports whether the notification id still refers to a live,
// waiting syscall: after reading the caller's memory this proves the pid was
// not reused in between.
func notifIDValid(fd int, id uint64) error {
	if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)); err != nil {
		return os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_ID_VALID)", err)
	}
	return nil
}

// seccompSetFilter calls seccomp(2) SECCOMP_SET_MODE_FILTER with prog and
// flags, returning the listener fd when flags ask for one. No x/sys wrapper
// exists for seccomp(2) (see seccomp(2)).
func seccompSetFilter(prog []unix.SockFilter, flags uintptr) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER)", e)
	}
	return int(r), nil
}

// unsafePointer is unsafe.Pointer, for the one ptrace call elsewhere in the
// package that passes a buffer.
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }
