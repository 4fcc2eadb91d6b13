package tests

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionAsksReachTheClient: an exec an ask rule covers, in a session
// made with --ask-timeout, waits on the session's stream until a client
// answers it; remember applies the answer to later asks; no answer
// denies.
func TestSessionAsksReachTheClient(t *testing.T) {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", "version: 1\nrules:\n  - ask: ls\n    message: listing needs a yes\n")
	r := d.cordonOpts(runOpts{dir: dir}, "session", "create", "--name", "asks", "--policy", "p.yaml", "--ask-timeout", "60s")
	require.Equal(t, 0, r.code, r.stderr)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watch := exec.CommandContext(ctx, cordonBin, "session", "asks", "asks", "--no-prompt")
	watch.Env = append(append(os.Environ(), raceEnv), d.env...)
	stdout, err := watch.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, watch.Start())
	defer func() {
		_ = watch.Process.Kill()
		_ = watch.Wait()
	}()
	asks := bufio.NewScanner(stdout)
	nextAsk := func() (id, line string) {
		t.Helper()
		require.True(t, asks.Scan(), "an ask line: %v", asks.Err())
		line = asks.Text()
		id, _, _ = strings.Cut(line, " ")
		require.True(t, strings.HasPrefix(id, "a-"), line)
		return id, line
	}
	execAsync := func(args ...string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			ch <- d.cordonOpts(runOpts{dir: dir}, append([]string{"exec", "--session", "asks", "--"}, args...)...)
		}()
		return ch
	}

	// Allowed by the client.
	done := execAsync("ls", "p.yaml")
	id, line := nextAsk()
	assert.Contains(t, line, `ls p.yaml (rule: ask "ls": listing needs a yes)`)
	r = d.cordon("session", "answer", "asks", id, "allow")
	require.Equal(t, 0, r.code, r.stderr)
	res := <-done
	assert.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "p.yaml\n", res.stdout)
	r = d.cordon("session", "answer", "asks", id, "allow")
	assert.Equal(t, 125, r.code, "an answered ask is not pending any more")
	assert.Contains(t, r.stderr, "not found")

	// Denied, and remembered for this argv.
	done = execAsync("ls", "-l")
	id, _ = nextAsk()
	require.Equal(t, 0, d.cordon("session", "answer", "asks", id, "deny", "--remember").code)
	res = <-done
	assert.Equal(t, 126, res.code)
	assert.Contains(t, res.stderr, `cordon: denied: ls -l (rule: ask "ls": listing needs a yes)`)
	res = d.cordonOpts(runOpts{dir: dir}, "exec", "--session", "asks", "--", "ls", "-l")
	assert.Equal(t, 126, res.code, "the remembered answer denies without a new ask")
	// Another argv is asked again (and the watcher sees it, not ls -l).
	done = execAsync("ls", "-a")
	id, line = nextAsk()
	assert.Contains(t, line, "ls -a")
	require.Equal(t, 0, d.cordon("session", "answer", "asks", id, "allow").code)
	assert.Equal(t, 0, (<-done).code)

	// Through the API: an unknown ask is 404.
	body, code := d.curl(d.discovery(), "-X", "POST", "-H", "Content-Type: application/json", "--data", `{"allow":true}`, "/v1/sessions/asks/asks/a-nope")
	assert.Equal(t, 404, code, body)
}

func TestSessionAskTimeoutDenies(t *testing.T) {
	d := newDaemonEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", "version: 1\nrules:\n  - ask: ls\n")
	r := d.cordonOpts(runOpts{dir: dir}, "session", "create", "--name", "t", "--policy", "p.yaml", "--ask-timeout", "500ms")
	require.Equal(t, 0, r.code, r.stderr)
	res := d.cordonOpts(runOpts{dir: dir}, "exec", "--session", "t", "--", "ls")
	assert.Equal(t, 126, res.code, "nobody answered: denied")
	assert.Contains(t, res.stderr, "cordon: denied: ls")
}
