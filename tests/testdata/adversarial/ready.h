// ready.h: for the adversarial programs that leave processes behind. The
// caller's child (the command a test runs) returns only once the process
// left behind has said "ready" on stdout, so that a run ending with the
// command cannot end that process before the test has read the line.
#include <stdlib.h>
#include <unistd.h>

static int ready_fd = -1;

// detach_when_ready forks: the caller exits (0) once the child has called
// said_ready, or (1) if it died first; the child returns.
static void detach_when_ready(void) {
	int p[2];
	if (pipe(p) < 0)
		exit(2);
	if (fork() != 0) {
		char b;
		close(p[1]);
		exit(read(p[0], &b, 1) == 1 ? 0 : 1);
	}
	close(p[0]);
	ready_fd = p[1];
}

// said_ready tells the caller that "ready" has been printed and flushed.
static void said_ready(void) {
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	close(ready_fd);
}
