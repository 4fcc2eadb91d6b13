//go:build linux

package runner

// The session init starts every process through a monitor of its own (the
// "shim"): a fork of the init that never executes anything. The shim is a
// child subreaper (PR_SET_CHILD_SUBREAPER): whatever the process's
// descendants do (setsid, double fork, nohup), an orphan re-parents to the
// nearest subreaper above it, which is the shim, never the init. So the
// process's tree is exactly the shim's descendants, for as long as any of
// them lives, and the shim exits when the last one is reaped.
//
// Go cannot fork without exec, and the shim must not exec: every exec in
// the sandbox is a policy decision, and cordon's own plumbing must not show
// up as one. So the fork is done in C. Between fork and _exit/execve the
// child runs only async-signal-safe system calls: it is a copy of one thread
// of a Go process, and nothing of the Go runtime may run in it. All signals
// are blocked across the fork, so no Go signal handler can run in the child
// before its dispositions are reset.
//
// Layout of a process:
//
//	init (subreaper) --clone(CLONE_PIDFD)--> shim (subreaper, all signals blocked)
//	                                          --clone(CLONE_PIDFD)--> leader: setsid, chdir, execve
//	                                                                    descendants...
//
// The shim reports on a SOCK_SEQPACKET socket: the leader's pid with a pidfd
// for it, the outcome of execve (an O_CLOEXEC pipe: EOF means it
// succeeded), the leader's wait status; it exits when it has no child left.
//
// A one-shot run's command is started by cordon_exec: no shim (the init
// reaps it), a clone whose parent waits for the child's execve (CLONE_VFORK),
// sharing the init's memory except in the bare tiers (see cordon_exec). It is
// C, not syscall.ForkExec, for the one step Go offers no hook for. The leader
// and the one-shot command end alike (exec_prepared): working directory,
// open-file limit, dumpable flag, scope layer, signal mask, execve.
//
// The scope layer (every tier but none, Landlock ABI 6+) is a Landlock
// ruleset that handles no access and scopes signals only, applied in the
// child right before execve. The command's domain is then nested under the
// forking init thread's: the init may signal the command, and the command
// (and everything it starts) may not signal the init, a session's shim or
// bubblewrap's pid 1: it cannot stop the process that ends its tree.

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>
#include <linux/sched.h>

enum {
	SHIM_FORKED = 1, // pid: the leader; SCM_RIGHTS: its pidfd
	SHIM_EXEC = 2,   // stage, err: 0 when execve succeeded
	SHIM_EXITED = 3, // status: the leader's wait status
};

enum {
	STAGE_SPAWN = 1,
	STAGE_CHDIR = 2,
	STAGE_EXEC = 3,
	STAGE_SCOPE = 4,
};

struct cordon_shim_msg {
	int32_t kind, pid, stage, err, status;
};

struct cordon_spawn {
	const char *path;
	char *const *argv;
	char *const *envp;
	const char *dir;
	const int *src;    // descriptors in the init...
	const int *dst;    // ...and their numbers in the leader
	int n;
	int report;        // the shim's end of the report socket
	int dumpable;      // make the leader dumpable before execve (no bwrap)
	int scope;         // a Landlock ruleset to restrict the leader with before execve, or -1
};

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

// The soft RLIMIT_NOFILE the init was started with, saved before the Go
// runtime raises it to the hard limit (a C constructor runs first):
// syscall.ForkExec gives a child the original back, and so do the leader
// and the one-shot command, or they would start with the raised limit.
static struct rlimit nofile;
static int nofile_saved;

__attribute__((constructor)) static void save_nofile(void) {
	nofile_saved = getrlimit(RLIMIT_NOFILE, &nofile) == 0;
}

static void restore_nofile(void) {
	if (nofile_saved)
		setrlimit(RLIMIT_NOFILE, &nofile);
}

// Raw clone with fork semantics (no new stack: the child runs on a copy of
// this one) that also returns a pidfd for the child (Linux 5.2). glibc's
// fork() would run atfork handlers, which are not ours to run in a copy of
// a Go process. x86-64 order: flags, newsp, parent_tid, child_tid, tls.
static pid_t clone_pidfd(int *pidfd) {
	return (pid_t)syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, pidfd, 0, 0);
}

static void shim_send(int fd, int32_t kind, int32_t pid, int32_t stage, int32_t err, int32_t status, int pass) {
	struct cordon_shim_msg m = {kind, pid, stage, err, status};
	struct iovec iov = {&m, sizeof m};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr h;
	memset(&h, 0, sizeof h);
	h.msg_iov = &iov;
	h.msg_iovlen = 1;
	if (pass >= 0) {
		memset(&u, 0, sizeof u);
		h.msg_control = u.buf;
		h.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass, sizeof(int));
	}
	while (sendmsg(fd, &h, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

// The outcome of a child's start travels on a close-on-exec pipe: EOF when
// execve succeeded, else {stage, errno} (fail_start, then _exit).
static void fail_start(int fd, int32_t stage, int32_t err) __attribute__((noreturn));
static void fail_start(int fd, int32_t stage, int32_t err) {
	int32_t r[2] = {stage, err};
	while (write(fd, r, sizeof r) < 0 && errno == EINTR)
		;
	_exit(127);
}

// read_start reads that outcome into r and returns how many bytes came
// (0: the child exec'd; sizeof(int32_t[2]): it failed).
static size_t read_start(int fd, int32_t r[2]) {
	size_t got = 0;
	while (got < 2 * sizeof(int32_t)) {
		ssize_t k = read(fd, (char *)r + got, 2 * sizeof(int32_t) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

// exec_prepared is how a started process ends, the leader and the one-shot
// command alike: it changes to dir (if any), gives back the open-file limit,
// makes itself dumpable (the bare tiers, for the supervisor's ptrace; on
// memory of its own, see cordon_exec), takes the scope layer (scope >= 0),
// sets the signal mask and execs. A failure goes to report (fail_start).
static void exec_prepared(const char *dir, int dumpable, int scope, const sigset_t *mask,
                          const char *path, char *const *argv, char *const *envp, int report) __attribute__((noreturn));
static void exec_prepared(const char *dir, int dumpable, int scope, const sigset_t *mask,
                          const char *path, char *const *argv, char *const *envp, int report) {
	if (dir != NULL && dir[0] != '\0' && chdir(dir) < 0)
		fail_start(report, STAGE_CHDIR, errno);
	restore_nofile();
	if (dumpable)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	// Last: nothing before the exec needs to signal cordon's processes.
	// The ruleset is close-on-exec.
	if (scope >= 0 && syscall(SYS_landlock_restrict_self, scope, 0) < 0)
		fail_start(report, STAGE_SCOPE, errno);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execve(path, argv, envp);
	fail_start(report, STAGE_EXEC, errno);
}

static void leader(const struct cordon_spawn *s, int report, int errfd, int scope) __attribute__((noreturn));
static void leader(const struct cordon_spawn *s, int report, int errfd, int scope) {
	close(report);
	// Its own session and process group: "kill 0" or a terminal-less
	// job-control shell inside reaches the process's own group, never the
	// shim's or the init's.
	setsid();
	// Without bubblewrap's user namespace a supervisor run by a normal
	// user has no CAP_SYS_PTRACE over the process: it can attach to
	// verify this exec only if the leader is dumpable. The leader holds
	// none of the init's descriptors (the shim closed them) but errfd, a
	// pipe to its shim. Every signal unblocked for the program.
	sigset_t none;
	sigemptyset(&none);
	exec_prepared(s->dir, s->dumpable, scope, &none, s->path, s->argv, s->envp, errfd);
}

static int is_dst(const struct cordon_spawn *s, int fd) {
	for (int i = 0; i < s->n; i++)
		if (s->dst[i] == fd)
			return 1;
	return 0;
}

static void shim(const struct cordon_spawn *s) __attribute__((noreturn));
static void shim(const struct cordon_spawn *s) {
	// Every signal is blocked (inherited from the forking thread). Reset
	// the Go runtime's handlers; the leader unblocks right before execve.
	// The shim keeps everything blocked for its whole life: it waits in
	// waitpid and only SIGKILL/SIGSTOP reach it.
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int i = 1; i < 65; i++)
		if (i != SIGKILL && i != SIGSTOP)
			sigaction(i, &dfl, NULL); // glibc refuses its two internal signals: harmless
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		shim_send(s->report, SHIM_EXEC, 0, STAGE_SPAWN, errno, 0, -1);
		_exit(1);
	}

	// Move the child's descriptors to their numbers and the report socket
	// just above them; close everything else the init had open.
	int top = 2;
	for (int i = 0; i < s->n; i++)
		if (s->dst[i] > top)
			top = s->dst[i];
	int rep = top + 1;
	int tmp[s->n > 0 ? s->n : 1];
	for (int i = 0; i < s->n; i++) {
		tmp[i] = fcntl(s->src[i], F_DUPFD_CLOEXEC, rep + 1);
		if (tmp[i] < 0) {
			shim_send(s->report, SHIM_EXEC, 0, STAGE_SPAWN, errno, 0, -1);
			_exit(1);
		}
	}
	// The scope ruleset, if any, goes just above the report socket; it is
	// moved out of the way first, as the descriptors are (its number may
	// be rep's).
	int scope = -1, stmp = -1;
	if (s->scope >= 0) {
		stmp = fcntl(s->scope, F_DUPFD_CLOEXEC, rep + 1);
		if (stmp < 0) {
			shim_send(s->report, SHIM_EXEC, 0, STAGE_SCOPE, errno, 0, -1);
			_exit(1);
		}
	}
	int r = fcntl(s->report, F_DUPFD_CLOEXEC, rep + 1);
	if (r < 0 || dup3(r, rep, O_CLOEXEC) < 0)
		_exit(1);
	for (int i = 0; i < s->n; i++) {
		if (dup2(tmp[i], s->dst[i]) < 0) {
			shim_send(rep, SHIM_EXEC, 0, STAGE_SPAWN, errno, 0, -1);
			_exit(1);
		}
	}
	if (stmp >= 0) {
		scope = rep + 1;
		if (stmp != scope && dup3(stmp, scope, O_CLOEXEC) < 0) {
			shim_send(rep, SHIM_EXEC, 0, STAGE_SCOPE, errno, 0, -1);
			_exit(1);
		}
	}
	for (int fd = 0; fd < rep; fd++)
		if (!is_dst(s, fd))
			close(fd);
	syscall(SYS_close_range, scope >= 0 ? scope + 1 : rep + 1, ~0U, 0);

	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		shim_send(rep, SHIM_EXEC, 0, STAGE_SPAWN, errno, 0, -1);
		_exit(1);
	}
	int lfd = -1;
	pid_t pid = clone_pidfd(&lfd);
	if (pid == 0)
		leader(s, rep, ep[1], scope);
	int cerr = errno;
	close(ep[1]);
	if (scope >= 0)
		close(scope);
	// The shim must not hold the process's pipes: EOF on them is how the
	// host sees that every writer is gone.
	for (int i = 0; i < s->n; i++)
		close(s->dst[i]);
	if (pid < 0) {
		shim_send(rep, SHIM_EXEC, 0, STAGE_SPAWN, cerr, 0, -1);
		_exit(1);
	}
	shim_send(rep, SHIM_FORKED, pid, 0, 0, 0, lfd);
	close(lfd);

	int32_t res[2] = {0, 0};
	size_t got = read_start(ep[0], res);
	close(ep[0]);
	if (got == sizeof res)
		shim_send(rep, SHIM_EXEC, pid, res[0], res[1], 0, -1);
	else
		shim_send(rep, SHIM_EXEC, pid, 0, 0, 0, -1);

	for (;;) {
		int st = 0;
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break; // ECHILD: the tree is empty
		}
		if (w == pid)
			shim_send(rep, SHIM_EXITED, pid, 0, 0, st, -1);
	}
	_exit(0);
}

// cordon_spawn starts a shim for s and returns its pid (and a pidfd for it
// in *shim_pidfd), or -errno.
static int cordon_spawn(const struct cordon_spawn *s, int *shim_pidfd) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int pfd = -1;
	pid_t pid = clone_pidfd(&pfd);
	if (pid == 0)
		shim(s);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -e;
	*shim_pidfd = pfd;
	return pid;
}

// A one-shot command: what cordon_exec needs.
struct cordon_exec {
	const char *path;
	char *const *argv;
	char *const *envp;
	const char *dir;   // "" or NULL: the init's
	int fds[3];        // become 0, 1 and 2 (each fds[i] == i or > 2)
	int dumpable;      // make the child dumpable before execve (no bwrap)
	int scope;         // a Landlock ruleset to restrict the child with before execve, or -1
	int report;        // the child's end of a close-on-exec pipe: {stage, errno} on failure
	sigset_t mask;     // the forking thread's signal mask, for the child to restore
	unsigned long long dfl; // bit N: signal N back to its default even if ignored (the init's survivedSignals)
	int stage, err;    // set by cordon_exec on failure
};

static int exec_child(void *arg) {
	const struct cordon_exec *e = arg;
	// A copy of one thread of a Go process, possibly sharing its memory:
	// only system calls from here on. Go's handlers are reset before any
	// signal is unblocked; an ignored signal stays ignored, as across
	// execve, but for those the init ignores only to survive its command's
	// process group (e->dfl).
	for (int i = 1; i < 65; i++) {
		struct sigaction old;
		if (i == SIGKILL || i == SIGSTOP || sigaction(i, NULL, &old) < 0)
			continue;
		int own = i < 64 && ((e->dfl >> i) & 1);
		if (own || (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL)) {
			struct sigaction dfl;
			memset(&dfl, 0, sizeof dfl);
			dfl.sa_handler = SIG_DFL;
			sigaction(i, &dfl, NULL);
		}
	}
	for (int i = 0; i < 3; i++) {
		if (e->fds[i] == i) {
			if (fcntl(i, F_SETFD, 0) < 0)
				fail_start(e->report, STAGE_SPAWN, errno);
		} else if (dup2(e->fds[i], i) < 0) {
			fail_start(e->report, STAGE_SPAWN, errno);
		}
	}
	exec_prepared(e->dir, e->dumpable, e->scope, &e->mask, e->path, e->argv, e->envp, e->report);
}

// above2 moves a descriptor of cordon_exec's own above the three the child
// places (the init's 0-2 are open, but a descriptor it gets must never be
// one of them).
static int above2(int fd) {
	if (fd < 0 || fd > 2)
		return fd;
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return moved;
}

// cordon_exec starts e's command as a child of the calling thread and
// returns its pid once it has exec'd, or -1 with e->stage and e->err set
// (the failed child reaped). The parent waits until the child's execve
// (CLONE_VFORK) either way. The child shares the init's memory (no copy of
// it) unless it must become dumpable: dumpability is a flag of the memory,
// so a child sharing it would make the init dumpable, and with it reachable
// by the command through /proc/INIT (its control socket). That child gets a
// copy instead, made only in the bare tiers.
static int cordon_exec(struct cordon_exec *e) {
	// The child runs on this (parked) thread's stack, below the frame, or
	// on its copy of it.
	char stack[32 << 10] __attribute__((aligned(16)));
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		e->stage = STAGE_SPAWN;
		e->err = errno;
		return -1;
	}
	p[0] = above2(p[0]);
	p[1] = above2(p[1]);
	if (p[0] < 0 || p[1] < 0) {
		e->stage = STAGE_SPAWN;
		e->err = errno;
		close(p[0]);
		close(p[1]);
		return -1;
	}
	e->report = p[1];
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &e->mask);
	int flags = CLONE_VFORK | SIGCHLD | (e->dumpable ? 0 : CLONE_VM);
	pid_t pid = clone(exec_child, stack + sizeof stack, flags, e);
	int cerr = errno;
	pthread_sigmask(SIG_SETMASK, &e->mask, NULL);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		e->stage = STAGE_SPAWN;
		e->err = cerr;
		return -1;
	}
	int32_t r[2];
	size_t got = read_start(p[0], r);
	close(p[0]);
	if (got == 0)
		return pid; // EOF: the child exec'd
	e->stage = got == sizeof r ? r[0] : STAGE_SPAWN;
	e->err = got == sizeof r ? r[1] : EIO;
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return -1;
}
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Shim message kinds and exec stages, as the C code sends them.
const (
	shimForked = C.SHIM_FORKED
	shimExec   = C.SHIM_EXEC
	shimExited = C.SHIM_EXITED

	stageSpawn = C.STAGE_SPAWN
	stageChdir = C.STAGE_CHDIR
	stageExec  = C.STAGE_EXEC
	stageScope = C.STAGE_SCOPE

	// shimMsgSize is sizeof(struct cordon_shim_msg): five int32s.
	shimMsgSize = C.sizeof_struct_cordon_shim_msg
)

// spawnSpec is what cSpawn needs to start a process.
type spawnSpec struct {
	path string
	argv []string
	env  []string
	dir  string
	// src[i] becomes descriptor dst[i] in the leader.
	src, dst []int
	// report is the shim's end of a SOCK_SEQPACKET socketpair.
	report int
	// dumpable makes the leader dumpable before execve (bare tiers).
	dumpable bool
	// scope, when >= 0, is the scope ruleset (scopeRuleset, and the top
	// of this file), applied in the leader before execve.
	scope int
}

// cSpawn forks a shim that runs sp (see the comment at the top of this
// file) and returns the shim's pid and a pidfd for it.
func cSpawn(sp *spawnSpec) (pid, pidfd int, err error) {
	cs := C.struct_cordon_spawn{n: C.int(len(sp.src)), report: C.int(sp.report), scope: C.int(sp.scope)}
	if sp.dumpable {
		cs.dumpable = 1
	}
	var m cmem
	defer m.free()
	cs.path = m.str(sp.path)
	cs.argv = m.vec(sp.argv)
	cs.envp = m.vec(sp.env)
	cs.dir = m.str(sp.dir)
	cs.src = m.ints(sp.src)
	cs.dst = m.ints(sp.dst)
	var pfd C.int
	r := C.cordon_spawn(&cs, &pfd)
	if r < 0 {
		return 0, -1, syscall.Errno(-r)
	}
	return int(r), int(pfd), nil
}

// execSpec is what cExec needs to start a one-shot command.
type execSpec struct {
	path string
	argv []string
	env  []string
	dir  string
	// fds become 0, 1 and 2 in the command; each is its own number or
	// above 2.
	fds [3]int
	// dumpable makes the child dumpable before execve (bare tiers).
	dumpable bool
	// scope, when >= 0, is the scope ruleset (scopeRuleset, and the top
	// of this file), applied in the child before execve.
	scope int
	// dfl has bit N set for each signal N the child sets back to its
	// default even when the init ignores it (survivedMask).
	dfl uint64
}

// execError is a failed cExec: the stage that failed and why.
type execError struct {
	stage int
	errno syscall.Errno
}

func (e *execError) Error() string {
	return fmt.Sprintf("%s: %v", stageOps[int32(e.stage)], e.errno)
}

// cExec starts sp's command as a child of the calling thread (see
// cordon_exec) and returns its pid once it has exec'd. A failure is an
// *execError.
func cExec(sp *execSpec) (int, error) {
	for i, fd := range sp.fds {
		if fd != i && fd <= 2 {
			return 0, fmt.Errorf("descriptor %d for %d: must be %d or above 2", fd, i, i)
		}
	}
	var m cmem
	defer m.free()
	// In C memory: the child writes its outcome there, and cgo forbids
	// Go memory that holds pointers to C.
	e := (*C.struct_cordon_exec)(m.alloc(C.size_t(unsafe.Sizeof(C.struct_cordon_exec{}))))
	*e = C.struct_cordon_exec{path: m.str(sp.path), argv: m.vec(sp.argv), envp: m.vec(sp.env),
		dir: m.str(sp.dir), scope: C.int(sp.scope), dfl: C.ulonglong(sp.dfl)}
	for i, fd := range sp.fds {
		e.fds[i] = C.int(fd)
	}
	if sp.dumpable {
		e.dumpable = 1
	}
	// As syscall.ForkExec does: no other goroutine opens a descriptor that
	// is not yet close-on-exec while the child copies the table.
	syscall.ForkLock.Lock()
	pid := C.cordon_exec(e)
	syscall.ForkLock.Unlock()
	if pid < 0 {
		return 0, &execError{stage: int(e.stage), errno: syscall.Errno(e.err)}
	}
	return int(pid), nil
}

// cmem allocates C memory for one call into C and frees all of it after.
type cmem struct{ frees []unsafe.Pointer }

func (m *cmem) alloc(size C.size_t) unsafe.Pointer {
	p := C.calloc(1, size)
	m.frees = append(m.frees, p)
	return p
}

func (m *cmem) free() {
	for _, p := range m.frees {
		C.free(p)
	}
}

func (m *cmem) str(s string) *C.char {
	p := C.CString(s)
	m.frees = append(m.frees, unsafe.Pointer(p))
	return p
}

// vec is a NULL-terminated array of C strings, in C memory: cgo forbids
// passing Go memory that holds Go pointers.
func (m *cmem) vec(ss []string) **C.char {
	arr := (*[1 << 28]*C.char)(m.alloc(C.size_t(len(ss)+1) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	for i, s := range ss {
		arr[i] = m.str(s)
	}
	return &arr[0]
}

func (m *cmem) ints(v []int) *C.int {
	arr := (*[1 << 20]C.int)(m.alloc(C.size_t(len(v)+1) * C.size_t(unsafe.Sizeof(C.int(0)))))
	for i, x := range v {
		arr[i] = C.int(x)
	}
	return &arr[0]
}
