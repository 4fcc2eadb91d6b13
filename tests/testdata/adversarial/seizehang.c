// seizehang deadlocked cordon's tracer (found by the fifth red team): a
// thread whose exec failed stays attached to the tracer; a second thread's
// exec (not the leader's) then waits, holding the process's
// cred_guard_mutex, for that thread to be reaped, which only the tracer
// does; and the leader's own exec makes the tracer PTRACE_SEIZE it, which
// waits for the same mutex. Nothing in the kernel ends the wait.
//
//	seizehang N
//
// Each of N attempts forks a process doing the above; the parent waits for
// it. One summary line follows: summary n=N.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *failing(void *arg) {
	(void)arg;
	char *args[] = {"./not-a-program", NULL};
	execve("./not-a-program", args, environ); // ENOEXEC, after the check
	for (;;)
		pause();
}

static void *sibling(void *arg) {
	(void)arg;
	usleep(2000);
	char *args[] = {"/bin/true", NULL};
	for (;;)
		execve("/bin/true", args, environ);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10;
	int fd = open("not-a-program", O_CREAT | O_WRONLY | O_TRUNC, 0755);
	if (fd < 0 || write(fd, "zz\n", 3) != 3)
		return 2;
	close(fd);
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c == 0) {
			pthread_t a, b;
			pthread_create(&a, NULL, failing, NULL);
			pthread_create(&b, NULL, sibling, NULL);
			usleep(2000);
			char *args[] = {"/bin/true", NULL};
			for (;;)
				execve("/bin/true", args, environ);
		}
		waitpid(c, NULL, 0);
	}
	unlink("not-a-program");
	printf("summary n=%d\n", n);
	return 0;
}
