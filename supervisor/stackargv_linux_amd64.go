package supervisor

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ntPrstatus is the general registers' regset (elf.h NT_PRSTATUS).
const ntPrstatus = 1

// stackArgHead is how many words of a new image's stack stackArgv reads
// first: argc, up to stackArgHead-3 argv pointers, their NULL and envp[0].
const stackArgHead = 64

// maxStackArgs bounds the argument strings stackArgv reads; larger ones
// are read from /proc.
const maxStackArgs = 1 << 20

// stackArgv reads the argument strings of pid's new image, stopped at
// PTRACE_EVENT_EXEC, from its initial stack: the bytes /proc/PID/cmdline
// gives at that moment, read with two process_vm_readv instead of a walk
// of /proc and a read there.
//
// At the event the image has run no instruction: its stack pointer points
// at what the kernel wrote (create_elf_tables): argc, the argv pointers, a
// NULL, the envp pointers; argv[0] is the mm's arg_start and envp[0] its
// arg_end (the strings are contiguous, argv's then envp's), which is the
// range /proc/PID/cmdline reads. ok is false, and the caller reads /proc,
// for anything else: a 32-bit image (the regset is the 32-bit one), an x32
// image (its 4-byte argc and pointers read as 8-byte words give an argc
// too large or zero), no argument or no environment (arg_end is then not
// on the stack), many arguments, or any pointer or string that does not
// fit that layout exactly.
func stackArgv(pid int) ([]byte, bool) {
	var regs unix.PtraceRegs
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&regs))}
	iov.SetLen(int(unsafe.Sizeof(regs)))
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(pid), ntPrstatus, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if e != 0 || iov.Len != uint64(unsafe.Sizeof(regs)) {
		return nil, false
	}
	var head [stackArgHead]uint64
	n, err := readRemote(pid, uintptr(regs.Rsp), unsafe.Slice((*byte)(unsafe.Pointer(&head[0])), len(head)*8))
	if err != nil {
		return nil, false
	}
	argc := head[0]
	if argc < 1 || argc > stackArgHead-3 || uint64(n) < 8*(argc+3) || head[argc+1] != 0 {
		return nil, false
	}
	start, end := head[1], head[argc+2]
	if end <= start || end-start > maxStackArgs {
		return nil, false
	}
	buf := make([]byte, end-start)
	if n, err := readRemote(pid, uintptr(start), buf); err != nil || n != len(buf) {
		return nil, false
	}
	// Each argv[i] must start right after argv[i-1]'s NUL, and the last
	// end right before envp[0].
	for i := uint64(1); i <= argc; i++ {
		from, to := head[i], end
		if i < argc {
			to = head[i+1]
		}
		if to <= from || to > end {
			return nil, false
		}
		s := buf[from-start : to-start]
		if s[len(s)-1] != 0 || bytes.IndexByte(s[:len(s)-1], 0) >= 0 {
			return nil, false
		}
	}
	return buf, true
}

// readRemote reads len(buf) bytes at addr in pid's memory.
func readRemote(pid int, addr uintptr, buf []byte) (int, error) {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	return unix.ProcessVMReadv(pid, local, remote, 0)
}
