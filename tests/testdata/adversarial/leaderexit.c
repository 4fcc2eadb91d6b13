// leaderexit: a process whose main thread exits while another of its
// threads runs on. /proc/PID/stat then says "Z" for the thread group
// leader, though the process lives; a tree walk that takes "Z" for dead
// neither kills it nor looks at its children. The surviving thread also
// forks a child, which must end with it. Everything exits on its own after
// the lifetime given.
//
// usage: leaderexit SECONDS MARKER   (MARKER only names the processes)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static time_t until;

static void *live(void *arg) {
	(void)arg;
	if (fork() == 0) { // a child of the surviving thread
		while (time(NULL) <= until)
			sleep(1);
		_exit(0);
	}
	while (time(NULL) <= until)
		sleep(1);
	_exit(0);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: leaderexit SECONDS MARKER\n");
		return 2;
	}
	until = time(NULL) + atoi(argv[1]);
	// The caller's child returns once the process has said "ready" (a
	// byte on this pipe), so that a run ending with it cannot end the
	// process before the test has read that line.
	int said[2];
	if (pipe(said) < 0)
		return 2;
	if (fork() != 0) {
		char b;
		close(said[1]);
		return read(said[0], &b, 1) == 1 ? 0 : 1;
	}
	close(said[0]);
	setsid();
	pthread_t t;
	if (pthread_create(&t, NULL, live, NULL) != 0)
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (write(said[1], "r", 1) != 1)
		return 1;
	close(said[1]);
	syscall(SYS_exit, 0); // this thread only
	return 0;
}
