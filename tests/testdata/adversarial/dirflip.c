// dirflip races the directory an execveat is relative to:
//
//	dirflip RO RW NAME TRIES MARKER
//
// It runs RO/NAME once by its absolute path (so that cordon has seen the
// path), then, TRIES times, forks a child that opens RO as descriptor 3
// (kept across exec: the kernel runs a #! script found through it as
// /dev/fd/3/NAME) and RW as 4, and calls execveat(3, NAME) while a second
// thread, after a delay that varies with the try, makes descriptor 3 a
// copy of 4. RW/NAME is meant to be a script the policy denies, one that
// creates MARKER when it runs; RO/NAME a program it allows. A try is won
// when MARKER exists after the child ended. It prints
// "dirflip: won W of TRIES".
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *rw;
static long delayNs;

static void *flip(void *arg) {
	(void)arg;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < delayNs);
	dup2(4, 3);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: dirflip RO RW NAME TRIES MARKER\n");
		return 2;
	}
	const char *ro = argv[1], *name = argv[3], *marker = argv[5];
	rw = argv[2];
	int tries = atoi(argv[4]), won = 0;
	char first[4096];
	snprintf(first, sizeof first, "%s/%s", ro, name);
	pid_t pid = fork();
	if (pid == 0) {
		char *args[] = {first, NULL};
		execve(first, args, environ);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < tries; i++) {
		unlink(marker);
		delayNs = (long)(i % 60) * 10000;
		pid = fork();
		if (pid == 0) {
			if (dup2(open(ro, O_RDONLY | O_DIRECTORY), 3) < 0 || dup2(open(rw, O_RDONLY | O_DIRECTORY), 4) < 0)
				_exit(126);
			pthread_t th;
			pthread_create(&th, NULL, flip, NULL);
			char *args[] = {(char *)name, NULL};
			syscall(SYS_execveat, 3, name, args, environ, 0);
			_exit(127);
		}
		waitpid(pid, NULL, 0);
		if (access(marker, F_OK) == 0)
			won++;
	}
	printf("dirflip: won %d of %d\n", won, tries);
	return 0;
}
