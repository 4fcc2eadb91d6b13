package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDecisionMemoCannotGoStale runs the same program name with the same
// arguments again after changing the file under it, in one sandbox (one
// supervisor, whose decision memo remembers every answer): rewritten in
// place with git's bytes, rewritten at the same size with its mtime put
// back, renamed, replaced by a new file. Every change that makes the file
// git must be denied; a remembered answer for the old file would let git
// push run.
func TestDecisionMemoCannotGoStale(t *testing.T) {
	requireSeccompNotify(t)
	git := requireTool(t, "git")
	script := `set -u
G=` + git + `
cp /usr/bin/true x; ./x push && echo ran-1
./x push && echo ran-2
cat "$G" > x; ./x push && echo ran-3
# y: git with its last byte changed (same size), not git; then git's bytes again, mtime restored
python3 -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[-1]^=1; open("y","wb").write(b)' "$G"; chmod +x y
./y push >/dev/null 2>&1; echo y-first=$?
M=$(stat -c %y y); cat "$G" > y; touch -d "$M" y
[ "$(stat -c %s:%y y)" = "$(stat -c %s "$G"):$M" ] && echo same-size-and-mtime
./y push && echo ran-4
mv y z; ./z push && echo ran-5
cp /usr/bin/true w; ./w push && echo ran-6
cp --remove-destination "$G" w; ./w push && echo ran-7
exit 0`
	r := cordon(t, "--deny", "git push", "--", "bash", "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	for _, want := range []string{"ran-1", "ran-2", "ran-6", "same-size-and-mtime"} {
		assert.Contains(t, r.stdout, want+"\n")
	}
	for _, never := range []string{"ran-3", "ran-4", "ran-5", "ran-7"} {
		assert.NotContains(t, r.stdout, never+"\n", "a git push ran: %s", r.stderr)
	}
	assert.NotContains(t, r.stdout, "y-first=126", "the changed copy is not git and must not be denied")
	assert.Equal(t, 4, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}

// TestDecisionMemoSharedMappingRewrite rewrites an allowed program into
// git through a shared writable mapping whose pages were already written
// (stores then change the file with no new ctime), between two runs of
// the same name and arguments: the second must be recognised as git. A
// decision that read the content of a file the sandbox can write must not
// be remembered.
func TestDecisionMemoSharedMappingRewrite(t *testing.T) {
	requireSeccompNotify(t)
	git := requireTool(t, "git")
	requireTool(t, "python3")
	script := `
import mmap, os, subprocess, sys
g = open(sys.argv[1], "rb").read()
other = bytearray(g); other[-1] ^= 1          # git's size, not git
with open("x", "wb") as f: f.write(other)
os.chmod("x", 0o755)
fd = os.open("x", os.O_RDWR)
m = mmap.mmap(fd, len(g), mmap.MAP_SHARED)
m[:] = bytes(other)                           # every page written once: no more write faults
def run(tag):
    try:
        subprocess.run(["./x", "push"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(tag, "ran")
    except OSError as e:
        print(tag, e.errno)
    sys.stdout.flush()
run("first")                                  # decided (and ETXTBSY: mapped for writing)
c1 = os.stat("x").st_ctime_ns
m[-1] ^= 1                                    # now git, through the mapping
m.close(); os.close(fd)
print("ctime-unchanged", os.stat("x").st_ctime_ns == c1, "is-git", open("x", "rb").read() == g)
run("second")
`
	r := cordon(t, "--deny", "git push", "--", "python3", "-c", script, git)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "is-git True")
	if !strings.Contains(r.stdout, "ctime-unchanged True") {
		t.Logf("the kernel gave the file a new ctime (the memo's key alone would have caught it): %s", r.stdout)
	}
	assert.Contains(t, r.stdout, "second 1\n", "git push must be denied (EPERM): %s\n%s", r.stdout, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}
