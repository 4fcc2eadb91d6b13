package doctor

import "golang.org/x/sys/unix"

// auditArch is seccomp_data.arch for this binary's native syscall entry.
const auditArch = unix.AUDIT_ARCH_X86_64
