// Package seccomp holds the kernel's seccomp user-notification structures
// and the raw seccomp(2) and ioctl(2) calls that pass them, for the
// supervisor and for cordon doctor's probes: one mirror of each kernel
// structure, checked against the kernel's own sizes in its test. No x/sys
// wrapper exists for these calls (seccomp(2), seccomp_unotify(2)).
//
// This is the only file of the package, and it imports unsafe.
package seccomp

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Data mirrors struct seccomp_data (linux/seccomp.h): 64 bytes.
type Data struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// Notif mirrors struct seccomp_notif: 80 bytes on every architecture.
type Notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  Data
}

// NotifResp mirrors struct seccomp_notif_resp: 24 bytes.
type NotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// NotifSizes mirrors struct seccomp_notif_sizes.
type NotifSizes struct {
	Notif     uint16 `json:"seccomp_notif"`
	NotifResp uint16 `json:"seccomp_notif_resp"`
	Data      uint16 `json:"seccomp_data"`
}

// Layout is what this binary was built with, for size tests and for
// comparing with SECCOMP_GET_NOTIF_SIZES.
type Layout struct {
	Sizes       NotifSizes
	SizesSize   uintptr // struct seccomp_notif_sizes
	OffsetNr    uintptr // seccomp_data.nr, loaded by the BPF program
	OffsetArch  uintptr // seccomp_data.arch
	SockFilter  uintptr
	SockFprog   uintptr
	NotifIDSize uintptr // the argument of SECCOMP_IOCTL_NOTIF_ID_VALID
}

// CompiledLayout returns the Layout of this binary's structures.
func CompiledLayout() Layout {
	var d Data
	var id uint64
	return Layout{
		Sizes: NotifSizes{
			Notif:     uint16(unsafe.Sizeof(Notif{})),
			NotifResp: uint16(unsafe.Sizeof(NotifResp{})),
			Data:      uint16(unsafe.Sizeof(d)),
		},
		SizesSize:   unsafe.Sizeof(NotifSizes{}),
		OffsetNr:    unsafe.Offsetof(d.Nr),
		OffsetArch:  unsafe.Offsetof(d.Arch),
		SockFilter:  unsafe.Sizeof(unix.SockFilter{}),
		SockFprog:   unsafe.Sizeof(unix.SockFprog{}),
		NotifIDSize: unsafe.Sizeof(id),
	}
}

// SetFilter loads prog on the calling thread (and, with TSYNC, on every
// thread) and returns the listener fd when flags has NEW_LISTENER.
// seccomp(2): SECCOMP_SET_MODE_FILTER.
//
// Preconditions: the caller is locked to its OS thread and has set
// PR_SET_NO_NEW_PRIVS on it (or holds CAP_SYS_ADMIN).
func SetFilter(flags uintptr, prog []unix.SockFilter) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER)", errno)
	}
	return int(r), nil
}

// GetNotifSizes asks the kernel for its structure sizes.
// seccomp(2): SECCOMP_GET_NOTIF_SIZES (Linux 5.0).
func GetNotifSizes() (NotifSizes, error) {
	var s NotifSizes
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s)))
	if errno != 0 {
		return NotifSizes{}, os.NewSyscallError("seccomp(SECCOMP_GET_NOTIF_SIZES)", errno)
	}
	return s, nil
}

// ActionAvail asks whether the kernel knows a filter return action.
// seccomp(2): SECCOMP_GET_ACTION_AVAIL.
func ActionAvail(action uint32) error {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return os.NewSyscallError("seccomp(SECCOMP_GET_ACTION_AVAIL)", errno)
	}
	return nil
}

// NotifRecv receives one notification. The kernel rejects a buffer that is
// not zeroed (EINVAL), so n is cleared first. seccomp_unotify(2):
// SECCOMP_IOCTL_NOTIF_RECV. ENOENT means the caller went away (or was
// interrupted by a signal) before it was received.
func NotifRecv(fd int, n *Notif) error {
	return retryEINTR("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", func() unix.Errno {
		*n = Notif{}
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n)))
		return errno
	})
}

// NotifSend answers a notification. seccomp_unotify(2):
// SECCOMP_IOCTL_NOTIF_SEND. ENOENT means the notification is no longer
// pending (the caller died, or a signal interrupted its syscall).
func NotifSend(fd int, r *NotifResp) error {
	return retryEINTR("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", func() unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(r)))
		return errno
	})
}

// NotifIDValid reports (nil) whether notification id is still pending:
// after reading the caller's memory, this proves its pid was not reused in
// between. seccomp_unotify(2): SECCOMP_IOCTL_NOTIF_ID_VALID.
func NotifIDValid(fd int, id uint64) error {
	return retryEINTR("ioctl(SECCOMP_IOCTL_NOTIF_ID_VALID)", func() unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
		return errno
	})
}

// NotifSetFlags sets listener flags; the flags travel in the argument
// itself, not behind a pointer. seccomp_unotify(2):
// SECCOMP_IOCTL_NOTIF_SET_FLAGS (Linux 6.6).
func NotifSetFlags(fd int, flags uintptr) error {
	return retryEINTR("ioctl(SECCOMP_IOCTL_NOTIF_SET_FLAGS)", func() unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags)
		return errno
	})
}

// retryEINTR retries call while it fails with EINTR (Go's preemption
// signal, SIGURG, interrupts blocking syscalls; these are restartable).
func retryEINTR(name string, call func() unix.Errno) error {
	for {
		switch errno := call(); errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return os.NewSyscallError(name, errno)
		}
	}
}
