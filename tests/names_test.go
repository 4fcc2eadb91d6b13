package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

// TestAdvRememberedFileReplacedByTheHost: on paths the sandbox cannot
// change (every directory, symlink and the file on read-only mounts), the
// check decides the file a path led to before without opening it again.
// The host can still change them: here it replaces a program the sandbox
// ran twice (a copy of true, in a directory under /var/tmp, read-only in
// the sandbox as part of its root) with a copy of rm, which --deny rm
// names by content. The exec event decides what the kernel mapped and
// kills it before it runs ("changed after check"; the check allowed the
// remembered true), and the next check opens the path again and refuses.
// Then the host puts a copy of true back: it runs, with no refusal.
func TestAdvRememberedFileReplacedByTheHost(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	tools, err := os.MkdirTemp("/var/tmp", "cordon-remembered-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tools) })
	tool := filepath.Join(tools, "tool")
	install := func(from string) {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(tool+".new", b, 0o755))
		require.NoError(t, os.Rename(tool+".new", tool))
	}
	install("/bin/true")
	// The host's side: each time the sandbox asks (a file "reqN"), the
	// next program is put in place and "doneN" made.
	swaps := []string{"/bin/rm", "/bin/true"}
	go func() {
		for i, from := range swaps {
			req := filepath.Join(dir, "req"+strconv.Itoa(i))
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(req); err == nil {
					break
				}
			}
			b, err := os.ReadFile(from)
			if err != nil {
				return
			}
			_ = os.WriteFile(tool+".new", b, 0o755)
			_ = os.Rename(tool+".new", tool)
			_ = os.WriteFile(filepath.Join(dir, "done"+strconv.Itoa(i)), nil, 0o644)
		}
	}()
	script := `
swap() { touch req$1; while [ ! -e done$1 ]; do sleep 0.01; done; }
T=` + tool + `
touch victim
$T; $T; echo "true $?"
swap 0
$T victim; echo "rm $?"
[ -e victim ] && echo "victim kept"
$T victim; echo "rm again $?"
[ -e victim ] && echo "victim kept again"
swap 1
$T victim; echo "true again $?"
`
	r := runCordon(t, runOpts{dir: dir}, "--deny", "rm", "--", "sh", "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "true 0\n", r.stderr)
	assert.Contains(t, r.stdout, "rm 137\n", "not killed at the exec event (the check opened the path?): %s", r.stderr)
	assert.Contains(t, r.stdout, "victim kept\n", "the replacement ran: %s", r.stderr)
	assert.Contains(t, r.stdout, "rm again 126\n", "the check still took the file it remembered: %s", r.stderr)
	assert.Contains(t, r.stdout, "victim kept again\n", r.stderr)
	assert.Contains(t, r.stdout, "true again 0\n", r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "changed after check"), r.stderr)
	assert.Equal(t, 2, strings.Count(r.stderr, "cordon: denied:"), r.stderr)
	assert.Contains(t, r.stderr, `rule: deny "rm"`, r.stderr)
}

// TestAdvRememberedFileThroughAnotherDirectory: the check may decide the
// file a path led to before without opening the path, when nothing in the
// sandbox can change where that path leads. A path relative to a
// directory descriptor or the working directory is not such a path: a
// second thread can point the descriptor at another directory between the
// check and the kernel's lookup. The red team of that change ran a denied
// script so (4 runs of 4, within 3-6 tries each): /usr/bin/true run once,
// then execveat(3, "true") with 3 switched from /usr/bin to a directory
// holding a script called true, which the kernel runs through /bin/sh as
// /dev/fd/3/true; the check took /usr/bin/true from memory, and the exec
// event, deciding what ran afresh, could not open /dev/fd/3/true to find
// the script behind the interpreter. Neither may happen: the check opens
// relative paths every time, and the event resolves /dev/fd/N/NAME through
// the caller's descriptor. The workload is testdata/adversarial/dirflip.c.
func TestAdvRememberedFileThroughAnotherDirectory(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	buildC(t, dir, "dirflip.c", "dirflip")
	script := `
mkdir -p d && printf '#!/bin/sh\ntouch ` + dir + `/ran\n' > d/true && chmod +x d/true
./dirflip /usr/bin ` + dir + `/d true 300 ` + dir + `/ran
`
	r := runCordon(t, runOpts{dir: dir, timeout: 3 * time.Minute}, "--deny", dir+"/d/*", "--", "sh", "-c", script)
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "dirflip: won 0 of 300\n", "the denied script ran: %s", lastLines(r.stderr, 5))
	assert.Contains(t, r.stderr, `rule: deny "`+dir+`/d/*"`, "the switch never landed: the test proves nothing")
}

// TestAdvContentRewrittenThroughAMapping: a writer outside the sandbox
// (here the test; a red team used a second cordon sandbox of the same
// user) rewrites a program through a shared writable mapping whose pages
// it had already written, so the FileID (size, mtime, ctime) stays what it
// was when cordon hashed the file for "a copy of rm is rm". The file is a
// copy of true padded to rm's size, on a device no mount of this sandbox
// can write (under /var/tmp, the sandbox working in /dev/shm), so its
// digest was cached; it becomes rm's bytes. The exec event must hash the
// image it runs: killed, the victim kept. (Decided from the cached digest
// it ran as true, and removed the victim.)
func TestAdvContentRewrittenThroughAMapping(t *testing.T) {
	requireSeccompNotify(t)
	dir, err := os.MkdirTemp("/dev/shm", "cordon-mapping-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	tools, err := os.MkdirTemp("/var/tmp", "cordon-mapping-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tools) })
	var a, b unix.Stat_t
	require.NoError(t, unix.Stat(dir, &a))
	require.NoError(t, unix.Stat(tools, &b))
	require.NotEqual(t, a.Dev, b.Dev, "/dev/shm and /var/tmp on one device: the sandbox could write the tool's")

	rm, err := os.ReadFile("/bin/rm")
	require.NoError(t, err)
	truth, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	require.Less(t, len(truth), len(rm))
	padded := append(truth, make([]byte, len(rm)-len(truth))...)
	tool := filepath.Join(tools, "tool")
	require.NoError(t, os.WriteFile(tool, padded, 0o755))
	f, err := os.OpenFile(tool, os.O_RDWR, 0)
	require.NoError(t, err)
	m, err := unix.Mmap(int(f.Fd()), 0, len(padded), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	copy(m, padded) // every page written now: the times move once, here
	var before unix.Stat_t
	require.NoError(t, unix.Stat(tool, &before))

	go func() {
		req := filepath.Join(dir, "req")
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(req); err == nil {
				break
			}
		}
		copy(m, rm) // no write fault: no new times
		_ = unix.Munmap(m)
		f.Close()
		_ = os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	}()
	script := `
T=` + tool + `
touch victim
$T; echo "mapped $?"
touch req; while [ ! -e done ]; do sleep 0.01; done
$T victim; echo "rm $?"
[ -e victim ] && echo "victim kept"
`
	r := runCordon(t, runOpts{dir: dir}, "--deny", "rm", "--", "sh", "-c", script)
	var after unix.Stat_t
	require.NoError(t, unix.Stat(tool, &after))
	require.Equal(t, before.Ctim, after.Ctim, "the rewrite moved the ctime: the test proves nothing")
	assert.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "mapped 126\n", "the first exec was expected to fail with ETXTBSY (a writer held the file): %s", r.stderr)
	if os.Getenv(tierEnv) == "landlock" {
		// The host's mounts are the sandbox's: /var/tmp's device is one it
		// can write, so the check hashes the file every time and refuses.
		assert.Contains(t, r.stdout, "rm 126\n", "not refused at the check: %s", r.stderr)
	} else {
		assert.Contains(t, r.stdout, "rm 137\n", "not killed at the exec event: %s", r.stderr)
	}
	assert.Contains(t, r.stdout, "victim kept\n", "rm's bytes ran: %s", r.stderr)
	assert.Contains(t, r.stderr, `rule: deny "rm"`, r.stderr)
}
