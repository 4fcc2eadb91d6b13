package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAdvRememberedNameGoneStale: the check remembers the canonical name of
// the file a path led to, and takes it again when the same path leads to
// the same file (device, inode, size, mtime, ctime). Renaming a directory
// on the way changes the file's name and none of that: the program at
// ok/prog, allowed, is moved to bad/prog, denied by path, and run through
// the same symlink. The check's remembered name says ok/prog; the exec
// event renders the name of what the kernel mapped, bad/prog, and kills it
// before it runs. With the event's name comparison left out, it runs.
func TestAdvRememberedNameGoneStale(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	script := `
mkdir ok && cp /usr/bin/touch ok/prog && ln -s "$PWD/ok/prog" link
./link first; echo "first $?"
before=$(stat -c %Z ok/prog)
mv ok bad && ln -sfn "$PWD/bad/prog" link
[ "$(stat -c %Z bad/prog)" = "$before" ] && echo "ctime unchanged"
./link second; echo "second $?"
[ -e second ] && echo "second ran" || echo "second did not run"
`
	r := runCordon(t, runOpts{dir: dir}, "--deny", dir+"/bad/*", "--", "sh", "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "first 0\n", r.stderr)
	assert.Contains(t, r.stdout, "second did not run\n", "the program ran under a denied name: %s\n%s", r.stdout, r.stderr)
	if strings.Contains(r.stdout, "ctime unchanged") {
		// The check took the remembered name; the event killed what ran.
		assert.Contains(t, r.stdout, "second 137\n", r.stderr)
		assert.Contains(t, r.stderr, "changed after check", r.stderr)
	} else {
		t.Logf("moving the directory gave the program a new ctime (the check rendered its name): %s", r.stdout)
		assert.Contains(t, r.stdout, "second 126\n", r.stderr)
	}
	assert.Equal(t, 1, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
	assert.Contains(t, r.stderr, dir+"/bad/*", "the denial names the rule: %s", r.stderr)
}
