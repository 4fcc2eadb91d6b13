// threads execs from a multithreaded process, the way real programs do
// (node, the JVM, Go, threaded Python): the exec'ing process has threads
// running that have nothing to do with the exec.
//
//	threads storm T I ALLOWED DENIED   T threads, each spawning ALLOWED I times
//	                                    (alternately fork+execve and posix_spawn)
//	                                    and DENIED every 5th time; prints
//	                                    "storm ok=.. failed=.. refused=.. denied_ran=.."
//	threads exec PROG ARGS...           4 spinning threads; a fifth (not the
//	                                    leader) execs PROG; on failure prints
//	                                    "thread exec: <strerror>" and exits 126
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *allowedProg, *deniedProg;
static int iters;
static int ok, failed, refused, deniedRan; // guarded by mu
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

// run starts prog with one argument and returns its wait status, or -1
// with errno when it could not be started (posix_spawn reports the exec's
// errno itself; a forked child exits 126 when its execve fails).
static int run(const char *prog, int useSpawn) {
	char *argv[] = {(char *)prog, "storm", NULL};
	pid_t pid;
	if (useSpawn) {
		int err = posix_spawn(&pid, prog, NULL, NULL, argv, environ);
		if (err != 0) {
			errno = err;
			return -1;
		}
	} else {
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			execve(prog, argv, environ);
			_exit(126);
		}
	}
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

static void *stormer(void *arg) {
	long id = (long)arg;
	for (int i = 0; i < iters; i++) {
		int st = run(allowedProg, (i + id) % 2);
		pthread_mutex_lock(&mu);
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else
			failed++;
		pthread_mutex_unlock(&mu);
		if (i % 5 == 0) {
			st = run(deniedProg, (i / 5 + id) % 2);
			pthread_mutex_lock(&mu);
			if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
				deniedRan++;
			else
				refused++;
			pthread_mutex_unlock(&mu);
		}
	}
	return NULL;
}

static volatile int stop;

static void *spinner(void *arg) {
	(void)arg;
	for (volatile unsigned long x = 0; !stop; x++)
		;
	return NULL;
}

static char **execArgv;

static void *execer(void *arg) {
	(void)arg;
	usleep(20000); // let the spinners get going
	execve(execArgv[0], execArgv, environ);
	printf("thread exec: %s\n", strerror(errno));
	fflush(stdout);
	exit(126);
}

int main(int argc, char **argv) {
	if (argc >= 6 && strcmp(argv[1], "storm") == 0) {
		int nthreads = atoi(argv[2]);
		iters = atoi(argv[3]);
		allowedProg = argv[4];
		deniedProg = argv[5];
		pthread_t t[64];
		if (nthreads > 64)
			nthreads = 64;
		for (long i = 0; i < nthreads; i++)
			pthread_create(&t[i], NULL, stormer, (void *)i);
		for (int i = 0; i < nthreads; i++)
			pthread_join(t[i], NULL);
		printf("storm ok=%d failed=%d refused=%d denied_ran=%d\n", ok, failed, refused, deniedRan);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "exec") == 0) {
		execArgv = argv + 2;
		pthread_t t;
		for (int i = 0; i < 4; i++)
			pthread_create(&t, NULL, spinner, NULL);
		pthread_create(&t, NULL, execer, NULL);
		pthread_join(t, NULL);
		return 3; // not reached: the exec replaces or exit ends the process
	}
	fprintf(stderr, "usage: threads storm T I ALLOWED DENIED | threads exec PROG ARGS...\n");
	return 2;
}
