package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPtraceOnlyWhenListenerIsTaken runs cordon beneath another notify
// listener (testdata/holder.c, as another notify-based tool would be): the
// init's NEW_LISTENER fails with EBUSY, and cordon must supervise with
// ptrace only instead of failing or running unsupervised.
func TestPtraceOnlyWhenListenerIsTaken(t *testing.T) {
	dir := t.TempDir()
	holder := buildHolder(t, dir)
	fake := fakeProgram(t, "git")

	cmd := exec.Command(holder, cordonBin, "--debug", "--deny", "git push", "--", "sh", "-c",
		"git status; git push; echo rc=$?; bash -c 'git push origin main'; echo rc2=$?")
	cmd.Dir = fake
	cmd.Env = []string{"PATH=" + filepath.Join(fake, "bin") + ":/usr/bin:/bin", raceEnv}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())

	assert.Contains(t, stderr.String(), "supervising with ptrace only")
	assert.Contains(t, stderr.String(), "verification=ptrace-only")
	assert.Contains(t, stdout.String(), "git ran: status", "allowed execs run")
	assert.NotContains(t, stdout.String(), "git ran: push", "a denied program never runs")
	assert.Contains(t, stdout.String(), "rc=137", "it is killed at its exec event")
	assert.Contains(t, stdout.String(), "rc2=137", "also deeper in the tree (forks are followed)")
	assert.Contains(t, stderr.String(), `/bin/git push (rule: deny "git push"; ptrace-only supervision: killed at exec)`)
	requireNoLeftovers(t)
}

// TestPtraceOnlyReportsEveryDecision checks that, supervised with ptrace only,
// allowed execs and an ask answered yes are reported (audit log) as they are
// with a notify listener: before, only kills were, so an asked exec left no
// trace and the ask's context (a session's pending ask) was never closed.
func TestPtraceOnlyReportsEveryDecision(t *testing.T) {
	dir := t.TempDir()
	holder := buildHolder(t, dir)
	fake := fakeProgram(t, "git")
	audit := filepath.Join(dir, "audit.jsonl")
	pol := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("rules:\n  - ask: git push\n"), 0o644))

	cmd := exec.Command(holder, cordonBin, "--ask", "allow", "--audit", audit, "--policy", pol, "--",
		"sh", "-c", "git status; git push origin main")
	cmd.Dir = fake
	cmd.Env = []string{"PATH=" + filepath.Join(fake, "bin") + ":/usr/bin:/bin", raceEnv}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "git ran: push origin main", "the ask was answered yes")

	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	var asked, allowed bool
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Argv     []string `json:"argv"`
			Decision string   `json:"decision"`
			Rule     string   `json:"rule"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if len(rec.Argv) == 0 || filepath.Base(rec.Argv[0]) != "git" {
			continue // argv[0] is the script's path: the fake git is a #! script
		}
		switch strings.Join(rec.Argv[1:], " ") {
		case "push origin main":
			asked = rec.Decision == "ask" && strings.Contains(rec.Rule, `ask "git push"`)
		case "status":
			allowed = rec.Decision == "allow"
		}
	}
	assert.True(t, asked, "the asked exec is in the audit log:\n%s", b)
	assert.True(t, allowed, "an allowed exec is in the audit log:\n%s", b)
	requireNoLeftovers(t)
}

// buildHolder skips unless cordon and ptrace work here, then builds
// testdata/holder.c (a program that holds a notify listener, then runs its
// arguments) into dir.
func buildHolder(t *testing.T, dir string) string {
	t.Helper()
	requireSeccompNotify(t)
	testcap.RequirePtrace(t)
	gcc := requireTool(t, "gcc")
	holder := filepath.Join(dir, "holder")
	out, err := exec.Command(gcc, "-o", holder, "testdata/holder.c").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return holder
}

// TestPtraceOnlyScriptThroughADirectoryDescriptor: with ptrace only, no
// notification says an exec ran a #! script: the exec event recognises one
// from the kernel's argv for the interpreter, whose argument is the
// script's name. A script run by execveat relative to a directory
// descriptor is named /dev/fd/N/NAME there, a magic link cordon never
// follows: the script went unrecognised and only its interpreter was
// decided, so a script denied by its path ran. Its name is taken relative
// to the caller's descriptor now, and the script is denied.
func TestPtraceOnlyScriptThroughADirectoryDescriptor(t *testing.T) {
	dir := t.TempDir()
	holder := buildHolder(t, dir)
	execat := buildC(t, dir, "execat.c", "execat")
	scripts := filepath.Join(dir, "d")
	require.NoError(t, os.Mkdir(scripts, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(scripts, "s"), []byte("#!/bin/sh\necho script ran\n"), 0o755))

	cmd := exec.Command(holder, cordonBin, "--debug", "--deny", scripts+"/s", "--", "sh", "-c",
		execat+" dirfd-kept "+scripts+" s s; echo rc=$?; "+scripts+"/s; echo rc2=$?")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", raceEnv}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "verification=ptrace-only")
	assert.NotContains(t, stdout.String(), "script ran", "a denied script ran: %s", stderr.String())
	assert.Contains(t, stdout.String(), "rc=137", "not killed at its exec event")
	assert.Contains(t, stdout.String(), "rc2=137", "the script by its path")
	assert.Equal(t, 2, strings.Count(stderr.String(), `rule: deny "`+scripts+`/s"`), stderr.String())
	requireNoLeftovers(t)
}
