// regrow: a chain of processes, each the parent of the next, that keeps its
// length by forking at its bottom whenever links above have died. Killing
// the direct children of a subreaper one round at a time never ends it: each
// round removes the top link and the bottom grows one more. Every link exits
// on its own after the lifetime given, so a failed test leaves nothing for
// long.
//
// usage: regrow LENGTH SECONDS MARKER   (MARKER only names the processes;
// SETSID=1 puts each link in a session of its own)
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ready.h"

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: regrow LENGTH SECONDS MARKER\n");
		return 2;
	}
	int length = atoi(argv[1]);
	time_t until = time(NULL) + atoi(argv[2]);
	int own_session = getenv("SETSID") != NULL;
	if (length < 1 || length > 4096)
		return 2;
	pid_t links[4096];
	int n = 0;
	detach_when_ready(); // the chain lives on
	if (own_session)
		setsid();
	links[n++] = getpid();
	printf("ready\n");
	fflush(stdout);
	said_ready();
	for (;;) {
		if (time(NULL) > until)
			_exit(0);
		int alive = 0;
		for (int i = 0; i < n; i++)
			if (kill(links[i], 0) == 0)
				alive++;
		if (alive >= length || n >= 4096) {
			usleep(500);
			continue;
		}
		pid_t child = fork();
		if (child < 0) {
			usleep(1000);
			continue;
		}
		if (child > 0) {
			// A middle link: it lives until its time is up.
			while (time(NULL) <= until)
				sleep(1);
			_exit(0);
		}
		if (own_session)
			setsid();
		links[n++] = getpid(); // the new bottom carries on
	}
}
