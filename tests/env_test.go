package tests

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertNoCordonEnv checks an `env` listing: no CORDON_* variable, and the
// ordinary FOO=bar the caller set.
func assertNoCordonEnv(t *testing.T, env string) {
	t.Helper()
	for _, line := range strings.Split(env, "\n") {
		assert.False(t, strings.HasPrefix(line, "CORDON_"), "cordon's own variable reached the workload: %q", line)
	}
	assert.NotContains(t, env, "secret", "the daemon's token reached the workload")
	assert.Contains(t, strings.Split(env, "\n"), "FOO=bar", "an ordinary variable still arrives")
}

// TestNoCordonVariableReachesTheWorkload: a workload that could read
// CORDON_TOKEN and CORDON_HOST could drive the daemon and start commands
// outside every sandbox. Every way of starting a command strips them.
func TestNoCordonVariableReachesTheWorkload(t *testing.T) {
	d := newDaemonEnv(t)
	disc := d.start()
	secret := []string{
		"CORDON_HOST=unix://" + filepath.Join(d.dir, "daemon.sock"),
		"CORDON_TOKEN=secret",
		"CORDON_TEST_INIT=/nonexistent",
		"FOO=bar",
	}
	in := func(args ...string) result {
		t.Helper()
		return d.cordonOpts(runOpts{env: secret}, args...)
	}

	tests := []struct {
		name string
		args []string
	}{
		{"run", []string{"--", "env"}},
		{"run subcommand", []string{"run", "--", "env"}},
		{"exec through the daemon", []string{"exec", "--", "env"}},
		{"exec --env", []string{"exec", "--env", "CORDON_TOKEN=secret", "--", "env"}},
		{"exec --no-daemon", []string{"exec", "--no-daemon", "--", "env"}},
		{"exec --no-daemon --env", []string{"exec", "--no-daemon", "--env", "CORDON_HOST=secret", "--", "env"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := in(tc.args...)
			require.Equal(t, 0, r.code, r.stderr)
			assertNoCordonEnv(t, r.stdout)
		})
	}

	t.Run("session", func(t *testing.T) {
		r := in("session", "create", "--name", "envs")
		require.Equal(t, 0, r.code, r.stderr)
		r = in("exec", "--session", "envs", "--", "env")
		require.Equal(t, 0, r.code, r.stderr)
		assertNoCordonEnv(t, r.stdout)
		r = in("exec", "--session", "envs", "--env", "CORDON_TOKEN=secret", "--", "env")
		require.Equal(t, 0, r.code, r.stderr)
		assertNoCordonEnv(t, r.stdout)

		r = in("start", "--session", "envs", "--", "env")
		require.Equal(t, 0, r.code, r.stderr)
		id := strings.TrimSpace(r.stdout)
		r = in("wait", id)
		require.Equal(t, 0, r.code, r.stderr)
		r = in("logs", id)
		require.Equal(t, 0, r.code, r.stderr)
		assertNoCordonEnv(t, r.stdout)
		in("session", "rm", "envs")
	})

	t.Run("API", func(t *testing.T) {
		env := `"env":["CORDON_TOKEN=secret","CORDON_HOST=unix:///x","FOO=bar"]`
		body, code := d.curl(disc, "-d", `{"argv":["env"],`+env+`}`, "/v1/exec")
		require.Equal(t, 200, code, body)
		var res struct {
			Stdout string `json:"stdout"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &res))
		assertNoCordonEnv(t, res.Stdout)

		body, code = d.curl(disc, "-d", `{"name":"api-envs","env":["CORDON_TOKEN=secret","FOO=bar"]}`, "/v1/sessions")
		require.Equal(t, 201, code, body)
		body, code = d.curl(disc, "-d", `{"session_id":"api-envs","argv":["env"],"env":["CORDON_HOST=secret"]}`, "/v1/exec")
		require.Equal(t, 200, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &res))
		assertNoCordonEnv(t, res.Stdout)

		body, code = d.curl(disc, "-d", `{"session_id":"api-envs","argv":["env"],"env":["CORDON_X=secret"]}`, "/v1/processes")
		require.Contains(t, []int{200, 201}, code, body)
		var p struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		body, code = d.curl(disc, "-X", "POST", "/v1/processes/"+p.ID+"/wait")
		require.Equal(t, 200, code, body)
		body, code = d.curl(disc, "/v1/processes/"+p.ID+"/events")
		require.Equal(t, 200, code, body)
		assert.NotContains(t, body, "CORDON_")
		assert.NotContains(t, body, "secret")
		assert.Contains(t, body, "FOO=bar")
		d.curl(disc, "-X", "DELETE", "/v1/sessions/api-envs")
	})
}
