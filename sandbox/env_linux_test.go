package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryWorkloadEnvHasNoCordonVariables: the Go library strips
// cordon's own variables whether they come from Options.Env, a session's
// spec or a request.
func TestLibraryWorkloadEnvHasNoCordonVariables(t *testing.T) {
	m := newTestManager(t, func(o *Options) {
		o.Env = append(append([]string{}, testEnv...), "CORDON_TOKEN=secret", "FOO=bar")
	})
	check := func(t *testing.T, out string) {
		t.Helper()
		lines := strings.Split(out, "\n")
		for _, l := range lines {
			assert.False(t, strings.HasPrefix(l, "CORDON_"), "reached the workload: %q", l)
		}
		assert.Contains(t, lines, "FOO=bar")
	}
	res, err := m.Exec(testCtx(t, 10*time.Second), ExecRequest{Argv: []string{"env"}, Env: []string{"CORDON_HOST=unix:///x"}})
	require.NoError(t, err)
	check(t, string(res.Stdout))

	s := newTestSession(t, m, SessionSpec{Env: append(append([]string{}, testEnv...), "CORDON_TOKEN=secret", "FOO=bar")})
	check(t, string(execIn(t, s, ExecRequest{Argv: []string{"env"}, Env: []string{"CORDON_X=1"}}).Stdout))
	p := start(t, s, StartRequest{Argv: []string{"env"}, Env: []string{"CORDON_Y=1"}})
	check(t, stdoutOf(collect(t, p, 0)))
}
