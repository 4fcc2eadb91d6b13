package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

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
// The workload is testdata/adversarial/renamerace.c.
func TestAdvRememberedNameGoneStale(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	buildC(t, dir, "renamerace.c", "race")
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
