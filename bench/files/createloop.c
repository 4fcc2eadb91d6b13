// createloop N: creates, closes and removes N files (open O_CREAT) in the
// working directory and prints the wall time per file in microseconds,
// timed inside the program (start-up and teardown excluded). Used for the
// cost of the files policy's creation checks in BENCHMARKS.md:
//   gcc -O2 -o /tmp/createloop bench/files/createloop.c
//   cordon --no-defaults -- /tmp/createloop 20000   # no protected names: creations not notified
//   cordon -- /tmp/createloop 20000                 # built-in protected names: every O_CREAT notified
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	struct timespec a, b;
	char name[32];
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof name, "f%d", i % 64);
		int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0) {
			perror(name);
			return 1;
		}
		close(fd);
		unlink(name);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3;
	printf("%.2f\n", us / n);
	return 0;
}
