// argvmem races the exec check through memory the exec'ing process never
// writes itself, so a check that looks only at where each string starts, or
// trusts every private mapping, continues an exec whose argv changes after
// the check. The caller is single-threaded and shares its memory with no
// process, and the program it runs lies on a read-only mount, so the only
// thing between the attack and success is the proof about its memory.
//
//	argvmem -m MODE -n N -p PROG [-f FILE]
//
// Modes:
//
//	straddle  argv[1] begins with "pu" at the end of a private page and goes
//	          on ("ll" or "sh") into the next page, a MAP_SHARED memfd page
//	          that another process rewrites
//	filepriv  argv[1] lives in a MAP_PRIVATE mapping of FILE that the caller
//	          never writes: its page follows the page cache, and another
//	          process pwrite()s FILE
//
// Each attempt forks a caller that runs PROG pull|push; a racer flips the
// word all the while. The program's own output (echo: "pull" or "push")
// goes to stdout; one summary line follows:
//
//	summary mode=M n=N ran=R eperm=E killed=K other=O
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
	const char *mode = NULL, *prog = NULL, *file = NULL;
	int n = 100, opt;
	while ((opt = getopt(argc, argv, "m:n:p:f:")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'p': prog = optarg; break;
		case 'f': file = optarg; break;
		default: return 2;
		}
	}
	if (!mode || !prog) {
		fprintf(stderr, "usage: argvmem -m straddle|filepriv -n N -p PROG [-f FILE]\n");
		return 2;
	}
	long page = sysconf(_SC_PAGESIZE);
	char *word;         // argv[1] as the caller passes it
	char *flip;         // what the racer writes: 2 bytes
	int fd = -1;        // filepriv: the file the racer writes
	off_t flipoff = 0;  // filepriv: where in the file
	if (strcmp(mode, "straddle") == 0) {
		char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int mfd = memfd_create("argvmem", 0);
		if (two == MAP_FAILED || mfd < 0 || ftruncate(mfd, page) < 0) {
			perror("setup");
			return 2;
		}
		char *shared = mmap(two + page, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mfd, 0);
		if (shared == MAP_FAILED) {
			perror("mmap shared");
			return 2;
		}
		word = two + page - 2;
		memcpy(word, "pu", 2);
		memcpy(shared, "ll", 3);
		flip = shared;
	} else if (strcmp(mode, "filepriv") == 0) {
		if (!file) {
			fprintf(stderr, "filepriv needs -f FILE\n");
			return 2;
		}
		fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || pwrite(fd, "pull", 5, 0) != 5 || ftruncate(fd, page) < 0) {
			perror(file);
			return 2;
		}
		word = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
		if (word == MAP_FAILED) {
			perror("mmap private");
			return 2;
		}
		flip = NULL;
		flipoff = 2;
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	int ran = 0, eperm = 0, killed = 0, other = 0;
	for (int i = 0; i < n; i++) {
		pid_t racer = fork();
		if (racer == 0) {
			for (unsigned k = 0;; k++) {
				const char *w = (k & 1) ? "sh" : "ll";
				if (flip)
					memcpy(flip, w, 2);
				else if (pwrite(fd, w, 2, flipoff) != 2)
					_exit(1);
			}
		}
		usleep(200);
		fflush(stdout);
		pid_t caller = fork();
		if (caller == 0) {
			char *args[] = {(char *)prog, word, NULL};
			execve(prog, args, environ);
			_exit(errno == EPERM ? 3 : 4);
		}
		int st;
		waitpid(caller, &st, 0);
		kill(racer, SIGKILL);
		waitpid(racer, NULL, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ran++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			eperm++;
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
		else
			other++;
	}
	printf("summary mode=%s n=%d ran=%d eperm=%d killed=%d other=%d\n", mode, n, ran, eperm, killed, other);
	return 0;
}
