//go:build linux

package doctor

// This is the only file of the package that imports unsafe: the kernel's
// seccomp structures and the raw seccomp(2) and ioctl(2) calls that pass them.

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompData mirrors struct seccomp_data (linux/seccomp.h), 64 bytes.
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// seccompNotif mirrors struct seccomp_notif, 80 bytes.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompNotifResp mirrors struct seccomp_notif_resp, 24 bytes.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// structLayout is what this binary was built with, for the size test and for
// comparing with SECCOMP_GET_NOTIF_SIZES.
type structLayout struct {
	Sizes       NotifSizes
	SizesSize   uintptr // struct seccomp_notif_sizes
	OffsetNr    uintptr // seccomp_data.nr, loaded by the BPF program
	OffsetArch  uintptr // seccomp_data.arch
	SockFilter  uintptr
	SockFprog   uintptr
	NotifIDSize uintptr // the argument of SECCOMP_IOCTL_NOTIF_ID_VALID
}

func compiledLayout() structLayout {
	var d seccompData
	var id uint64
	return structLayout{
		Sizes: NotifSizes{
			Notif:     uint16(unsafe.Sizeof(seccompNotif{})),
			NotifResp: uint16(unsafe.Sizeof(seccompNotifResp{})),
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

// seccompSetFilter loads filter on the calling thread (and, with TSYNC, on
// every thread) and returns the listener fd when flags has NEW_LISTENER.
// seccomp(2): SECCOMP_SET_MODE_FILTER.
//
// Preconditions: the caller is locked to its OS thread and has set
// PR_SET_NO_NEW_PRIVS on it (or holds CAP_SYS_ADMIN).
func seccompSetFilter(flags uintptr, filter []unix.SockFilter) (int, error) {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER)", errno)
	}
	return int(r), nil
}

// seccompNotifSizes asks the kernel for its structure sizes.
// seccomp(2): SECCOMP_GET_NOTIF_SIZES (Linux 5.0).
func seccompNotifSizes() (NotifSizes, error) {
	var s NotifSizes
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s)))
	if errno != 0 {
		return NotifSizes{}, os.NewSyscallError("seccomp(SECCOMP_GET_NOTIF_SIZES)", errno)
	}
	return s, nil
}

// seccompActionAvail asks whether the kernel knows a filter return action.
// seccomp(2): SECCOMP_GET_ACTION_AVAIL.
func seccompActionAvail(action uint32) error {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return os.NewSyscallError("seccomp(SECCOMP_GET_ACTION_AVAIL)", errno)
	}
	return nil
}

// notifRecv receives one notification. The kernel rejects a buffer that is
// not zeroed (EINVAL), so n is cleared first. seccomp_unotify(2):
// SECCOMP_IOCTL_NOTIF_RECV. ENOENT means the caller went away (or was
// interrupted by a signal) before we got it.
func notifRecv(fd int, n *seccompNotif) error {
	return ignoringEINTR("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", func() unix.Errno {
		*n = seccompNotif{}
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n)))
		return errno
	})
}

// notifSend answers a notification. seccomp_unotify(2):
// SECCOMP_IOCTL_NOTIF_SEND. ENOENT means the notification is no longer
// pending (target died, or a signal interrupted its syscall).
func notifSend(fd int, r *seccompNotifResp) error {
	return ignoringEINTR("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", func() unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(r)))
		return errno
	})
}

// notifIDValid reports (nil) whether notification id is still pending.
// seccomp_unotify(2): SECCOMP_IOCTL_NOTIF_ID_VALID.
func notifIDValid(fd int, id uint64) error {
	return ignoringEINTR("ioctl(SECCOMP_IOCTL_NOTIF_ID_VALID)", func() unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
		return errno
	})
}

// notifSetFlags sets listener flags; the flags travel in the argument itself,
// not behind a pointer. seccomp_unotify(2): SECCOMP_IOCTL_NOTIF_SET_FLAGS
// (Linux 6.6).
func notifSetFlags(fd int, flags uintptr) error {
	return ignoringEINTR("ioctl(SECCOMP_IOCTL_NOTIF_SET_FLAGS)", func() unix.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags)
		return errno
	})
}

// ignoringEINTR retries call while it fails with EINTR (Go's preemption
// signal, SIGURG, interrupts blocking syscalls).
func ignoringEINTR(name string, call func() unix.Errno) error {
	for {
		errno := call()
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return os.NewSyscallError(name, errno)
		}
	}
}
