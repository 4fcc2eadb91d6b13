// renamerace: a workload racing cordon's exec event (tests/names_test.go).
// It runs ./l/prog (l leads to the directory bad/, whose programs the policy
// denies by path) and, the moment the child's /proc/PID/exe shows the new
// image (the kernel has run the exec; the exec event has not looked yet),
// renames bad/ to ok/, then back once the child is gone. It prints how many
// runs of the program exited 0: ran, under a name denied at the exec.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
	int rounds = atoi(argv[1]), ran = 0;
	char buf[4096], ex[64];
	for (int i = 0; i < rounds; i++) {
		pid_t c = fork();
		if (c == 0) { execl("./l/prog", "prog", (char *)0); _exit(99); }
		snprintf(ex, sizeof ex, "/proc/%d/exe", c);
		int renamed = 0;
		for (long k = 0; k < 50000000; k++) {
			ssize_t n = readlink(ex, buf, sizeof buf - 1);
			if (n < 0) break;
			buf[n] = 0;
			if (strstr(buf, "/bad/prog")) { rename("bad", "ok"); renamed = 1; break; }
		}
		int st;
		waitpid(c, &st, 0);
		if (renamed) rename("ok", "bad");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ran++;
	}
	printf("ran %d of %d\n", ran, rounds);
	return 0;
}
