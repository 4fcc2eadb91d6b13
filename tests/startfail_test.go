package tests

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startBound is how long a sandbox that cannot start may take to say so.
// Every run below is bounded by it, so a hang fails the test.
const startBound = 20 * time.Second

// assertSetupFailed checks a sandbox start that failed: exit 125, the
// expected message, nothing of cordon's plumbing, within the bound.
func assertSetupFailed(t *testing.T, r result, want, hint string) {
	t.Helper()
	assert.Equal(t, 125, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "cordon: sandbox setup failed: "+want)
	assert.Contains(t, r.stderr, hint)
	for _, leak := range []string{"broken pipe", "write unix", "fork/exec", "control channel"} {
		assert.NotContains(t, r.stderr, leak)
	}
}

// A session's sandbox that fails to start fails the command with
// bubblewrap's message, like "cordon run" does, instead of hanging: the
// session path used to keep the child's end of the control socket open,
// so no EOF arrived.
func TestSandboxStartFailureIsReported(t *testing.T) {
	requireSeccompNotify(t)
	const missing = "/nonexistent/cordon-start-test"
	bwrapMsg := "bwrap: Can't find source path " + missing
	hint := missing + " does not exist: create it, or leave it out of the sandbox's binds"
	bounded := runOpts{timeout: startBound}

	t.Run("run", func(t *testing.T) {
		r := runCordon(t, bounded, "run", "--rw", missing, "--", "true")
		assertSetupFailed(t, r, bwrapMsg, hint)
	})
	t.Run("exec --no-daemon", func(t *testing.T) {
		r := runCordon(t, bounded, "exec", "--no-daemon", "--rw", missing, "--", "true")
		assertSetupFailed(t, r, bwrapMsg, hint)
		requireNoLeftovers(t)
	})
	t.Run("nested exec --no-daemon: no namespace", func(t *testing.T) {
		// Inside cordon, bubblewrap cannot create namespaces: a host
		// failure, so cordon doctor is the advice.
		r := runCordon(t, bounded, "--", cordonBin, "exec", "--no-daemon", "--isolation", "bwrap", "--", "true")
		assertSetupFailed(t, r, "bwrap:", "run 'cordon doctor' to check this host")
	})

	d := newDaemonEnv(t)
	dOpts := runOpts{timeout: startBound}
	t.Run("session create", func(t *testing.T) {
		r := d.cordonOpts(dOpts, "session", "create", "--rw", missing)
		assertSetupFailed(t, r, bwrapMsg, hint)
		assert.Empty(t, r.stdout, "no session id")
	})
	t.Run("exec through the daemon", func(t *testing.T) {
		r := d.cordonOpts(dOpts, "exec", "--rw", missing, "--", "true")
		assertSetupFailed(t, r, bwrapMsg, hint)
	})
	disc := d.discovery()
	t.Run("POST /v1/sessions", func(t *testing.T) {
		for _, tc := range []struct {
			name, body, want string
		}{
			{"missing bind", `{"rw":["` + missing + `"]}`, "sandbox setup failed: " + bwrapMsg},
			// The working directory is checked before bubblewrap starts:
			// the kernel would blame bubblewrap's exec for its chdir.
			{"missing working directory", `{"dir":"` + missing + `"}`,
				"sandbox setup failed: working directory " + missing + ": no such file or directory; create it"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := time.Now()
				body, status := d.curl(disc, "-X", "POST", "-d", tc.body, "/v1/sessions")
				assert.Less(t, time.Since(start), startBound)
				assert.Equal(t, 500, status, body)
				var e struct{ Code, Message string }
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Equal(t, "setup_failed", e.Code)
				assert.Contains(t, e.Message, tc.want)
				assert.NotContains(t, e.Message, "fork/exec")
			})
		}
	})
	r := d.cordon("session", "ls")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "s-", "no failed session is listed")
}
