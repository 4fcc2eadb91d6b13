package supervisor

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// syscallInfoHead is the start of the kernel's struct ptrace_syscall_info
// (op, arch, instruction and stack pointer): all PTRACE_GET_SYSCALL_INFO
// fills at a stop that is not a system call's.
type syscallInfoHead struct {
	op   uint8
	_    [3]uint8
	arch uint32
	ip   uint64
	sp   uint64
}

// errImageShape is a new image's stack that does not read as the kernel
// lays it out with the word width tried (see readImageArgv).
var errImageShape = errors.New("the image's stack is not argc and argv")

// imageArgv reads the argv the kernel gave the new image of pid, stopped at
// PTRACE_EVENT_EXEC: nothing of it has run, so its stack pointer is where
// the ELF loader left it, at argc. PTRACE_GET_SYSCALL_INFO gives it with
// the image's ABI (syscall_get_arch: the loader's personality switch sets
// or clears the compat state for the image, whatever call the caller
// made). An i386 image's words are 4 bytes. An x32 image reports x86_64
// (its words are 4 bytes too): read with 8-byte words its argc and first
// pointer make one word no count equals, so a shape error alone is read
// again with 4-byte words, which must pass the same checks; a kernel's
// true 8-byte layout always passes the first.
func (m *memReader) imageArgv(pid int) ([]string, error) {
	var info syscallInfoHead
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(pid),
		unsafe.Sizeof(info), uintptr(unsafe.Pointer(&info)), 0, 0)
	if errno != 0 {
		return nil, errno
	}
	switch info.arch {
	case unix.AUDIT_ARCH_I386:
		return m.readImageArgv(pid, info.sp&0xffffffff, 4)
	case unix.AUDIT_ARCH_X86_64:
		argv, err := m.readImageArgv(pid, info.sp, 8)
		if errors.Is(err, errImageShape) && info.sp <= 0xffffffff {
			return m.readImageArgv(pid, info.sp, 4)
		}
		return argv, err
	}
	return nil, fmt.Errorf("image of unknown arch %#x at the exec event", info.arch)
}
