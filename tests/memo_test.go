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
