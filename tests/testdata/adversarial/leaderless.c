// leaderless: a thread group whose main thread exits while two threads go
// on: one rewrites an argv byte ("pusx" <-> "push") in a loop, the other
// vforks children that exec ECHO with that argv. The group stays listed
// under its exited main thread, whose stat describes no memory.
//
// usage: leaderless ECHO N
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char *word, *path, **args;
static int runs;
static volatile int stop;

static void *flipper(void *unused) {
	volatile char *c = word + 3;
	while (!stop) {
		*c = 'h';
		*c = 'x';
	}
	return NULL;
}

static void *runner(void *unused) {
	usleep(200000); // the main thread is gone by now
	for (int i = 0; i < runs; i++) {
		pid_t pid = vfork();
		if (pid == 0) {
			execv(path, args);
			_exit(100);
		}
		if (pid > 0) waitpid(pid, NULL, 0);
	}
	stop = 1;
	printf("summary n=%d\n", runs);
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: leaderless ECHO N\n");
		return 2;
	}
	path = strdup(argv[1]);
	runs = atoi(argv[2]);
	word = strdup("pusx");
	args = calloc(3, sizeof *args);
	args[0] = strdup("echo");
	args[1] = word;
	pthread_t a, b;
	pthread_create(&a, NULL, flipper, NULL);
	pthread_create(&b, NULL, runner, NULL);
	syscall(SYS_exit, 0); // this thread only
	return 0;
}
