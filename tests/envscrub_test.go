package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// credentialEnv is what a developer's shell commonly holds: credentials the
// built-in scrub removes, the agent's own key it must keep, and ordinary
// variables.
var credentialEnv = []string{
	"GITHUB_TOKEN=ghp_secretvalue1",
	"AWS_SECRET_ACCESS_KEY=awssecretvalue2",
	"NPM_TOKEN=npmsecretvalue3",
	"SSH_AUTH_SOCK=/run/user/1/ssh-agent.sock",
	"ANTHROPIC_API_KEY=agentkey4",
	"MY_APP_TOKEN=apptoken5",
	"FOO=bar",
}

// envNames returns the names in an `env` listing.
func envNames(listing string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(listing, "\n") {
		if name, _, ok := strings.Cut(line, "="); ok {
			out[name] = true
		}
	}
	return out
}

// TestEnvScrubOneShot: the built-in credential names never reach a
// one-shot run's command; --env-pass keeps one, --env-deny patterns remove
// more, the policy file's env section does the same, --no-defaults drops
// the built-in names, and --debug names (never shows) what was removed.
func TestEnvScrubOneShot(t *testing.T) {
	requireSeccompNotify(t)
	tests := []struct {
		name     string
		args     []string
		policy   string // written to cordon.yaml and named with --policy
		gone     []string
		kept     []string
		noValues bool
	}{
		{name: "defaults", args: nil,
			gone: []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "SSH_AUTH_SOCK"},
			kept: []string{"ANTHROPIC_API_KEY", "MY_APP_TOKEN", "FOO"}},
		{name: "env-pass keeps one", args: []string{"--env-pass", "GITHUB_TOKEN"},
			gone: []string{"AWS_SECRET_ACCESS_KEY", "NPM_TOKEN"},
			kept: []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "FOO"}},
		{name: "env-deny pattern", args: []string{"--env-deny", "*_TOKEN", "--env-deny", "ANTHROPIC_*"},
			gone: []string{"GITHUB_TOKEN", "MY_APP_TOKEN", "ANTHROPIC_API_KEY"},
			kept: []string{"FOO"}},
		{name: "env-deny with env-pass", args: []string{"--env-deny", "*_TOKEN", "--env-pass", "MY_APP_TOKEN"},
			gone: []string{"GITHUB_TOKEN", "NPM_TOKEN"},
			kept: []string{"MY_APP_TOKEN", "FOO"}},
		{name: "policy file", policy: "env:\n  deny: [\"MY_*\", FOO]\n  pass: [NPM_TOKEN]\n",
			gone: []string{"MY_APP_TOKEN", "FOO", "GITHUB_TOKEN"},
			kept: []string{"NPM_TOKEN", "ANTHROPIC_API_KEY"}},
		{name: "no-defaults", args: []string{"--no-defaults"},
			kept: []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "FOO"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{}, tc.args...)
			if tc.policy != "" {
				p := filepath.Join(dir, "cordon.yaml")
				require.NoError(t, os.WriteFile(p, []byte(tc.policy), 0o644))
				args = append(args, "--policy", p)
			}
			r := runCordon(t, runOpts{dir: dir, env: credentialEnv}, append(args, "--", "env")...)
			require.Equal(t, 0, r.code, r.stderr)
			names := envNames(r.stdout)
			for _, n := range tc.gone {
				assert.False(t, names[n], "%s reached the sandbox", n)
			}
			for _, n := range tc.kept {
				assert.True(t, names[n], "%s was removed", n)
			}
			assert.Empty(t, r.stderr, "nothing is said about the scrub without --debug")
		})
	}

	t.Run("debug names what was removed, never the values", func(t *testing.T) {
		r := runCordon(t, runOpts{env: credentialEnv}, "--debug", "--", "true")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "environment scrubbed")
		for _, n := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "SSH_AUTH_SOCK"} {
			assert.Contains(t, r.stderr, n)
		}
		for _, v := range []string{"ghp_secretvalue1", "awssecretvalue2", "npmsecretvalue3"} {
			assert.NotContains(t, r.stderr, v, "a removed value was printed")
		}
	})

	t.Run("a bad pattern is a clear error", func(t *testing.T) {
		r := runCordon(t, runOpts{}, "--env-deny", "A=B", "--", "true")
		assert.Equal(t, 125, r.code)
		assert.Contains(t, r.stderr, "--env-deny")
		assert.Contains(t, r.stderr, "cannot hold '='")
	})

	t.Run("policy show lists the scrub", func(t *testing.T) {
		r := runCordon(t, runOpts{}, "policy", "show", "--env-deny", "MY_*", "--env-pass", "GH_TOKEN")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "AWS_SECRET_ACCESS_KEY")
		assert.Contains(t, r.stdout, "--env-deny  MY_*")
		assert.Contains(t, r.stdout, "--env-pass  GH_TOKEN")
		r = runCordon(t, runOpts{}, "policy", "show", "--no-defaults")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "environment: nothing removed")
	})
}

// TestEnvScrubDaemon: sessions and the daemon's throwaway sandboxes scrub
// the same way (the flags travel in the policy document), whatever
// environment the client or an exec passes, and a carried export cannot put
// a removed variable back.
func TestEnvScrubDaemon(t *testing.T) {
	d := newDaemonEnv(t)
	d.start()
	work := t.TempDir()
	in := func(args ...string) result {
		t.Helper()
		return d.cordonOpts(runOpts{dir: work, env: credentialEnv}, args...)
	}

	r := in("exec", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	names := envNames(r.stdout)
	assert.False(t, names["GITHUB_TOKEN"], "throwaway daemon sandbox: GITHUB_TOKEN reached it")
	assert.True(t, names["ANTHROPIC_API_KEY"])

	r = in("exec", "--env-pass", "GITHUB_TOKEN", "--env-deny", "FOO", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	names = envNames(r.stdout)
	assert.True(t, names["GITHUB_TOKEN"], "--env-pass is carried to the daemon")
	assert.False(t, names["FOO"], "--env-deny is carried to the daemon")

	r = in("session", "create", "--name", "scrub", "--carry", "--env-deny", "MY_*")
	require.Equal(t, 0, r.code, r.stderr)
	t.Cleanup(func() { in("session", "rm", "scrub") })

	r = in("exec", "--session", "scrub", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	names = envNames(r.stdout)
	for _, n := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "SSH_AUTH_SOCK", "MY_APP_TOKEN"} {
		assert.False(t, names[n], "session: %s reached the sandbox", n)
	}
	assert.True(t, names["ANTHROPIC_API_KEY"])
	assert.True(t, names["FOO"])

	r = in("exec", "--session", "scrub", "--env", "GH_TOKEN=fromexec", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "fromexec", "an exec's own --env is scrubbed too")

	// Carry mode: an export the script makes is snapshot and carried to the
	// next exec; a removed name must not come back that way.
	r = in("exec", "--session", "scrub", "-c", "export GITHUB_TOKEN=carried MY_X=carried2 KEEP=yes")
	require.Equal(t, 0, r.code, r.stderr)
	r = in("exec", "--session", "scrub", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "carried", "a carried export re-introduced a removed variable")
	assert.Contains(t, strings.Split(r.stdout, "\n"), "KEEP=yes", "an ordinary carried export still arrives")
}
