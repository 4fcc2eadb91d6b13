// flip races the exec check: while one task calls execve, another rewrites
// what the exec will run, hoping the supervisor checks one value and the
// kernel runs the other. Every attempt is a fresh process; the outcome of
// each is classified from the exec'd program's output and wait status, and
// one summary line is printed at the end:
//
//	summary mode=M steady=S n=N ran_allowed=A ran_denied=D ran_torn=T eperm=E killed=K other=O racer_refused=R
//
// Modes (the rewritten value is one argv string unless said otherwise):
//
//	thread    a second thread of the exec'ing process
//	clonevm   a clone(CLONE_VM) peer with its own stack (not a thread)
//	shared    another process, through a MAP_SHARED memfd mapping holding argv[1]
//	procmem   another process (the parent), through /proc/PID/mem
//	tracedmem the same, and the writer is the exec'ing process's tracer
//	          (PTRACE_TRACEME), so no other tracer can attach to it
//	postexec  the parent writes the denied word into the NEW program's argv
//	          (/proc/PID/mem, arg_start from /proc/PID/stat) as soon as it
//	          runs and no tracer holds it stopped, before its main reads argv
//	pathswap  another process swaps two symlinks (renameat2 RENAME_EXCHANGE);
//	          the exec'd path points at the allowed or the denied program
//	killpend  no race: a big-argv exec is SIGKILLed at a random moment while
//	          the supervisor decides it; a watchdog also SIGKILLs a whole
//	          thread race (its process group) mid-run
//
// Options:
//
//	-m MODE -n N -p PROG   the program to exec (pathswap: the link that is swapped)
//	-a WORD -d WORD        allowed / denied argv[1] (at most 7 bytes each)
//	-A MARK -D MARK        output that shows the allowed / denied program ran
//	                       (default "ran: WORD\n")
//	-x PATH                pathswap: the other link (points at the other program)
//	-s                     steady: the racer keeps writing the allowed value
//	                       (a control: every attempt must run the allowed program;
//	                       pathswap: only labels the summary, point both links
//	                       at the allowed program)
//
// A denied-at-check exec comes back as EPERM; one that the supervisor's
// verification catches after the check is SIGKILLed (killed); ran_denied
// counts the attempts where the denied program/argv really ran. Lines that
// show a denied run are echoed to stdout as the program printed them.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

// ctl is shared by the driver and every process it forks.
struct ctl {
	volatile int started; // the racer is running
	volatile pid_t peer;  // clonevm: the peer's pid, for the driver to kill
};

static struct ctl *ctl;
static const char *mode, *prog, *allowed = "status", *denied = "push";
static const char *amark, *dmark, *other_link;
static char amark_buf[64], dmark_buf[64];
static int steady;
static uint64_t va, vd;

// word holds argv[1] in private memory (thread, clonevm, procmem); for
// shared mode argv[1] lives in a memfd page instead. One aligned 8-byte
// store changes it atomically, so no reader ever sees a torn mix.
static union {
	char s[8];
	uint64_t u;
} word __attribute__((aligned(64)));
static volatile uint64_t *shm;

static uint64_t pack(const char *s) {
	union {
		char s[8];
		uint64_t u;
	} v = {0};
	if (strlen(s) > 7) {
		fprintf(stderr, "flip: %s: longer than 7 bytes\n", s);
		exit(2);
	}
	memcpy(v.s, s, strlen(s));
	return v.u;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned rnd(void) {
	static unsigned x;
	if (!x)
		x = (unsigned)getpid() * 2654435761u ^ (unsigned)(now() * 1e9);
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static void spin(unsigned n) {
	for (volatile unsigned i = 0; i < n; i++)
		;
}

// flipLoop alternates *w between the allowed and the denied value (or keeps
// writing the allowed one when steady) until the deadline. Racers are killed
// by the driver long before; the deadline only bounds a lost racer.
static void flipLoop(volatile uint64_t *w) {
	uint64_t b = steady ? va : vd;
	double deadline = now() + 5;
	ctl->started = 1;
	for (unsigned i = 1;; i++) {
		// Hold each value about as long as the other: back-to-back stores
		// leave the second in place nearly all the time on some CPUs, and
		// the race then never sees the allowed value.
		__atomic_store_n(w, va, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 64; j++)
			;
		__atomic_store_n(w, b, __ATOMIC_RELAXED);
		for (volatile int j = 0; j < 64; j++)
			;
		if ((i & 0xffff) == 0 && now() > deadline)
			return;
	}
}

static void waitStarted(void) {
	double deadline = now() + 5;
	while (!ctl->started && now() < deadline)
		;
	spin(rnd() % 20000); // a random phase against the racer
}

// doExec execs prog with argv1 and reports a failure on stdout (the pipe).
static void doExec(char *argv1) {
	const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
	char *argv[] = {(char *)base, argv1, NULL};
	execve(prog, argv, environ);
	int e = errno;
	printf("execve: %s\n", strerror(e));
	fflush(stdout);
	_exit(e == EPERM ? 126 : 127);
}

static void *threadRacer(void *arg) {
	(void)arg;
	flipLoop(&word.u);
	return NULL;
}

static int cloneRacer(void *arg) {
	(void)arg;
	ctl->peer = (pid_t)syscall(SYS_getpid);
	flipLoop(&word.u);
	return 0;
}

// attempt runs in the forked child whose stdout is the pipe: it starts its
// racer and execs.
static void attempt(void) {
	if (strcmp(mode, "thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, threadRacer, NULL) != 0)
			_exit(3);
		waitStarted();
		doExec(word.s);
	} else if (strcmp(mode, "clonevm") == 0) {
		size_t sz = 256 << 10;
		char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED)
			_exit(3);
		// CLONE_PARENT: the peer is the driver's child, so the driver
		// kills and reaps it. Without CLONE_THREAD it is a separate
		// process that shares this memory.
		// cordon's filter refuses a memory peer that is not a thread:
		// exit 4 says so (counted as racer_refused).
		if (clone(cloneRacer, stack + sz, CLONE_VM | CLONE_PARENT | SIGCHLD, NULL) < 0)
			_exit(errno == EPERM ? 4 : 3);
		waitStarted();
		doExec(word.s);
	} else if (strcmp(mode, "shared") == 0) {
		waitStarted();
		doExec((char *)shm);
	} else if (strcmp(mode, "procmem") == 0 || strcmp(mode, "pathswap") == 0 || strcmp(mode, "postexec") == 0) {
		waitStarted();
		doExec(word.s);
	} else if (strcmp(mode, "tracedmem") == 0) {
		// Traced by the racer: a supervisor that verifies execs with ptrace
		// cannot attach to this one.
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(3);
		waitStarted();
		doExec(word.s);
	}
	_exit(3);
}

// racerRefused counts attempts where the racer could not get at the memory
// (opening /proc/PID/mem failed): the sandbox refused the racer itself.
static int racerRefused;

// waitRacer is waitpid(WNOHANG) for a child the racer may be tracing: a
// ptrace stop (the exec's SIGTRAP) detaches and keeps waiting.
static int waitRacer(pid_t pid, int *status) {
	if (waitpid(pid, status, WNOHANG) != pid)
		return 0;
	if (!WIFSTOPPED(*status))
		return 1;
	int sig = WSTOPSIG(*status);
	ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)(sig == SIGTRAP || sig == SIGSTOP ? 0 : sig));
	return 0;
}

// memRacer writes argv[1] of the exec'ing child through /proc/PID/mem until
// the child is gone, and returns its wait status.
static int memRacer(pid_t pid) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int mem = open(path, O_RDWR | O_CLOEXEC);
	if (mem < 0)
		racerRefused++;
	ctl->started = 1;
	uint64_t b = steady ? va : vd;
	int status = 0;
	for (unsigned k = 0;; k++) {
		if (mem >= 0) {
			pwrite(mem, &va, 8, (off_t)(uintptr_t)&word.u);
			pwrite(mem, &b, 8, (off_t)(uintptr_t)&word.u);
		}
		if ((k & 7) == 0 && waitRacer(pid, &status))
			break;
	}
	if (mem >= 0)
		close(mem);
	return status;
}

// procStat returns field n (1-based, as in proc(5)) of /proc/PID/stat, or
// "" when it cannot be read.
static const char *procStat(pid_t pid, int n, char *buf, size_t size) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "";
	ssize_t len = read(fd, buf, size - 1);
	close(fd);
	if (len <= 0)
		return "";
	buf[len] = 0;
	char *f = strrchr(buf, ')'); // comm may hold spaces and parentheses
	if (!f)
		return "";
	f += 2; // field 3
	for (int i = 3; i < n && f; i++) {
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	if (!f)
		return "";
	f[strcspn(f, " ")] = 0;
	return f;
}

// postExecRacer waits until the child runs the new program and no tracer
// holds it stopped (state 't'), then rewrites argv[1] in the NEW image
// through /proc/PID/mem before the program's main reads it: a check of argv
// at PTRACE_EVENT_EXEC is over by then.
static int postExecRacer(pid_t pid) {
	char self[4096], exe[4096], path[64], buf[2048];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = 0;
	snprintf(path, sizeof path, "/proc/%d/exe", pid);
	ctl->started = 1;
	int status = 0;
	for (unsigned k = 0;; k++) {
		if (waitRacer(pid, &status))
			return status;
		n = readlink(path, exe, sizeof exe - 1);
		if (n <= 0)
			continue;
		exe[n] = 0;
		if (strcmp(exe, self) == 0)
			continue; // not exec'd yet
		if (strcmp(procStat(pid, 3, buf, sizeof buf), "t") == 0)
			continue; // stopped by a tracer
		break;
	}
	unsigned long argStart = strtoul(procStat(pid, 48, buf, sizeof buf), NULL, 10);
	const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int mem = open(path, O_RDWR | O_CLOEXEC);
	if (mem < 0)
		racerRefused++;
	for (;;) {
		if (mem >= 0 && argStart)
			pwrite(mem, denied, strlen(denied) + 1, (off_t)(argStart + strlen(base) + 1));
		if (waitRacer(pid, &status))
			break;
	}
	if (mem >= 0)
		close(mem);
	return status;
}

struct counts {
	int ran_allowed, ran_denied, ran_torn, eperm, killed, other;
};

static void classify(struct counts *c, int status, const char *out) {
	if (strstr(out, dmark)) {
		c->ran_denied++;
		fputs(out, stdout); // the evidence, as the program printed it
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		c->killed++;
	} else if (strstr(out, amark) && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		c->ran_allowed++;
	} else if (strstr(out, " ran:") && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		// The kernel measures a string, then copies that many bytes: a
		// flip in between runs neither value ("statuSHELL=...").
		c->ran_torn++;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 126 && strncmp(out, "execve: ", 8) == 0) {
		c->eperm++;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 4 && strcmp(mode, "clonevm") == 0) {
		racerRefused++; // the peer could not be created, so nothing was exec'd
	} else {
		if (c->other < 5)
			printf("other: status=%#x out=%s\n", status, out);
		c->other++;
	}
}

static void reap(pid_t pid) {
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

// swapLoop exchanges the two links until killed.
static void swapLoop(void) {
	ctl->started = 1;
	double deadline = now() + 5;
	for (unsigned i = 1;; i++) {
		if (syscall(SYS_renameat2, AT_FDCWD, prog, AT_FDCWD, other_link, 2 /* RENAME_EXCHANGE */) < 0) {
			perror("renameat2");
			_exit(3);
		}
		if ((i & 0xff) == 0 && now() > deadline)
			_exit(0);
	}
}

static void race(int n, int quiet) {
	struct counts c = {0};
	if (strcmp(mode, "shared") == 0) {
		int fd = memfd_create("flip-argv", 0);
		if (fd < 0 || ftruncate(fd, 4096) < 0) {
			perror("memfd");
			exit(3);
		}
		shm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (shm == MAP_FAILED) {
			perror("mmap");
			exit(3);
		}
		*shm = va;
	}
	word.u = va;
	for (int i = 0; i < n; i++) {
		ctl->started = 0;
		ctl->peer = 0;
		pid_t racer = 0;
		if (strcmp(mode, "shared") == 0 || strcmp(mode, "pathswap") == 0) {
			racer = fork();
			if (racer == 0) {
				if (mode[0] == 's')
					flipLoop(shm);
				else
					swapLoop();
				_exit(0);
			}
		}
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			perror("pipe");
			exit(3);
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			exit(3);
		}
		if (pid == 0) {
			dup2(p[1], 1);
			attempt();
		}
		close(p[1]);
		int status = 0;
		if (strcmp(mode, "procmem") == 0 || strcmp(mode, "tracedmem") == 0) {
			status = memRacer(pid);
		} else if (strcmp(mode, "postexec") == 0) {
			status = postExecRacer(pid);
		} else {
			waitpid(pid, &status, 0);
		}
		reap(racer);
		reap(ctl->peer);
		char out[4096];
		size_t len = 0;
		ssize_t r;
		while (len < sizeof out - 1 && (r = read(p[0], out + len, sizeof out - 1 - len)) > 0)
			len += r;
		out[len] = 0;
		close(p[0]);
		classify(&c, status, out);
	}
	if (!quiet)
		printf("summary mode=%s steady=%d n=%d ran_allowed=%d ran_denied=%d ran_torn=%d eperm=%d killed=%d "
		       "other=%d racer_refused=%d\n",
		       mode, steady, n, c.ran_allowed, c.ran_denied, c.ran_torn, c.eperm, c.killed, c.other, racerRefused);
	fflush(stdout);
}

// killPending SIGKILLs execs while they wait for a decision: a big argv
// makes the supervisor's read take a while, and the kill lands at a random
// moment in it. Then it runs thread races and kills each whole race (its
// process group: the driver, the exec'ing child, the racer) mid-run.
static void killPending(int n) {
	enum { nargs = 3000 };
	static char filler[64];
	memset(filler, 'k', sizeof filler - 1);
	char **argv = calloc(nargs + 3, sizeof *argv);
	argv[0] = "git";
	argv[1] = (char *)allowed;
	for (int i = 2; i < nargs + 2; i++)
		argv[i] = filler;
	int killed = 0, finished = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);
			dup2(devnull, 1);
			execve(prog, argv, environ);
			_exit(126);
		}
		struct timespec d = {0, (long)(rnd() % 6000) * 1000};
		nanosleep(&d, NULL);
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		if (WIFSIGNALED(status))
			killed++;
		else
			finished++;
	}
	int races = 0;
	mode = "thread";
	for (int i = 0; i < 5; i++) {
		pid_t g = fork();
		if (g == 0) {
			setpgid(0, 0);
			int devnull = open("/dev/null", O_WRONLY);
			dup2(devnull, 1);
			race(1000000, 1);
			_exit(0);
		}
		setpgid(g, g);
		struct timespec d = {0, (long)(50 + rnd() % 100) * 1000000};
		nanosleep(&d, NULL);
		kill(-g, SIGKILL);
		waitpid(g, NULL, 0);
		races++;
	}
	printf("summary mode=killpend n=%d killed=%d finished=%d races_killed=%d\n", n, killed, finished, races);
	fflush(stdout);
}

int main(int argc, char **argv) {
	int n = 100, opt;
	while ((opt = getopt(argc, argv, "m:n:p:a:d:A:D:x:s")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'p': prog = optarg; break;
		case 'a': allowed = optarg; break;
		case 'd': denied = optarg; break;
		case 'A': amark = optarg; break;
		case 'D': dmark = optarg; break;
		case 'x': other_link = optarg; break;
		case 's': steady = 1; break;
		default: return 2;
		}
	}
	if (!mode || !prog) {
		fprintf(stderr, "usage: flip -m MODE -n N -p PROG [-a WORD -d WORD] [-A MARK -D MARK] [-x LINK] [-s]\n");
		return 2;
	}
	if (!amark) {
		snprintf(amark_buf, sizeof amark_buf, "ran: %s\n", allowed);
		amark = amark_buf;
	}
	if (!dmark) {
		snprintf(dmark_buf, sizeof dmark_buf, "ran: %s\n", denied);
		dmark = dmark_buf;
	}
	va = pack(allowed);
	vd = pack(denied);
	if (strcmp(mode, "pathswap") == 0 && !other_link) {
		fprintf(stderr, "flip: pathswap needs -x\n");
		return 2;
	}
	ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED) {
		perror("mmap");
		return 3;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "killpend") == 0)
		killPending(n);
	else
		race(n, 0);
	return 0;
}
