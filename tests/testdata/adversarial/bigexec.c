// bigexec makes the exec event come late (found by the third red team): a
// thread that is not the leader execs while the process holds a large
// populated address space, so the kernel spends longer than the tracer's
// interrupt deadline tearing the old one down, and the exec event arrives
// under the leader's pid for a tid the tracer may have given up on. Another
// thread flips argv[1] between ALLOWED and DENIED meanwhile, so only the
// verification at the exec event stops the denied value.
//
//	bigexec -m MB -n N -p PROG -a ALLOWED -d DENIED
//
// Each attempt forks a child that does the above; one summary line follows:
// summary n=N.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static union {
	char s[8];
	uint64_t u;
} word __attribute__((aligned(64)));
static uint64_t va, vd;
static char *prog;

static void *flip(void *arg) {
	(void)arg;
	for (;;) {
		__atomic_store_n(&word.u, va, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 64; j++)
			;
		__atomic_store_n(&word.u, vd, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 64; j++)
			;
	}
	return NULL;
}

static void *execer(void *arg) {
	(void)arg;
	char *args[] = {prog, word.s, NULL};
	char *env[] = {NULL};
	execve(prog, args, env);
	_exit(127);
}

int main(int argc, char **argv) {
	int mb = 1024, n = 3, opt;
	const char *allowed = NULL, *denied = NULL;
	while ((opt = getopt(argc, argv, "m:n:p:a:d:")) != -1) {
		switch (opt) {
		case 'm': mb = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'p': prog = optarg; break;
		case 'a': allowed = optarg; break;
		case 'd': denied = optarg; break;
		default: return 2;
		}
	}
	if (!prog || !allowed || !denied || strlen(allowed) > 7 || strlen(denied) > 7) {
		fprintf(stderr, "usage: bigexec -m MB -n N -p PROG -a ALLOWED -d DENIED\n");
		return 2;
	}
	memcpy(&va, allowed, strlen(allowed));
	memcpy(&vd, denied, strlen(denied));
	for (int i = 0; i < n; i++) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			if (mmap(NULL, (size_t)mb << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0) == MAP_FAILED)
				_exit(2);
			word.u = va;
			pthread_t f, e;
			pthread_create(&f, NULL, flip, NULL);
			usleep(1000);
			pthread_create(&e, NULL, execer, NULL);
			pause();
		}
		waitpid(c, NULL, 0);
	}
	printf("summary n=%d\n", n);
	return 0;
}
