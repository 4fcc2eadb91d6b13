/*
 * nsdeny: run a program the way a container with Docker's default seccomp
 * profile runs it. A filter (with no_new_privs, inherited by everything the
 * program starts) refuses unshare, setns and clone with any namespace flag
 * with EPERM, and clone3 with ENOSYS (its flags live in memory a filter
 * cannot read, so Docker refuses it whole and glibc falls back to clone).
 *
 * Built with -DNO_LANDLOCK it also refuses landlock_create_ruleset with
 * ENOSYS: a kernel without Landlock.
 *
 * usage: nsdeny PROGRAM [ARG...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "unsupported architecture"
#endif

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifdef NO_LANDLOCK
#define LANDLOCK_NR __NR_landlock_create_ruleset
#else
#define LANDLOCK_NR 0xffffffff /* matches no syscall */
#endif

#define NSFLAGS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
                 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: nsdeny PROGRAM [ARG...]\n");
		return 2;
	}
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* Another ABI: kill, so nothing slips by on a 32-bit entry. */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 7, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setns, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 7, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LANDLOCK_NR, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* clone: the flags are the first argument on both architectures. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NSFLAGS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("nsdeny: prctl(PR_SET_NO_NEW_PRIVS)");
		return 125;
	}
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		perror("nsdeny: seccomp");
		return 125;
	}
	execvp(argv[1], argv + 1);
	perror("nsdeny: exec");
	return 127;
}
