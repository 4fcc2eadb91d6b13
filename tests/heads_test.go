package tests

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cordon-sandbox/cordon/internal/testcap"
)

// TestSkippedHeadRewrittenIntoAScript: the check reads a program's head
// once (no #! line) and, with the exec verified at its exec event, takes the
// same file (device, inode, size, mtime, ctime) for a program again without
// reading it. Here the file is then rewritten into a script of a denied
// interpreter through a shared writable mapping whose pages were already
// written (no new ctime), and run again: the check takes it for the program
// it was, the kernel runs bash on it, and the exec event must kill that
// (the image is not the file checked) before the script runs. With the
// event's verdict ignored, bash runs the script.
func TestSkippedHeadRewrittenIntoAScript(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "bash")
	// The interpreter itself, not a wrapper earlier on PATH (pyenv's shims
	// are bash scripts, which --deny bash refuses).
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testcap.SkipOrFail(t, "no %s on this host", python)
	}
	script := `
import mmap, os, subprocess, sys
E = open("/usr/bin/true", "rb").read()
S = b"#!/bin/bash\n: > ran\n#"
S += b"#" * (len(E) - len(S))                 # the program's size: a comment
with open("x", "wb") as f: f.write(E)
os.chmod("x", 0o755)
fd = os.open("x", os.O_RDWR)
m = mmap.mmap(fd, len(E), mmap.MAP_SHARED)
m[:] = E                                      # every page written once: no more write faults
def run(tag):
    try:
        r = subprocess.run(["./x"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(tag, "exit", r.returncode)
    except OSError as e:
        print(tag, "errno", e.errno)
    sys.stdout.flush()
run("first")                                  # checked (head read: no #!), then ETXTBSY
c1 = os.stat("x").st_ctime_ns
m[:] = S                                      # now a bash script, through the mapping
m.close(); os.close(fd)
print("ctime-unchanged", os.stat("x").st_ctime_ns == c1)
run("second")
print("script ran", os.path.exists("ran"))
`
	r := cordon(t, "--deny", "bash", "--", python, "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "first errno 26\n", "the first run fails ETXTBSY after its check: %s", r.stderr)
	assert.Contains(t, r.stdout, "script ran False\n", "bash ran the script: %s\n%s", r.stdout, r.stderr)
	if strings.Contains(r.stdout, "ctime-unchanged True") {
		// The check skipped the head: the event killed what ran.
		assert.Contains(t, r.stdout, "second exit -9\n", r.stderr)
		assert.Contains(t, r.stderr, "changed after check", r.stderr)
	} else {
		t.Logf("the kernel gave the file a new ctime (the check read its head again): %s", r.stdout)
		assert.Contains(t, r.stdout, "second errno 1\n", r.stderr)
	}
	assert.Equal(t, 1, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
}
