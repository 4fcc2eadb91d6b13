package supervisor

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestFilterSemantics runs the exported program on seccomp_data inputs
// with a small classic-BPF interpreter, so what Filter's doc comment
// promises is checked for every calling convention without loading it.
func TestFilterSemantics(t *testing.T) {
	raw, err := Filter()
	require.NoError(t, err)
	prog, err := decodeFilter(raw)
	require.NoError(t, err)

	const (
		allow  = unix.SECCOMP_RET_ALLOW
		notify = unix.SECCOMP_RET_USER_NOTIF
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		kill   = unix.SECCOMP_RET_KILL_PROCESS
		amd64  = unix.AUDIT_ARCH_X86_64
		i386   = unix.AUDIT_ARCH_I386
	)
	tests := []struct {
		name string
		arch uint32
		nr   int32
		args [6]uint64
		want uint32
	}{
		{name: "x86_64 execve", arch: amd64, nr: 59, want: notify},
		{name: "x86_64 execveat", arch: amd64, nr: 322, want: notify},
		{name: "x32 execve", arch: amd64, nr: x32Bit | 520, want: notify},
		{name: "x32 execveat", arch: amd64, nr: x32Bit | 545, want: notify},
		{name: "i386 execve", arch: i386, nr: 11, want: notify},
		{name: "i386 execveat", arch: i386, nr: 358, want: notify},
		{name: "x86_64 getpid", arch: amd64, nr: 39, want: allow},
		{name: "x32 getpid", arch: amd64, nr: x32Bit | 39, want: allow},
		{name: "i386 getpid", arch: i386, nr: 20, want: allow},
		{name: "x86_64 ioctl TIOCSTI", arch: amd64, nr: 16, args: [6]uint64{0, unix.TIOCSTI}, want: eperm},
		{name: "x86_64 ioctl TIOCSTI with garbage upper bits", arch: amd64, nr: 16, args: [6]uint64{0, 0xdeadbeef_00000000 | unix.TIOCSTI}, want: eperm},
		{name: "x86_64 ioctl TIOCLINUX", arch: amd64, nr: 16, args: [6]uint64{0, unix.TIOCLINUX}, want: eperm},
		{name: "x86_64 ioctl TCGETS", arch: amd64, nr: 16, args: [6]uint64{0, unix.TCGETS}, want: allow},
		{name: "x86_64 ioctl TIOCSPGRP", arch: amd64, nr: 16, args: [6]uint64{0, unix.TIOCSPGRP}, want: allow},
		{name: "i386 ioctl TIOCSTI", arch: i386, nr: 54, args: [6]uint64{0, unix.TIOCSTI}, want: eperm},
		{name: "i386 ioctl TIOCLINUX", arch: i386, nr: 54, args: [6]uint64{0, unix.TIOCLINUX}, want: eperm},
		{name: "x32 ioctl TIOCSTI", arch: amd64, nr: x32Bit | 514, args: [6]uint64{0, unix.TIOCSTI}, want: eperm},
		{name: "aarch64 caller is killed", arch: unix.AUDIT_ARCH_AARCH64, nr: 221, want: kill},
		{name: "arm caller is killed", arch: unix.AUDIT_ARCH_ARM, nr: 11, want: kill},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runBPF(prog, seccompDataBytes(tc.arch, tc.nr, tc.args))
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%#08x", tc.want), fmt.Sprintf("%#08x", got))
		})
	}
}

// seccompDataBytes lays out struct seccomp_data as the kernel hands it to
// the filter: nr, arch, instruction_pointer, args[6], native byte order.
func seccompDataBytes(arch uint32, nr int32, args [6]uint64) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(nr))
	b = binary.NativeEndian.AppendUint32(b, arch)
	b = binary.NativeEndian.AppendUint64(b, 0x401000)
	for _, a := range args {
		b = binary.NativeEndian.AppendUint64(b, a)
	}
	return b
}

// runBPF interprets the classic-BPF subset seccomp accepts.
func runBPF(prog []unix.SockFilter, data []byte) (uint32, error) {
	var a, x uint32
	var mem [16]uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		k := ins.K
		jump := func(cond bool) {
			if cond {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		}
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if int(k)+4 > len(data) || k%4 != 0 {
				return 0, fmt.Errorf("pc %d: load at %d out of seccomp_data", pc, k)
			}
			a = binary.NativeEndian.Uint32(data[k:])
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = uint32(len(data))
		case unix.BPF_LD | unix.BPF_IMM:
			a = k
		case unix.BPF_LDX | unix.BPF_IMM:
			x = k
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_LEN:
			x = uint32(len(data))
		case unix.BPF_LD | unix.BPF_MEM:
			a = mem[k]
		case unix.BPF_LDX | unix.BPF_MEM:
			x = mem[k]
		case unix.BPF_ST:
			mem[k] = a
		case unix.BPF_STX:
			mem[k] = x
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= k
		case unix.BPF_ALU | unix.BPF_OR | unix.BPF_K:
			a |= k
		case unix.BPF_ALU | unix.BPF_ADD | unix.BPF_K:
			a += k
		case unix.BPF_ALU | unix.BPF_SUB | unix.BPF_K:
			a -= k
		case unix.BPF_ALU | unix.BPF_RSH | unix.BPF_K:
			a >>= k
		case unix.BPF_ALU | unix.BPF_LSH | unix.BPF_K:
			a <<= k
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_X:
			a &= x
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
		case unix.BPF_MISC | unix.BPF_TXA:
			a = x
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(k)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(a == k)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			jump(a > k)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(a >= k)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(a&k != 0)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X:
			jump(a == x)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_X:
			jump(a > x)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_X:
			jump(a >= x)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_X:
			jump(a&x != 0)
		case unix.BPF_RET | unix.BPF_K:
			return k, nil
		case unix.BPF_RET | unix.BPF_A:
			return a, nil
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x not handled by this interpreter", pc, ins.Code)
		}
	}
	return 0, fmt.Errorf("program fell off its end")
}

func init() { sameVerdicts = sameVerdictsOnSamples }

// sameVerdictsOnSamples runs two seccomp programs for amd64 on a sample of
// inputs (every system call number of x86-64, x32 and i386, with each
// argument in turn taking values the filter's rules compare against) and
// reports the first input they answer differently, or "" when none. It is
// how the embedded table is checked where another libseccomp lays the same
// rules out in other bytes.
func sameVerdictsOnSamples(a, b []byte) (string, error) {
	pa, err := decodeFilter(a)
	if err != nil {
		return "", err
	}
	pb, err := decodeFilter(b)
	if err != nil {
		return "", err
	}
	values := []uint64{1, 2, 3, 6, 8, 0x0a, 0x0f, 0x10, 0x22, 0x800, 0x4000, unix.MSG_FASTOPEN,
		unix.TIOCSTI, unix.TIOCLINUX, unix.CLONE_VM | unix.CLONE_VFORK, unix.CLONE_NEWNS, unix.CLONE_NEWUSER,
		unix.O_CREAT, 1<<32 | 8, 0xffffffff, ^uint64(0)}
	type call struct {
		arch uint32
		nr   int32
	}
	var calls []call
	for nr := int32(0); nr < 600; nr++ {
		calls = append(calls, call{unix.AUDIT_ARCH_X86_64, nr}, call{unix.AUDIT_ARCH_X86_64, x32Bit | nr},
			call{unix.AUDIT_ARCH_I386, nr})
	}
	calls = append(calls, call{unix.AUDIT_ARCH_AARCH64, 221}, call{unix.AUDIT_ARCH_ARM, 11})
	for _, c := range calls {
		var args [6]uint64
		try := func() (string, error) {
			data := seccompDataBytes(c.arch, c.nr, args)
			ra, err := runBPF(pa, data)
			if err != nil {
				return "", err
			}
			rb, err := runBPF(pb, data)
			if err != nil {
				return "", err
			}
			if ra != rb {
				return fmt.Sprintf("arch %#x nr %#x args %#x: %#x against %#x", c.arch, c.nr, args, ra, rb), nil
			}
			return "", nil
		}
		if d, err := try(); d != "" || err != nil {
			return d, err
		}
		for i := range args {
			for _, v := range values {
				args = [6]uint64{}
				args[i] = v
				if d, err := try(); d != "" || err != nil {
					return d, err
				}
			}
		}
	}
	return "", nil
}

// TestSameVerdictsOnSamples: the comparison tells programs apart that
// differ in one rule, and does not tell apart a program from itself.
func TestSameVerdictsOnSamples(t *testing.T) {
	withCreates, err := compileFilter(optNotify|optCreates, "amd64")
	require.NoError(t, err)
	plain, err := compileFilter(optNotify, "amd64")
	require.NoError(t, err)
	d, err := sameVerdictsOnSamples(plain, plain)
	require.NoError(t, err)
	assert.Empty(t, d)
	d, err = sameVerdictsOnSamples(plain, withCreates)
	require.NoError(t, err)
	assert.NotEmpty(t, d, "the creation rules change verdicts")
}
