package supervisor

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

	"github.com/cordon-sandbox/cordon/policy"
)

// statExec is the Exec the supervisor makes for path (its whole FileID),
// made the judge's current target as judge.decide does (Digest reads the
// exec's own file through it).
func statExec(t *testing.T, j judge, path string, argv ...string) policy.Exec {
	t.Helper()
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	id, _, err := fstatID(fd)
	require.NoError(t, err)
	j.files.setCurrent(&target{fd: fd, id: id, path: path})
	return policy.Exec{Argv: argv, Path: path, Resolved: path, Known: true, File: id}
}

// memoJudge is a judge over the host's root with PATH dir and one rule,
// deny "prog push", counting the decisions its memo did not answer.
func memoJudge(t *testing.T, dir string) (judge, *int) {
	t.Helper()
	pol, err := policy.Compile(policy.Config{Default: policy.Allow,
		Rules: []policy.Rule{{Decision: policy.Deny, Pattern: "prog push"}}})
	require.NoError(t, err)
	j := newJudge(pol, newFiles(newSandboxView(0), dir))
	// The test's files are on a device the sandbox could not write (as
	// /usr often is): their digests are cached (files.Digest).
	v := j.files.sandbox
	v.init()
	require.NoError(t, v.err)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(os.TempDir(), &st))
	v.devState[st.Dev] = false
	misses := new(int)
	j.memo.onMiss = func() { *misses++ }
	return j, misses
}

// The memo answers the same exec again without the policy, and anything
// Decide reads that differs is another decision: the file replaced,
// rewritten in place with its mtime restored, renamed, reached as writable,
// other arguments. Each case would be decided wrongly from a stale entry:
// the copy of prog must be denied, the harmless file allowed. A decision
// that read a file's content is never remembered (recordingFiles.Digest).
func TestDecisionMemoCannotGoStale(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	progContent := []byte("#!/bin/sh\n# the program the rule names\n")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "prog"), progContent, 0o755))
	harmless := []byte("#!/bin/sh\n# something else, so long!!!\n")
	require.Len(t, harmless, len(progContent)) // same size: only the digest tells them apart
	x := filepath.Join(work, "x")
	require.NoError(t, os.WriteFile(x, harmless, 0o755))
	short := filepath.Join(work, "short")
	require.NoError(t, os.WriteFile(short, []byte("#!/bin/sh\n"), 0o755)) // another size: no content read

	j, misses := memoJudge(t, bin)
	decide := func(e policy.Exec) policy.Decision { r, _ := j.policyDecide(&e); return r.Decision }

	s := statExec(t, j, short, "short", "push")
	assert.Equal(t, policy.Allow, decide(s))
	assert.Equal(t, policy.Allow, decide(s))
	assert.Equal(t, 1, *misses, "the same exec again is answered by the memo")
	_, volatile := j.policyDecide(&s)
	assert.False(t, volatile)

	// Other arguments: another key.
	assert.Equal(t, policy.Allow, decide(statExec(t, j, short, "short", "pull")))
	assert.Equal(t, 2, *misses)

	// The same size as prog: its content decides, every time.
	e := statExec(t, j, x, "x", "push")
	before := *misses
	assert.Equal(t, policy.Allow, decide(e))
	assert.Equal(t, policy.Allow, decide(e))
	assert.Equal(t, before+2, *misses, "a decision that read content was remembered")
	_, volatile = j.policyDecide(&e)
	assert.True(t, volatile, "the exec event must decide it again (tracer.unchanged)")

	// Rewritten in place with prog's bytes, mtime set back: same inode,
	// size and mtime, but ctime moved, so the copy is recognised.
	old := e.File
	require.NoError(t, os.WriteFile(x, progContent, 0o755))
	require.NoError(t, os.Chtimes(x, time.Unix(0, old.MtimeNs), time.Unix(0, old.MtimeNs)))
	e2 := statExec(t, j, x, "x", "push")
	require.Equal(t, []any{old.Dev, old.Ino, old.Size, old.MtimeNs}, []any{e2.File.Dev, e2.File.Ino, e2.File.Size, e2.File.MtimeNs})
	require.NotEqual(t, old.CtimeNs, e2.File.CtimeNs)
	assert.Equal(t, policy.Deny, decide(e2), "a rewritten file must not get its old answer")

	// Replaced by a new file (new inode) at the same path: harmless again.
	require.NoError(t, os.Remove(x))
	require.NoError(t, os.WriteFile(x, harmless, 0o755))
	assert.Equal(t, policy.Allow, decide(statExec(t, j, x, "x", "push")))

	// Renamed: another Resolved, decided again (the same answer here).
	y := filepath.Join(work, "y")
	require.NoError(t, os.Rename(short, y))
	before = *misses
	assert.Equal(t, policy.Allow, decide(statExec(t, j, y, "y", "push")))
	assert.Equal(t, before+1, *misses)

	// Writable is part of the key (--deny-writable-exec reads it).
	w := statExec(t, j, y, "y", "push")
	w.Writable = true
	before = *misses
	decide(w)
	assert.Equal(t, before+1, *misses)

	// [""] and [] are different argv.
	before = *misses
	decide(statExec(t, j, y))
	decide(statExec(t, j, y, ""))
	assert.Equal(t, before+2, *misses)
}

// An entry lives no longer than the oldest Lookup answer its decision
// used, not lookupTTL from when it was made: a copy of prog installed on
// the PATH is recognised as soon as the answers that did not have it
// expire, as without the memo.
func TestDecisionMemoExpiresWithLookups(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	content := []byte("#!/bin/sh\n# prog\n")
	x := filepath.Join(work, "x")
	require.NoError(t, os.WriteFile(x, content, 0o755))
	j, misses := memoJudge(t, bin)
	// age moves time on by d: everything recorded so far (Lookup's answers
	// and listings, the memo's entries) becomes d older.
	age := func(d time.Duration) {
		j.files.mu.Lock()
		for k, v := range j.files.lookups {
			v.at = v.at.Add(-d)
			j.files.lookups[k] = v
		}
		for _, l := range j.files.lists {
			l.at = l.at.Add(-d)
		}
		j.files.mu.Unlock()
		for k, v := range j.memo.entries {
			v.expires = v.expires.Add(-d)
			j.memo.entries[k] = v
		}
	}
	// The answers are 20 s old when the decision is made.
	j.files.Lookup("prog")
	age(20 * time.Second)
	e := statExec(t, j, x, "x", "push")
	assert.Equal(t, policy.Allow, decisionOf(j, &e))

	// x becomes a renamed copy of prog (x itself unchanged).
	require.NoError(t, os.WriteFile(filepath.Join(bin, "prog"), content, 0o755))
	assert.Equal(t, policy.Allow, decisionOf(j, &e), "the answers without prog still hold")
	require.Equal(t, 1, *misses)

	// 11 s later the answers have expired, though the entry is 11 s old.
	age(11 * time.Second)
	assert.Equal(t, policy.Deny, decisionOf(j, &e), "an entry must not outlive its answers")
	assert.Equal(t, 2, *misses)
}

// Decisions that used what no snapshot answers are not remembered: the
// program a dynamic loader is asked to run is resolved from the caller's
// working directory.
func TestDecisionMemoSkipsResolve(t *testing.T) {
	j, misses := memoJudge(t, t.TempDir())
	rec := j.rec
	rec.start(time.Now())
	_, _ = rec.Resolve("./anything")
	_, ok := rec.stop()
	assert.False(t, ok, "a decision that resolved a path must not be remembered")

	// A Lookup that could not answer (nothing cached) is not remembered
	// either.
	rec.start(time.Now())
	rec.files.rootPid = 1 << 30 // no such process: Lookup has no answer
	assert.Nil(t, rec.Lookup("prog"))
	_, ok = rec.stop()
	assert.False(t, ok)
	assert.Zero(t, *misses)
}

func decisionOf(j judge, e *policy.Exec) policy.Decision {
	r, _ := j.policyDecide(e)
	return r.Decision
}

// A file with no path of its own gets none from statTarget: a memfd (its
// link text is a name its maker chose: "/memfd:x/../../usr/bin/true"),
// and a file whose path is longer than the kernel renders. The policy then
// decides it by identity alone (TestKnownFileWithoutPathHasNoName).
func TestStatTargetNoMadeUpPath(t *testing.T) {
	m, err := unix.MemfdCreate("x/../../usr/bin/true", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(m)
	_, err = unix.Write(m, []byte("\x7fELF"))
	require.NoError(t, err)
	require.NoError(t, unix.Fchmod(m, 0o755))
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(m), unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	tgt, errno := statTarget(os.Getpid(), fd)
	require.Zero(t, errno)
	defer unix.Close(tgt.fd)
	assert.Empty(t, tgt.path, "a memfd's name is no path")

	// A path of more than 4096 bytes: 20 directories of 250 characters.
	dir, err := unix.Open(t.TempDir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	name := strings.Repeat("d", 250)
	for range 20 {
		require.NoError(t, unix.Mkdirat(dir, name, 0o755))
		next, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		unix.Close(dir)
		dir = next
	}
	t.Cleanup(func() { unix.Close(dir) })
	w, err := unix.Openat(dir, "prog", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o755)
	require.NoError(t, err)
	unix.Close(w)
	fd, err = unix.Openat(dir, "prog", unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	tgt, errno = statTarget(os.Getpid(), fd)
	require.Zero(t, errno)
	defer unix.Close(tgt.fd)
	assert.Empty(t, tgt.path, "a path too long to render is no path")
}

// A file the check took from pathNames has no descriptor (judge.open):
// rules that compare it by content read it by its remembered name, so a
// copy of a program a rule names is recognised as with the file opened.
// (Digest through the descriptor alone found nothing to read, the copy
// was no longer that program, and "x push" ran.)
func TestDigestOfARememberedTarget(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	prog := []byte("#!/bin/sh\n# the program the rule names\n")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "prog"), prog, 0o755))
	x := filepath.Join(work, "x")
	require.NoError(t, os.WriteFile(x, prog, 0o755))
	j, _ := memoJudge(t, bin)
	// A device the sandbox can write: nothing is hashed once for all.
	e := statExec(t, j, x, "x", "push")
	j.files.sandbox.devState[e.File.Dev] = true
	j.files.setCurrent(&target{fd: -1, id: e.File, path: x, named: true})
	r, volatile := j.policyDecide(&e)
	assert.Equal(t, policy.Deny, r.Decision, "a copy of prog, remembered and not opened, was not recognised")
	assert.True(t, volatile)

	// Another file at the name than the one remembered: nothing is read
	// from it for the remembered one (the exec event decides what runs).
	require.NoError(t, os.Remove(x))
	require.NoError(t, os.WriteFile(x, []byte("#!/bin/sh\n# something else, so long!!!\n"), 0o755))
	_, ok := j.files.Digest(e.File)
	assert.False(t, ok, "hashed another file for the one remembered")
}

// A file rewritten through a shared writable mapping whose pages were
// already written keeps its FileID (no write fault, no new times): the
// check's cached digest, and any decision made from it, is of the old
// content. Such a decision is volatile (the exec event decides it again),
// and the event hashes the image itself, not the cache: a harmless file
// the check allowed with "push", turned into a copy of prog, is denied
// there. (A red team ran a denied program as ls so, from a second sandbox.)
func TestDigestAtTheEventIsTheImages(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	prog := []byte("#!/bin/sh\n# the program the rule names\n")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "prog"), prog, 0o755))
	harmless := []byte("#!/bin/sh\n# something else, so long!!!\n")
	require.Len(t, harmless, len(prog))
	x := filepath.Join(work, "x")
	require.NoError(t, os.WriteFile(x, harmless, 0o755))
	f, err := os.OpenFile(x, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, len(harmless), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	copy(m, harmless) // the write fault: times move now, not later
	time.Sleep(20 * time.Millisecond)

	j, _ := memoJudge(t, bin) // x's device counts as one the sandbox cannot write
	e := statExec(t, j, x, "x", "push")
	r, volatile := j.policyDecide(&e)
	require.Equal(t, policy.Allow, r.Decision)
	assert.True(t, volatile, "a decision that read content must be decided again at the exec event")

	copy(m, prog) // no fault: the same FileID
	require.Equal(t, e.File, statExec(t, j, x, "x", "push").File, "the rewrite moved the FileID: the test proves nothing")
	r, _ = j.policyDecide(&e)
	assert.Equal(t, policy.Allow, r.Decision, "the check's cache was expected to be stale (the test proves nothing)")

	// At the exec event the image is the target, mapped.
	fd, err := unix.Open(x, unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	j.files.setCurrent(&target{fd: fd, id: e.File, path: x, mapped: true})
	r, _ = j.policyDecide(&e)
	assert.Equal(t, policy.Deny, r.Decision, "the event decided from the cached digest, not the image's")
	j.files.setCurrent(nil)
	r, _ = j.policyDecide(&e)
	assert.Equal(t, policy.Deny, r.Decision, "the event's digest did not replace the stale one")
}
