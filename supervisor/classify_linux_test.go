package supervisor

import (
	"testing"

	"github.com/cordon-sandbox/cordon/internal/seccomp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestClassify(t *testing.T) {
	const (
		hi = 0xdeadbeef_00000000 // garbage a compat caller may leave in the upper halves
		// AT_FDCWD as a 64-bit caller passes it (sign-extended) and as a
		// 32-bit caller does (the kernel zero-extends compat arguments).
		fdcwd64 = 0xffffffff_ffffff9c
		fdcwd32 = 0xffffff9c
	)
	tests := []struct {
		name    string
		data    seccomp.Data
		want    execCall
		wantErr string
	}{
		{
			name: "x86_64 execve",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: 59, Args: [6]uint64{0x7ffc_0000_1000, 0x7ffc_0000_2000, 0x7ffc_0000_3000}},
			want: execCall{name: "execve", arch: "x86_64", ptrSize: 8, dirfd: unix.AT_FDCWD, path: 0x7ffc_0000_1000, argv: 0x7ffc_0000_2000},
		},
		{
			name: "x86_64 execveat with AT_FDCWD",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: 322, Args: [6]uint64{fdcwd64, 0x7ffc_0000_1000, 0x7ffc_0000_2000, 0x7ffc_0000_3000, unix.AT_EMPTY_PATH}},
			want: execCall{name: "execveat", arch: "x86_64", ptrSize: 8, dirfd: unix.AT_FDCWD, path: 0x7ffc_0000_1000, argv: 0x7ffc_0000_2000, flags: unix.AT_EMPTY_PATH},
		},
		{
			name: "x86_64 execveat with a dirfd",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: 322, Args: [6]uint64{7, 0x1000, 0x2000, 0, 0}},
			want: execCall{name: "execveat", arch: "x86_64", ptrSize: 8, dirfd: 7, path: 0x1000, argv: 0x2000},
		},
		{
			// The kernel takes an x32 call's pointers as full 64-bit
			// registers (only argv's entries are 4 bytes): cut to 32
			// bits they would name other memory than it reads.
			name: "x32 execve: 4-byte argv entries, pointers whole",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: x32Bit | 520, Args: [6]uint64{hi | 0x1000, hi | 0x2000, hi | 0x3000}},
			want: execCall{name: "execve", arch: "x32", ptrSize: 4, dirfd: unix.AT_FDCWD, path: hi | 0x1000, argv: hi | 0x2000},
		},
		{
			name: "x32 execveat with 32-bit AT_FDCWD; fd and flags are ints",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: x32Bit | 545, Args: [6]uint64{fdcwd32, hi | 0x1000, hi | 0x2000, 0, hi | unix.AT_EMPTY_PATH}},
			want: execCall{name: "execveat", arch: "x32", ptrSize: 4, dirfd: unix.AT_FDCWD, path: hi | 0x1000, argv: hi | 0x2000, flags: unix.AT_EMPTY_PATH},
		},
		{
			name: "x86_64 execveat flags with a garbage upper half (an int to the kernel)",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: 322, Args: [6]uint64{7, 0x1000, 0x2000, 0, hi | unix.AT_EMPTY_PATH}},
			want: execCall{name: "execveat", arch: "x86_64", ptrSize: 8, dirfd: 7, path: 0x1000, argv: 0x2000, flags: unix.AT_EMPTY_PATH},
		},
		{
			name: "i386 execve",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_I386, Nr: 11, Args: [6]uint64{0x0804_1000, 0xffff_d000, 0xffff_e000}},
			want: execCall{name: "execve", arch: "i386", ptrSize: 4, dirfd: unix.AT_FDCWD, path: 0x0804_1000, argv: 0xffff_d000},
		},
		{
			name: "i386 execveat with 32-bit AT_FDCWD",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_I386, Nr: 358, Args: [6]uint64{fdcwd32, 0x1000, 0x2000, 0x3000, unix.AT_EMPTY_PATH}},
			want: execCall{name: "execveat", arch: "i386", ptrSize: 4, dirfd: unix.AT_FDCWD, path: 0x1000, argv: 0x2000, flags: unix.AT_EMPTY_PATH},
		},
		{
			name: "i386 execveat with a dirfd and garbage upper halves",
			data: seccomp.Data{Arch: unix.AUDIT_ARCH_I386, Nr: 358, Args: [6]uint64{hi | 5, hi | 0x1000, hi | 0x2000, 0, 0}},
			want: execCall{name: "execveat", arch: "i386", ptrSize: 4, dirfd: 5, path: 0x1000, argv: 0x2000},
		},
		{name: "x86_64 other syscall", data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: 39}, wantErr: "syscall 39 on x86_64"},
		{name: "x86_64 number of an x32 execve without the x32 bit", data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: 520}, wantErr: "on x86_64"},
		{name: "x32 number of an x86_64 execve", data: seccomp.Data{Arch: unix.AUDIT_ARCH_X86_64, Nr: x32Bit | 59}, wantErr: "on x32"},
		{name: "i386 number of an x86_64 execve", data: seccomp.Data{Arch: unix.AUDIT_ARCH_I386, Nr: 59}, wantErr: "syscall 59 on i386"},
		{name: "unknown arch", data: seccomp.Data{Arch: unix.AUDIT_ARCH_AARCH64, Nr: 221}, wantErr: "unknown arch 0xc00000b7"},
		{name: "zero arch", data: seccomp.Data{Nr: 59}, wantErr: "unknown arch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := classify(&tc.data)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestClassifyLeavesDataAlone: classify masks a copy of the arguments; the
// notification itself is not changed.
func TestClassifyLeavesDataAlone(t *testing.T) {
	sd := seccomp.Data{Arch: unix.AUDIT_ARCH_I386, Nr: 11, Args: [6]uint64{0xdeadbeef_00001000}}
	_, err := classify(&sd)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xdeadbeef_00001000), sd.Args[0])
}
