// vforkpeer leaves a process sharing another's memory without being its
// parent, for memoryPeer's tests: P vforks C, C vforks D, D kills C (so P
// runs again, on D's memory) and is reparented away from P. It prints
// "D P\n" (both pids) and both wait until stdin closes.
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK (64 << 10)

static char *stacks;
static volatile int ready;
static volatile pid_t dpid;

static void wait_stdin(void) {
	char b;
	while (read(0, &b, 1) > 0)
		;
}

static int grandchild(void *arg) {
	(void)arg;
	pid_t c = getppid();
	kill(c, SIGKILL);
	while (getppid() == c)
		;
	dpid = getpid();
	ready = 1;
	wait_stdin();
	_exit(0);
}

static int child(void *arg) {
	(void)arg;
	clone(grandchild, stacks + 2 * STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	_exit(0);
}

int main(void) {
	stacks = mmap(NULL, 2 * STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stacks == MAP_FAILED)
		return 2;
	pid_t c = clone(child, stacks + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	if (c < 0)
		return 2;
	while (!ready)
		;
	printf("%d %d\n", (int)dpid, (int)getpid());
	fflush(stdout);
	wait_stdin();
	return 0;
}
