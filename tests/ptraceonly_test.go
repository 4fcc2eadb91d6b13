package tests

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPtraceOnlyWhenListenerIsTaken runs cordon beneath another notify
// listener (testdata/holder.c, as another notify-based tool would be): the
// init's NEW_LISTENER fails with EBUSY, and cordon must supervise with
// ptrace only instead of failing or running unsupervised.
func TestPtraceOnlyWhenListenerIsTaken(t *testing.T) {
	requireSeccompNotify(t)
	gcc := requireTool(t, "gcc")
	dir := t.TempDir()
	holder := filepath.Join(dir, "holder")
	out, err := exec.Command(gcc, "-o", holder, "testdata/holder.c").CombinedOutput()
	require.NoError(t, err, "%s", out)
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
