// fileops: the system calls behind file tricks, each printing its errno
// name, so a test can tell EACCES from EROFS from success.
//   fileops openat2-create PATH      openat2(O_CREAT) PATH
//   fileops openat2-read DIR PATH    openat2(O_RDONLY, RESOLVE_IN_ROOT) PATH under DIR
//   fileops rename FROM TO           renameat2(FROM, TO, 0)
//   fileops exchange FROM TO         renameat2(FROM, TO, RENAME_EXCHANGE)
//   fileops link FROM TO             linkat(FROM, TO)
//   fileops symlink TARGET PATH      symlinkat(TARGET, PATH)
//   fileops create PATH              open(O_CREAT|O_WRONLY)
//   fileops mknod PATH               mknodat(S_IFREG)
//   fileops read PATH                open(O_RDONLY) and read
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int report(const char *op, long rc) {
	if (rc < 0) {
		printf("%s: %s\n", op, strerrorname_np(errno));
		return 1;
	}
	printf("%s: ok\n", op);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) return 2;
	const char *op = argv[1];
	if (!strcmp(op, "openat2-create")) {
		struct open_how how = {.flags = O_CREAT | O_WRONLY, .mode = 0644};
		return report(op, syscall(SYS_openat2, AT_FDCWD, argv[2], &how, sizeof how));
	}
	if (!strcmp(op, "openat2-read") && argc > 3) {
		int dir = open(argv[2], O_PATH | O_DIRECTORY);
		struct open_how how = {.flags = O_RDONLY, .resolve = RESOLVE_IN_ROOT};
		long fd = syscall(SYS_openat2, dir, argv[3], &how, sizeof how);
		if (fd >= 0) {
			char b[64];
			ssize_t n = read(fd, b, sizeof b);
			if (n < 0) return report(op, -1);
			printf("read %zd bytes\n", n);
		}
		return report(op, fd);
	}
	if (!strcmp(op, "rename") && argc > 3)
		return report(op, syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], 0));
	if (!strcmp(op, "exchange") && argc > 3)
		return report(op, syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_EXCHANGE));
	if (!strcmp(op, "link") && argc > 3)
		return report(op, linkat(AT_FDCWD, argv[2], AT_FDCWD, argv[3], 0));
	if (!strcmp(op, "symlink") && argc > 3)
		return report(op, symlinkat(argv[2], AT_FDCWD, argv[3]));
	if (!strcmp(op, "create"))
		return report(op, open(argv[2], O_CREAT | O_WRONLY, 0644));
	if (!strcmp(op, "mknod"))
		return report(op, mknodat(AT_FDCWD, argv[2], S_IFREG | 0644, 0));
	if (!strcmp(op, "read")) {
		int fd = open(argv[2], O_RDONLY);
		if (fd >= 0) {
			char b[64];
			if (read(fd, b, sizeof b) < 0) return report(op, -1);
		}
		return report(op, fd);
	}
	return 2;
}
