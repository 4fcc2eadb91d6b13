// execat runs a program through the less common doors of the exec family
// and reports on stdout when the door was shut:
//
//	execat dirfd DIR NAME ARGV0 ARGS...   execveat(open(DIR), NAME, ...)
//	execat dirfd-kept DIR NAME ARGV0 ARGS... the same with DIR's descriptor kept
//	                                      across exec (a #! script found through it
//	                                      runs as /dev/fd/N/NAME)
//	execat opath FILE ARGV0 ARGS...       execveat(open(FILE, O_PATH), "", AT_EMPTY_PATH)
//	execat memfd FILE ARGV0 ARGS...       FILE's bytes copied into a memfd, sealed, fexecve'd
//	execat procfd FILE ARGV0 ARGS...      the same memfd run as execve("/proc/self/fd/N")
//	execat unsealed FILE ARGV0 ARGS...    memfd's, without seals
//	execat writesealed FILE ARGV0 ARGS... memfd's, sealed against writes but not shrinking
//	execat unlinked FILE ARGV0 ARGS...    FILE copied to ./.execat-copy, opened, unlinked, fexecve'd
//
// On failure it prints "execat: <mode>: <strerror>" and exits 126 for EPERM,
// 127 otherwise.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static int sys_execveat(int dirfd, const char *path, char **argv, int flags) {
	return syscall(SYS_execveat, dirfd, path, argv, environ, flags);
}

static void die(const char *what) {
	int e = errno;
	printf("execat: %s: %s\n", what, strerror(e));
	fflush(stdout);
	exit(e == EPERM ? 126 : 127);
}

// copyInto copies the file at src to fd.
static void copyInto(const char *src, int fd) {
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("open source");
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) {
		if (write(fd, buf, n) != n)
			die("write copy");
	}
	if (n < 0)
		die("read source");
	close(in);
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: execat MODE ...\n");
		return 2;
	}
	const char *mode = argv[1];
	if (strcmp(mode, "dirfd") == 0 || strcmp(mode, "dirfd-kept") == 0) {
		if (argc < 5)
			return 2;
		int dfd = open(argv[2], O_PATH | O_DIRECTORY | (strcmp(mode, "dirfd") == 0 ? O_CLOEXEC : 0));
		if (dfd < 0)
			die("open dir");
		sys_execveat(dfd, argv[3], argv + 4, 0);
		die("execveat");
	}
	char **args = argv + 3;
	if (strcmp(mode, "opath") == 0) {
		int fd = open(argv[2], O_PATH | O_CLOEXEC);
		if (fd < 0)
			die("open");
		sys_execveat(fd, "", args, AT_EMPTY_PATH);
		die("execveat");
	}
	if (strcmp(mode, "memfd") == 0 || strcmp(mode, "procfd") == 0 || strcmp(mode, "unsealed") == 0 ||
	    strcmp(mode, "writesealed") == 0) {
		// Not MFD_CLOEXEC: /proc/self/fd/N must still name it during exec.
		int fd = memfd_create("payload", MFD_ALLOW_SEALING);
		if (fd < 0)
			die("memfd_create");
		copyInto(argv[2], fd);
		// cordon runs a memfd only when it cannot be written any more.
		int seals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
		if (mode[0] == 'w')
			seals = F_SEAL_WRITE;
		if (mode[0] != 'u' && fcntl(fd, F_ADD_SEALS, seals) < 0)
			die("F_ADD_SEALS");
		// Exec needs no writer (ETXTBSY): reopen read-only, drop the writer.
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		int ro = open(p, O_RDONLY);
		if (ro < 0)
			die("reopen memfd");
		close(fd);
		if (mode[0] != 'p') {
			sys_execveat(ro, "", args, AT_EMPTY_PATH);
			die("execveat");
		}
		snprintf(p, sizeof p, "/proc/self/fd/%d", ro);
		execve(p, args, environ);
		die("execve");
	}
	if (strcmp(mode, "unlinked") == 0) {
		const char *copy = "./.execat-copy";
		int fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
		if (fd < 0)
			die("create copy");
		copyInto(argv[2], fd);
		close(fd);
		int ro = open(copy, O_RDONLY | O_CLOEXEC);
		if (ro < 0)
			die("reopen copy");
		if (unlink(copy) < 0)
			die("unlink copy");
		sys_execveat(ro, "", args, AT_EMPTY_PATH);
		die("execveat");
	}
	fprintf(stderr, "execat: unknown mode %s\n", mode);
	return 2;
}
