package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raceRename is a workload racing the exec event: it runs ./l/prog (l leads
// to the directory bad/, whose programs the policy denies by path) and, the
// moment the child's /proc/PID/exe shows the new image (the kernel has run
// the exec; cordon's exec event has not looked yet), renames bad/ to ok/,
// then back once the child is gone. It prints how many runs of the
// program exited 0: ran, under a name the policy denies at the exec.
const raceRename = `
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
	int rounds = atoi(argv[1]), ran = 0;
	char buf[4096], ex[64];
	for (int i = 0; i < rounds; i++) {
		pid_t c = fork();
		if (c == 0) { execl("./l/prog", "prog", (char *)0); _exit(99); }
		snprintf(ex, sizeof ex, "/proc/%d/exe", c);
		int renamed = 0;
		for (long k = 0; k < 50000000; k++) {
			ssize_t n = readlink(ex, buf, sizeof buf - 1);
			if (n < 0) break;
			buf[n] = 0;
			if (strstr(buf, "/bad/prog")) { rename("bad", "ok"); renamed = 1; break; }
		}
		int st;
		waitpid(c, &st, 0);
		if (renamed) rename("ok", "bad");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ran++;
	}
	printf("ran %d of %d\n", ran, rounds);
	return 0;
}
`

// TestAdvRememberedNameGoneStale: the check may take the canonical name of
// a file from memory when the same path leads to the same file (device,
// inode, size, mtime, ctime) as before. Renaming a directory on the way
// changes the name and none of that: the program at ok/prog, allowed, run
// twice through the symlink l (the second time by a remembered name, if
// names the workload can change were remembered), its directory renamed to
// bad/, denied by path, and run through the same symlink, first plainly,
// then racing: renamed back to ok/ between the kernel's open and the exec
// event, which then sees ok/prog too. A red team ran the program 8-22
// times in 100 so while the check remembered such names; cordon must
// render them every time: the check sees bad/prog and refuses.
func TestAdvRememberedNameGoneStale(t *testing.T) {
	requireSeccompNotify(t)
	gcc := requireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "race.c")
	require.NoError(t, os.WriteFile(src, []byte(raceRename), 0o644))
	out, err := exec.Command(gcc, "-O2", "-o", filepath.Join(dir, "race"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	script := `
mkdir ok && cp /usr/bin/true ok/prog && ln -s ok l
./l/prog; ./l/prog; echo "ok $?"
before=$(stat -c %Z ok/prog)
mv ok bad && ln -sfn bad l
[ "$(stat -c %Z bad/prog)" = "$before" ] && echo "ctime unchanged"
./l/prog; echo "bad $?"
./race 100
`
	r := runCordon(t, runOpts{dir: dir}, "--deny", dir+"/bad/*", "--", "sh", "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "ok 0\n", r.stderr)
	assert.Contains(t, r.stdout, "ctime unchanged\n", "the rename touched the program: the test proves nothing")
	assert.Contains(t, r.stdout, "bad 126\n", "not refused at the check: %s", r.stderr)
	assert.Contains(t, r.stdout, "ran 0 of 100\n", "the program ran under a denied name: %s", r.stdout)
	assert.Zero(t, strings.Count(r.stderr, "changed after check"), "the check took a stale name (killed at the exec event)")
	assert.GreaterOrEqual(t, strings.Count(r.stderr, "cordon: denied:"), 101, "one denial per refused run")
	assert.Contains(t, r.stderr, dir+"/bad/*", "the denial names the rule: %s", r.stderr)
}
