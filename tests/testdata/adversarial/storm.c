// storm: starts a program, then after DELAY_US sends it N SIGWINCH, GAP_US
// apart (a pending signal of one kind takes no second, so they are spaced),
// then one SIGTERM, and exits with the program's status (128+N when a
// signal ended it).
//
// usage: storm N GAP_US DELAY_US PROGRAM [ARG...]
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 5)
		return 2;
	int n = atoi(argv[1]), gap = atoi(argv[2]), delay = atoi(argv[3]);
	pid_t c = fork();
	if (c < 0)
		return 2;
	if (c == 0) {
		execv(argv[4], argv + 4);
		_exit(127);
	}
	usleep(delay);
	for (int i = 0; i < n; i++) {
		kill(c, SIGWINCH);
		usleep(gap);
	}
	kill(c, SIGTERM);
	int st;
	if (waitpid(c, &st, 0) < 0)
		return 2;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
