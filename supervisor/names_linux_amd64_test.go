package supervisor

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// namesRig is a program in a directory the test renames between ok/ and
// bad/ (the program keeps its FileID: only the directory changes), a
// policy that denies everything under bad/ by path, and a symlink, link,
// the test points at the program's current name. The program is a copy of
// touch: when it runs, it creates the file named by its argument.
type namesRig struct {
	r               *running
	c               *child
	dir, link       string
	okProg, badProg string
	badPattern      string
	markers         int
	noAttach        atomic.Bool // TestPathNamesNeedTheEvent's hook
	// fixed makes every name count as one the sandbox cannot change (see
	// newNamesRig): the rig's directory is the test's, which it can.
	fixed bool
}

// newNamesRig starts the rig's supervisor with the program at at (okProg
// or badProg, by their base directory's name: "ok" or "bad"). before, when
// given, runs first (test hooks are package variables: set before the
// supervisor's goroutine starts, reset after it stopped).
func newNamesRig(t *testing.T, at string, before ...func(*namesRig)) *namesRig {
	t.Helper()
	requireSeccompNotify(t)
	dir := t.TempDir()
	h := &namesRig{dir: dir, link: filepath.Join(dir, "link"),
		okProg: filepath.Join(dir, "ok", "prog"), badProg: filepath.Join(dir, "bad", "prog")}
	prog := filepath.Join(dir, at, "prog")
	require.NoError(t, os.Mkdir(filepath.Dir(prog), 0o755))
	touch, err := os.Open("/usr/bin/touch")
	require.NoError(t, err)
	defer touch.Close()
	out, err := os.OpenFile(prog, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, touch)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	h.point(t, prog)
	h.badPattern = filepath.Dir(h.badProg) + "/*"
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Deny, Pattern: h.badPattern, Source: "test"}},
	})
	require.NoError(t, err)
	for _, f := range before {
		f(h)
	}
	c, fd := startExecClient(t)
	h.c = c
	h.r = startSupervisor(t, fd, pol, Options{}, func(s *Supervisor) {
		require.NotNil(t, s.judge.names, "the check remembers names while a tracer verifies")
		if h.fixed {
			// A test fake: every name counts as one the sandbox cannot
			// change, as if the program's directory were on a read-only
			// mount and the host had renamed it.
			s.judge.names.held = func(int) func(int) bool { return func(int) bool { return true } }
		}
	})
	t.Cleanup(func() {
		h.r.s.Shutdown()
		_ = h.r.stopped(t, 5e9)
		_ = h.r.s.Close()
	})
	return h
}

// point makes the rig's link lead to target.
func (h *namesRig) point(t *testing.T, target string) {
	t.Helper()
	tmp := h.link + ".new"
	require.NoError(t, os.Symlink(target, tmp))
	require.NoError(t, os.Rename(tmp, h.link))
}

// move renames the program's directory so that the program is at prog now
// (okProg or badProg), and points the link there. The program's own inode
// is untouched: its FileID (ctime included) stays what it was.
func (h *namesRig) move(t *testing.T, prog string) {
	t.Helper()
	from := h.okProg
	if prog == h.okProg {
		from = h.badProg
	}
	before := fileID(t, from)
	require.NoError(t, os.Rename(filepath.Dir(from), filepath.Dir(prog)))
	require.Equal(t, before, fileID(t, prog), "renaming the directory changed the program's FileID")
	h.point(t, prog)
}

// warm runs the link twice through ok/: the second check takes what the
// first remembered.
func (h *namesRig) warm(t *testing.T) {
	t.Helper()
	for i := 0; i < 2; i++ {
		res, ran := h.runLink(t)
		assertExit(t, 0, res, "through ok/")
		assert.True(t, ran)
	}
}

// assertKilled asserts that an exec the check allowed was killed at its
// exec event before it ran (why says what ran otherwise).
func (h *namesRig) assertKilled(t *testing.T, res execResult, ran bool, why string) {
	t.Helper()
	assert.False(t, ran, why)
	if assert.NotNil(t, res.Exit, "the exec itself succeeds (the check allowed the remembered file)") {
		assert.Equal(t, -1, *res.Exit, "killed at the exec event")
	}
}

// assertKillReported asserts that the exec event reported a kill by the
// rig's rule, of resolved (any name when empty).
func (h *namesRig) assertKillReported(t *testing.T, resolved string) {
	t.Helper()
	var killed bool
	for _, d := range h.r.all() {
		if d.Reason != ReasonChanged {
			continue
		}
		killed = true
		if resolved != "" {
			assert.Equal(t, resolved, d.Exec.Resolved, "the name the event decided")
		}
		if assert.NotNil(t, d.Result.Rule, "the kill names no rule") {
			assert.Equal(t, h.badPattern, d.Result.Rule.Pattern)
		}
	}
	assert.True(t, killed, "no kill reported at the exec event")
}

func fileID(t *testing.T, path string) policy.FileID {
	t.Helper()
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	id, _, err := fstatID(fd)
	require.NoError(t, err)
	return id
}

// runLink runs the link with a fresh marker and reports the result and
// whether the program ran (the marker exists).
func (h *namesRig) runLink(t *testing.T) (execResult, bool) {
	t.Helper()
	h.markers++
	marker := filepath.Join(h.dir, "ran"+string(rune('0'+h.markers)))
	res := run(t, h.c, h.link, marker)
	_, err := os.Stat(marker)
	return res, err == nil
}

// checks returns the check's decisions of the link (not the exec event's
// reports).
func (h *namesRig) checks() []Verdict {
	var out []Verdict
	for _, d := range h.r.all() {
		if d.Exec.Path == h.link && d.Reason != ReasonChanged {
			out = append(out, d)
		}
	}
	return out
}

// TestPathNamesStaleEntryIsKilledAtTheEvent: the link led to ok/prog, and
// now leads to bad/prog, the same file (its directory renamed: the same
// FileID), a name taken for one the sandbox cannot change (a test fake: as
// if the host had renamed a directory on a read-only mount). The
// check finds the same file at the same path and takes its remembered name,
// ok/prog, which the policy allows; the exec event renders the name of the
// file the kernel mapped, bad/prog, which it denies, and kills the process
// before it runs. (Let tracer.unchanged ignore the name and the program
// runs: the event is what makes the entry harmless.)
func TestPathNamesStaleEntryIsKilledAtTheEvent(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) { h.fixed = true })
	for i := 0; i < 2; i++ {
		// The first check renders the name, the second reuses it (and
		// proves it one the sandbox cannot change).
		res, ran := h.runLink(t)
		assertExit(t, 0, res, "through ok/")
		assert.True(t, ran, "the allowed program did not run")
		d := h.r.last(t)
		assert.Equal(t, h.okProg, d.Exec.Resolved)
		assert.Equal(t, i == 1, d.skipped, "run %d", i)
	}

	h.move(t, h.badProg)
	res, ran := h.runLink(t)
	assert.False(t, ran, "the program ran under a name the policy denies")
	if assert.NotNil(t, res.Exit, "the exec itself succeeds (the check allowed it)") {
		assert.Equal(t, -1, *res.Exit, "killed at the exec event")
	}
	checks := h.checks()
	require.Len(t, checks, 3)
	stale := checks[2]
	assert.True(t, stale.skipped, "the check did not use the remembered name")
	assert.Equal(t, h.okProg, stale.Exec.Resolved, "the check's name")
	assert.Zero(t, stale.Errno, "the check allowed it")
	h.assertKillReported(t, h.badProg)
}

// TestPathNamesRefusalRendersTheName: a remembered name the policy denies is
// rendered again before anything is refused, so a stale one never refuses
// what the file's name now allows, and a refusal names the file as it is.
func TestPathNamesRefusalRendersTheName(t *testing.T) {
	h := newNamesRig(t, "bad", func(h *namesRig) { h.fixed = true })
	for i := 0; i < 2; i++ {
		// The second check takes the remembered name (and proves it),
		// refuses by it, and so renders it again first.
		res, ran := h.runLink(t)
		assertErrno(t, unix.EPERM, res, "through bad/")
		assert.False(t, ran)
		d := h.r.last(t)
		assert.Equal(t, h.badProg, d.Exec.Resolved)
		assert.False(t, d.skipped, "a refusal stands on a remembered name")
	}
	h.move(t, h.okProg)
	res, ran := h.runLink(t)
	assertExit(t, 0, res, "through ok/, with bad/ remembered")
	assert.True(t, ran)
	d := h.r.last(t)
	assert.Equal(t, h.okProg, d.Exec.Resolved)
	assert.False(t, d.skipped, "the allow stands on a stale name")
}

// TestPathNamesNeedTheEvent: when the tracer cannot attach, no exec event
// will check a remembered name, so the exec is decided again with its name
// rendered: bad/prog, denied. The link is made to pass strict mode's
// read-only proof (a test fake, as in TestNotScriptsNeedTheEvent), so
// without the second decision the program would run.
func TestPathNamesNeedTheEvent(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) {
		h.fixed = true
		testHookChecked = func(s *Supervisor, d *Verdict) {
			s.immutables.paths = map[string]bool{h.link: true}
		}
		testHookNoAttach = func(d *Verdict) bool { return h.noAttach.Load() && argv0(d.Exec.Argv) == h.link }
		t.Cleanup(func() { testHookChecked, testHookNoAttach = nil, nil })
	})
	for i := 0; i < 2; i++ {
		// The second check takes the remembered name, and proves it.
		res, ran := h.runLink(t)
		assertExit(t, 0, res, "through ok/")
		assert.True(t, ran)
		assert.Equal(t, i == 1, h.r.last(t).skipped, "run %d", i)
	}

	h.move(t, h.badProg)
	h.noAttach.Store(true)
	res, ran := h.runLink(t)
	assertErrno(t, unix.EPERM, res, "through bad/, no exec event")
	assert.False(t, ran, "the program ran under a name the policy denies")
	d := h.r.last(t)
	assert.Equal(t, h.badProg, d.Exec.Resolved)
	if assert.NotNil(t, d.Result.Rule) {
		assert.Equal(t, h.badPattern, d.Result.Rule.Pattern)
	}
}

// TestPathNamesNotForNamesTheSandboxCanChange: the red team's race. The
// link led to ok/prog (allowed); the workload renames the directory to
// bad/ (denied) and runs the link again, then renames it back to ok/
// between the kernel's open and the exec event. Had the check taken the
// remembered name ok/prog, the event would render ok/prog as well and let
// the check stand: a program run under a name it had at neither moment.
// The rig's directory is one the workload can rename, so its names are
// never remembered: the check renders bad/prog and refuses.
func TestPathNamesNotForNamesTheSandboxCanChange(t *testing.T) {
	var renameBack atomic.Bool
	h := newNamesRig(t, "ok", func(h *namesRig) {
		testHookEvent = func(int) {
			if renameBack.CompareAndSwap(true, false) {
				_ = os.Rename(filepath.Dir(h.badProg), filepath.Dir(h.okProg))
			}
		}
		t.Cleanup(func() { testHookEvent = nil })
	})
	for i := 0; i < 2; i++ {
		res, ran := h.runLink(t)
		assertExit(t, 0, res, "through ok/")
		assert.True(t, ran)
	}
	h.move(t, h.badProg)
	renameBack.Store(true)
	res, ran := h.runLink(t)
	assert.False(t, ran, "the program ran under a name the policy denies")
	assertErrno(t, unix.EPERM, res, "through bad/")
	d := h.r.last(t)
	assert.False(t, d.skipped, "the check took a name the workload can change from memory")
	assert.Equal(t, h.badProg, d.Exec.Resolved)
	if assert.NotNil(t, d.Result.Rule) {
		assert.Equal(t, h.badPattern, d.Result.Rule.Pattern)
	}
}

// TestPathNamesTargetReplacedIsKilledAtTheEvent: a path whose file the
// check remembers is not opened again (judge.open), so a file put in its
// place since (as the host can do under a read-only bind: here the link,
// taken for one the sandbox cannot change, is pointed at another file) is
// decided at the check as the file remembered, the allowed ok/prog, and the
// exec event sees the file the kernel mapped, a different one the policy
// denies by its path, and kills the process before it runs. (Let
// tracer.unchanged ignore the FileID and the replacement runs.)
func TestPathNamesTargetReplacedIsKilledAtTheEvent(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) { h.fixed = true })
	okID := fileID(t, h.okProg)
	h.warm(t)
	other := filepath.Join(h.dir, "bad", "prog")
	require.NoError(t, os.Mkdir(filepath.Dir(other), 0o755))
	copyFile(t, h.okProg, other)
	require.NotEqual(t, okID, fileID(t, other))
	h.point(t, other)

	res, ran := h.runLink(t)
	h.assertKilled(t, res, ran, "the replacement ran")
	checks := h.checks()
	require.Len(t, checks, 3)
	stale := checks[2]
	assert.Equal(t, okID, stale.Exec.File, "the check opened the path instead of taking the remembered file")
	assert.Equal(t, h.okProg, stale.Exec.Resolved)
	h.assertKillReported(t, other)

	// The event made the check forget the path: it opens it now.
	res, ran = h.runLink(t)
	assert.False(t, ran, "the replacement ran the second time")
	assertErrno(t, unix.EPERM, res, "the entry was not forgotten: refused at the check")
	assert.Equal(t, fileID(t, other), h.r.last(t).Exec.File)
}

// TestPathNamesTargetReplacedAndAllowedRuns: a file put at a remembered
// path that the policy allows runs (decided at the exec event, where the
// check's record does not say what ran: a record of its own), and the
// next check opens the path: no exec is refused for a program the host
// replaced, and none is decided twice from then on.
func TestPathNamesTargetReplacedAndAllowedRuns(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) { h.fixed = true })
	okID := fileID(t, h.okProg)
	h.warm(t)
	other := filepath.Join(h.dir, "ok", "prog2")
	copyFile(t, h.okProg, other)
	h.point(t, other)
	res, ran := h.runLink(t)
	assertExit(t, 0, res, "the replacement, allowed")
	assert.True(t, ran)
	checks := h.checks()
	require.Len(t, checks, 3)
	assert.Equal(t, okID, checks[2].Exec.File, "the check opened the path instead of taking the remembered file")
	var record *Verdict
	for _, d := range h.r.all() {
		if d.Reason == ReasonRedecided {
			record = &d
		}
	}
	if assert.NotNil(t, record, "no record of what ran") {
		assert.Equal(t, other, record.Exec.Resolved)
		assert.Equal(t, fileID(t, other), record.Exec.File)
	}
	res, ran = h.runLink(t)
	assertExit(t, 0, res, "again")
	assert.True(t, ran)
	assert.Equal(t, fileID(t, other), h.r.last(t).Exec.File, "the entry was not forgotten")
}

// TestPathNamesTargetOnlyWhereNothingCanChangeIt: the file is taken from
// memory only when the path called and the name lead where they did
// whatever the sandbox does. The rig's directory is the test's (writable),
// so without the fake every exec opens the path, and a file put in its
// place is refused at the check.
func TestPathNamesTargetOnlyWhereNothingCanChangeIt(t *testing.T) {
	h := newNamesRig(t, "ok")
	h.warm(t)
	other := filepath.Join(h.dir, "bad", "prog")
	require.NoError(t, os.Mkdir(filepath.Dir(other), 0o755))
	copyFile(t, h.okProg, other)
	h.point(t, other)
	res, ran := h.runLink(t)
	assert.False(t, ran)
	assertErrno(t, unix.EPERM, res, "refused at the check")
	assert.Equal(t, fileID(t, other), h.r.last(t).Exec.File)
}

// TestPathNamesTargetIsAScriptNow: the path now leads to a #! script the
// policy denies by its path, whose interpreter is the very file the check
// remembers (so the image the kernel maps is that file, with the kernel's
// argv for a script). The check decides the remembered program and allows
// it; the exec event decides what ran as if no check had seen it, the
// script behind the interpreter included, and kills it. (Decide only the
// image there and the denied script runs through its interpreter.) The
// next check opens the path and refuses the script.
func TestPathNamesTargetIsAScriptNow(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) { h.fixed = true })
	okID := fileID(t, h.okProg)
	h.warm(t)
	script := filepath.Join(h.dir, "bad", "script")
	require.NoError(t, os.Mkdir(filepath.Dir(script), 0o755))
	require.NoError(t, os.WriteFile(script, []byte("#!"+h.okProg+"\n"), 0o755))
	h.point(t, script)

	res, ran := h.runLink(t)
	h.assertKilled(t, res, ran, "the denied script ran through its interpreter")
	checks := h.checks()
	require.Len(t, checks, 3)
	assert.Equal(t, okID, checks[2].Exec.File, "the check opened the path instead of taking the remembered file")
	h.assertKillReported(t, script)

	res, ran = h.runLink(t)
	assert.False(t, ran)
	assertErrno(t, unix.EPERM, res, "the entry was not forgotten: refused at the check")
	assert.Equal(t, script, h.r.last(t).Exec.Resolved)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o755))
}

// TestPathNamesOtherNameIsRecorded: the path now leads to the same file
// (its FileID unchanged) under another name the policy allows as well: it
// runs, and since the check's record names the file as it remembered it,
// the exec event reports one naming it as it ran.
func TestPathNamesOtherNameIsRecorded(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) { h.fixed = true })
	h.warm(t)
	id := fileID(t, h.okProg)
	other := filepath.Join(h.dir, "ok2", "prog")
	require.NoError(t, os.Rename(filepath.Dir(h.okProg), filepath.Dir(other)))
	require.Equal(t, id, fileID(t, other))
	h.point(t, other)
	res, ran := h.runLink(t)
	assertExit(t, 0, res, "through ok2/")
	assert.True(t, ran)
	checks := h.checks()
	require.Len(t, checks, 3)
	assert.Equal(t, h.okProg, checks[2].Exec.Resolved, "the check's name (remembered)")
	var record *Verdict
	for _, d := range h.r.all() {
		if d.Reason == ReasonRedecided {
			record = &d
		}
	}
	if assert.NotNil(t, record, "no record of the name that ran") {
		assert.Equal(t, other, record.Exec.Resolved)
	}
}

// TestPathNamesTargetIsANestedScriptNow: as TestPathNamesTargetIsAScriptNow,
// with the script denied by its path run through an allowed script whose
// interpreter is the file remembered: the kernel's argv names the allowed
// script first. The exec event makes the check the check skipped (the
// path opened, every interpreter followed), so the denied script is
// decided as itself and killed.
func TestPathNamesTargetIsANestedScriptNow(t *testing.T) {
	h := newNamesRig(t, "ok", func(h *namesRig) { h.fixed = true })
	h.warm(t)
	inner := filepath.Join(h.dir, "ok", "inner")
	require.NoError(t, os.WriteFile(inner, []byte("#!"+h.okProg+"\n"), 0o755))
	outer := filepath.Join(h.dir, "bad", "outer")
	require.NoError(t, os.Mkdir(filepath.Dir(outer), 0o755))
	require.NoError(t, os.WriteFile(outer, []byte("#!"+inner+"\n"), 0o755))
	h.point(t, outer)

	res, ran := h.runLink(t)
	h.assertKilled(t, res, ran, "the denied script ran through an allowed one")
	h.assertKillReported(t, "")
}
