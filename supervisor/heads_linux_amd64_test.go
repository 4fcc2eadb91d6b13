package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// headsRig is a supervisor whose check has already taken a #! script for a
// program (a stale notScripts entry: as if the script had been rewritten
// with its FileID unchanged since the check read its head), and the script,
// whose interpreter (bash) the policy denies. If the script's interpreter
// runs, it creates marker.
type headsRig struct {
	r              *running
	c              *child
	script, marker string
}

// newHeadsRig starts the rig's supervisor; before, when given, runs first
// (test hooks are package variables: set before the supervisor's
// goroutine starts, reset after it stopped).
func newHeadsRig(t *testing.T, before ...func(*headsRig)) *headsRig {
	t.Helper()
	requireSeccompNotify(t)
	dir := t.TempDir()
	h := &headsRig{script: filepath.Join(dir, "script"), marker: filepath.Join(dir, "ran")}
	require.NoError(t, os.WriteFile(h.script, []byte("#!/bin/bash\n: > "+h.marker+"\n"), 0o755))
	pol, err := policy.Compile(policy.Config{
		Default: policy.Allow,
		Rules:   []policy.Rule{{Decision: policy.Deny, Pattern: "bash", Source: "test"}},
	})
	require.NoError(t, err)
	c, fd := startExecClient(t)
	h.c = c
	h.r = &running{runErr: make(chan error, 1)}
	s, err := New(fd, pol, Options{OnDecision: func(d *Verdict) {
		h.r.mu.Lock()
		h.r.decisions = append(h.r.decisions, *d)
		h.r.mu.Unlock()
	}})
	if err != nil {
		unix.Close(fd)
		t.Fatalf("New: %v", err)
	}
	h.r.s = s
	require.NotNil(t, s.judge.heads, "the check skips heads while a tracer verifies")
	pfd, err := unix.Open(h.script, unix.O_PATH|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	id, _, err := fstatID(pfd)
	unix.Close(pfd)
	require.NoError(t, err)
	s.judge.heads.add(id) // stale: before Run, on this goroutine
	for _, f := range before {
		f(h)
	}
	go func() { h.r.runErr <- s.Run() }()
	t.Cleanup(func() {
		s.Shutdown()
		_ = h.r.stopped(t, 5*time.Second)
		_ = s.Close()
	})
	return h
}

func (h *headsRig) ran() bool {
	_, err := os.Stat(h.marker)
	return err == nil
}

// TestNotScriptsStaleEntryIsKilledAtTheEvent: the check takes the script
// for a program by a stale notScripts entry and lets it run as one; the
// kernel maps the script's interpreter, which the exec event sees is not
// the file checked, and kills it before it runs. (Let tracer.verify keep
// whatever decideImage says and bash runs the script: the event is what
// makes the entry harmless.)
func TestNotScriptsStaleEntryIsKilledAtTheEvent(t *testing.T) {
	h := newHeadsRig(t)
	res := run(t, h.c, h.script)
	if assert.NotNil(t, res.Exit, "the exec itself succeeds (the check allowed it)") {
		assert.Equal(t, -1, *res.Exit, "killed at the exec event")
	}
	assert.False(t, h.ran(), "the denied interpreter ran the script")
	var checked, killed bool
	for _, d := range h.r.all() {
		if d.Exec.Path == h.script && d.Errno == 0 {
			checked = true
			assert.True(t, d.skipped, "the check used the stale entry")
		}
		if d.Reason == ReasonChanged {
			killed = true
		}
	}
	assert.True(t, checked, "no allowed check of the script: the stale entry was not used")
	assert.True(t, killed, "no kill reported at the exec event")
}

// TestNotScriptsNeedTheEvent: when the tracer cannot attach, no exec event
// will check a skipped head, so the exec is decided again with its head
// read: the script is a script, its interpreter denied. The path is made to
// pass strict mode's read-only proof (a test fake, as in rootproof's "no
// attach"), so without the second decision the script would run.
func TestNotScriptsNeedTheEvent(t *testing.T) {
	h := newHeadsRig(t, func(h *headsRig) {
		testHookChecked = func(s *Supervisor, d *Verdict) {
			s.immutables.paths = map[string]bool{h.script: true}
		}
		testHookNoAttach = func(d *Verdict) bool { return argv0(d.Exec.Argv) == h.script }
		t.Cleanup(func() { testHookChecked, testHookNoAttach = nil, nil })
	})
	res := run(t, h.c, "/bin/sh", "-c", "exec "+h.script)
	if assert.NotNil(t, res.Exit, "the shell ran") {
		assert.NotEqual(t, 0, *res.Exit, "the script ran")
	}
	assert.False(t, h.ran(), "the denied interpreter ran the script")
	var found bool
	for _, d := range h.r.all() {
		if d.Exec.Path != h.script {
			continue
		}
		found = true
		assert.Equal(t, unix.EPERM, d.Errno)
		assert.Equal(t, []string{"/bin/bash"}, d.Interpreter, "decided as a script")
		if assert.NotNil(t, d.Result.Rule) {
			assert.Equal(t, "bash", d.Result.Rule.Pattern)
		}
	}
	assert.True(t, found, "no decision for the script")
}

// TestNotScriptsSkipsTheHeadOfAProgramSeen: the second check of the same
// program skips its head; a script's head is always read.
func TestNotScriptsSkipsTheHeadOfAProgramSeen(t *testing.T) {
	h := newHeadsRig(t)
	for i := 0; i < 2; i++ {
		assertExit(t, 0, run(t, h.c, "/bin/true"), "/bin/true")
		assert.Equal(t, i == 1, h.r.last(t).skipped, "run %d", i)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/bash\n: > "+h.marker+"\n"), 0o755))
	for i := 0; i < 2; i++ {
		assertErrno(t, unix.EPERM, run(t, h.c, other), "a script of a denied interpreter")
		d := h.r.last(t)
		assert.False(t, d.skipped, "run %d", i)
		assert.Equal(t, []string{"/bin/bash"}, d.Interpreter)
	}
	assert.False(t, h.ran())
}

// TestNotScriptsOnlyWithATracer: strict mode has no exec event to check a
// skipped head or a remembered name, so its check never skips a head and
// never remembers a name (pathNames).
func TestNotScriptsOnlyWithATracer(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // New owns it; never polled
	require.NoError(t, err)
	s, err := New(fd, denyFalse(t), Options{Verify: VerifyStrict})
	require.NoError(t, err)
	defer s.Close()
	assert.Nil(t, s.judge.heads)
	assert.Nil(t, s.judge.names)
}
