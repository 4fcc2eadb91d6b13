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

#include "ready.h"

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
	detach_when_ready();
	setsid();
	pthread_t t;
	if (pthread_create(&t, NULL, live, NULL) != 0)
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	said_ready();
	syscall(SYS_exit, 0); // this thread only
	return 0;
}
