// twoface mounts a read-only FUSE filesystem at MNT holding one file, prog,
// whose reads depend on who reads: a process whose executable is named
// "cordon" (cordon's supervisor, hashing or reading the head) gets file A,
// anyone else (the kernel's reads for an exec, made by the exec'ing task)
// gets file B, cut or zero-padded to A's size. Reads skip the page cache
// (FOPEN_DIRECT_IO), so each reader gets its own answer.
//
//	twoface MNT A B
//
// It prints "ready" once mounted and serves until the mount goes away.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static char *faces[2];
static size_t size;

static char *slurp(const char *path, size_t *n) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	*n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = calloc(1, *n + 1);
	if (fread(b, 1, *n, f) != *n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	return b;
}

static void reply(int fd, uint64_t unique, int err, const void *p, size_t n) {
	struct fuse_out_header h = {.len = sizeof h + n, .error = err, .unique = unique};
	struct iovec iov[2] = {{&h, sizeof h}, {(void *)p, n}};
	if (writev(fd, iov, n ? 2 : 1) < 0 && errno != ENOENT)
		perror("twoface: reply");
}

static void attr(uint64_t node, struct fuse_attr *a) {
	memset(a, 0, sizeof *a);
	a->ino = node;
	if (node == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0755;
		a->nlink = 1;
		a->size = size;
		a->blocks = (size + 511) / 512;
	}
	a->blksize = 4096;
}

// cordonReads reports whether pid's executable is named cordon.
static int cordonReads(uint32_t pid) {
	char link[64], exe[4096];
	snprintf(link, sizeof link, "/proc/%u/exe", pid);
	ssize_t n = readlink(link, exe, sizeof exe - 1);
	if (n < 0)
		return 0;
	exe[n] = 0;
	const char *base = strrchr(exe, '/');
	return strcmp(base ? base + 1 : exe, "cordon") == 0;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: twoface MNT A B\n");
		return 2;
	}
	size_t nb;
	faces[0] = slurp(argv[2], &size);
	char *b = slurp(argv[3], &nb);
	faces[1] = calloc(1, size + 1);
	memcpy(faces[1], b, nb < size ? nb : size);
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("/dev/fuse");
		return 2;
	}
	char opts[128];
	snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other", fd, getuid(), getgid());
	if (mount("twoface", argv[1], "fuse.twoface", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0) {
		perror("mount");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	size_t cap = (1 << 20) + 4096;
	char *buf = malloc(cap);
	for (;;) {
		ssize_t n = read(fd, buf, cap);
		if (n < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return errno == ENODEV ? 0 : 1; // ENODEV: unmounted
		}
		struct fuse_in_header *in = (void *)buf;
		void *arg = buf + sizeof *in;
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_in *ii = arg;
			struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
				.max_readahead = ii->max_readahead, .max_write = 4096};
			reply(fd, in->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_LOOKUP:
			if (in->nodeid == FUSE_ROOT_ID && strcmp(arg, "prog") == 0) {
				struct fuse_entry_out o = {.nodeid = 2, .generation = 1};
				attr(2, &o.attr);
				reply(fd, in->unique, 0, &o, sizeof o);
			} else {
				reply(fd, in->unique, -ENOENT, NULL, 0);
			}
			break;
		case FUSE_GETATTR: {
			struct fuse_attr_out o = {0};
			attr(in->nodeid, &o.attr);
			reply(fd, in->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = {.fh = 1, .open_flags = in->opcode == FUSE_OPEN ? FOPEN_DIRECT_IO : 0};
			reply(fd, in->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_READ: {
			struct fuse_read_in *r = arg;
			const char *face = faces[cordonReads(in->pid) ? 0 : 1];
			size_t off = r->offset < size ? r->offset : size;
			size_t len = size - off < r->size ? size - off : r->size;
			reply(fd, in->unique, 0, face + off, len);
			break;
		}
		case FUSE_STATFS: {
			struct fuse_statfs_out o = {0};
			o.st.bsize = o.st.frsize = 4096;
			o.st.namelen = 255;
			reply(fd, in->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_READDIR:
			reply(fd, in->unique, 0, NULL, 0);
			break;
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
		case FUSE_FLUSH:
		case FUSE_ACCESS:
			reply(fd, in->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;
		case FUSE_DESTROY:
			reply(fd, in->unique, 0, NULL, 0);
			return 0;
		default:
			reply(fd, in->unique, -ENOSYS, NULL, 0);
		}
	}
}
