// floor: the least a seccomp user-notification exec supervisor can do, as the
// floor cordon's figures are compared with (bench/cmd/cordon-bench builds and
// runs it inside the same bubblewrap sandbox as the bwrap-only variant).
//
//   floor COMMAND [ARG...]
//
// It forks; the child installs a filter that sends execve and execveat to a
// notify listener, hands the listener to the parent over a socket pair and
// execs COMMAND. The parent answers every notification the way a supervisor
// that allows everything must at the very least: poll, SECCOMP_IOCTL_NOTIF_RECV,
// read the path and the argv from the caller's memory (process_vm_readv),
// SECCOMP_IOCTL_NOTIF_ID_VALID (the caller may have died and its pid been
// reused), SECCOMP_IOCTL_NOTIF_SEND with SECCOMP_USER_NOTIF_FLAG_CONTINUE. No
// policy, no identity, no logging: what is left is the kernel's round trip and
// the reads. It exits with the command's status once the command has exited.
//
// Raw system calls only (no libseccomp): the filter is six instructions.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define FLOOR_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FLOOR_ARCH AUDIT_ARCH_AARCH64
#else
#error "floor: unsupported architecture"
#endif

#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

#define MAX_ARGS 256
#define MAX_STR 4096

static void die(const char *what) {
	fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
	exit(125);
}

static int install_filter(void) {
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FLOOR_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog fprog = {.len = sizeof(prog) / sizeof(prog[0]), .filter = prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("prctl(PR_SET_NO_NEW_PRIVS)");
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
	if (fd < 0)
		die("seccomp(NEW_LISTENER)");
	return fd;
}

static void send_fd(int sock, int fd) {
	char dummy = 0;
	struct iovec iov = {.iov_base = &dummy, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, 0) != 1)
		die("sendmsg");
}

static int recv_fd(int sock) {
	char dummy;
	struct iovec iov = {.iov_base = &dummy, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	if (recvmsg(sock, &msg, 0) != 1)
		die("recvmsg");
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (c == NULL || c->cmsg_type != SCM_RIGHTS)
		die("recvmsg: no descriptor");
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

// read_str reads a NUL-terminated string of at most MAX_STR bytes at addr in
// pid's memory; a string that crosses into an unmapped page is read up to it.
static ssize_t read_str(pid_t pid, uint64_t addr, char *buf) {
	struct iovec local = {.iov_base = buf, .iov_len = MAX_STR};
	// Stop at the end of addr's page first, so a short string at the end of
	// the mapping does not fail the whole read.
	size_t first = 4096 - (addr & 4095);
	struct iovec remote[2] = {
		{.iov_base = (void *)(uintptr_t)addr, .iov_len = first},
		{.iov_base = (void *)(uintptr_t)(addr + first), .iov_len = MAX_STR - first},
	};
	ssize_t n = process_vm_readv(pid, &local, 1, remote, first < MAX_STR ? 2 : 1, 0);
	if (n <= 0)
		return -1;
	return strnlen(buf, n);
}

// read_argv reads the path and every argv word of an execve(at) call.
static int read_argv(const struct seccomp_notif *req, size_t *words) {
	static char str[MAX_STR];
	static uint64_t ptrs[MAX_ARGS];
	int execveat = req->data.nr == __NR_execveat;
	uint64_t path = req->data.args[execveat ? 1 : 0];
	uint64_t argv = req->data.args[execveat ? 2 : 1];
	if (read_str(req->pid, path, str) < 0)
		return -1;
	struct iovec local = {.iov_base = ptrs, .iov_len = sizeof(ptrs)};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)argv, .iov_len = sizeof(ptrs)};
	ssize_t n = process_vm_readv(req->pid, &local, 1, &remote, 1, 0);
	if (n <= 0) {
		// The array may end close to an unmapped page: one pointer at a time.
		n = 0;
		for (size_t i = 0; i < MAX_ARGS; i++) {
			local.iov_base = &ptrs[i];
			local.iov_len = remote.iov_len = 8;
			remote.iov_base = (void *)(uintptr_t)(argv + 8 * i);
			if (process_vm_readv(req->pid, &local, 1, &remote, 1, 0) != 8)
				return -1;
			n += 8;
			if (ptrs[i] == 0)
				break;
		}
	}
	size_t i;
	for (i = 0; i < (size_t)n / 8 && ptrs[i] != 0; i++)
		if (read_str(req->pid, ptrs[i], str) < 0)
			return -1;
	*words = i;
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: floor COMMAND [ARG...]\n");
		return 2;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		close(sv[0]);
		int fd = install_filter();
		send_fd(sv[1], fd);
		close(fd);
		// Wait until the parent holds the listener: an exec before that
		// would block on a notification nobody reads, which is fine, but
		// the handshake keeps the start-up figure honest.
		char ok;
		if (read(sv[1], &ok, 1) != 1)
			die("handshake");
		close(sv[1]);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "floor: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	int listener = recv_fd(sv[0]);
	int pidfd = syscall(SYS_pidfd_open, child, 0);
	if (pidfd < 0)
		die("pidfd_open");
	if (write(sv[0], "", 1) != 1)
		die("handshake");
	close(sv[0]);

	struct seccomp_notif_sizes sizes;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		die("SECCOMP_GET_NOTIF_SIZES");
	struct seccomp_notif *req = calloc(1, sizes.seccomp_notif);
	struct seccomp_notif_resp *resp = calloc(1, sizes.seccomp_notif_resp);
	if (req == NULL || resp == NULL)
		die("calloc");
	struct pollfd pfds[2] = {{.fd = listener, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
	for (;;) {
		if (poll(pfds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (pfds[0].revents & POLLIN) {
			memset(req, 0, sizes.seccomp_notif);
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
				if (errno == EINTR || errno == ENOENT)
					continue; // the caller died or was interrupted meanwhile
				die("SECCOMP_IOCTL_NOTIF_RECV");
			}
			size_t words = 0;
			int ok = read_argv(req, &words) == 0;
			(void)words;
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
				continue; // gone: nothing to answer
			memset(resp, 0, sizes.seccomp_notif_resp);
			resp->id = req->id;
			if (ok) {
				resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			} else {
				resp->error = -EPERM; // fail closed, as a real supervisor must
			}
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
				die("SECCOMP_IOCTL_NOTIF_SEND");
		} else if (pfds[0].revents & (POLLHUP | POLLERR)) {
			pfds[0].fd = -1; // no task uses the filter any more
		}
		if (pfds[1].revents & POLLIN)
			break;
	}
	int status;
	if (waitpid(child, &status, 0) < 0)
		die("waitpid");
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
