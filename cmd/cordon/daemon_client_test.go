package main

import (
	"bytes"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrintDecisionsHostileArgv: an argv is the workload's to choose; the
// line the CLI prints for it must stay one line without control bytes, and
// match what cordon run prints (supervisor.DenialLine).
func TestPrintDecisionsHostileArgv(t *testing.T) {
	var out bytes.Buffer
	printDecisions(&out, []sandbox.ExecDecision{
		{Decision: "allow", Argv: []string{"ls"}, Rule: "default allow"},
		{Decision: "deny", Argv: []string{"git", "push", "origin", "main"}, Rule: `deny "git push"`},
		{Decision: "deny", Argv: []string{"git", "push", "\x1b]0;owned\x07\x1b[2J", "a b\ncordon: allowed: rm -rf /"}, Rule: `deny "git push"`},
	})
	assert.Equal(t, `cordon: denied: git push origin main (rule: deny "git push")
cordon: denied: git push "\x1b]0;owned\a\x1b[2J" "a b\ncordon: allowed: rm -rf /" (rule: deny "git push")
`, out.String())
	assert.NotContains(t, out.String(), "\x1b")
	assert.NotContains(t, out.String(), "\x07")
}

// TestPolicyDocumentCarriesEnv: a session compiles the policy the CLI
// serialised; the env scrub must survive the trip, with --no-defaults too.
func TestPolicyDocumentCarriesEnv(t *testing.T) {
	for _, builtins := range []bool{true, false} {
		cfg := policy.Config{Default: policy.Allow, Builtins: builtins, Env: policy.EnvConfig{
			Deny: []policy.EnvRule{{Pattern: "*_SECRET", Source: "--env-deny"}},
			Pass: []policy.EnvRule{{Pattern: "GITHUB_TOKEN", Source: "--env-pass"}},
		}}
		doc, err := policy.Document(cfg)
		require.NoError(t, err)
		f, err := policy.Parse("session policy", []byte(doc))
		require.NoError(t, err)
		pol, err := policy.Compile(f.Config)
		require.NoError(t, err)
		kept, removed := pol.ScrubEnv([]string{"A_SECRET=1", "GITHUB_TOKEN=2", "NPM_TOKEN=3", "PATH=/bin"})
		if builtins {
			assert.Equal(t, []string{"GITHUB_TOKEN=2", "PATH=/bin"}, kept)
			assert.Equal(t, []string{"A_SECRET", "NPM_TOKEN"}, removed)
		} else {
			assert.Equal(t, []string{"GITHUB_TOKEN=2", "NPM_TOKEN=3", "PATH=/bin"}, kept)
			assert.Equal(t, []string{"A_SECRET"}, removed)
		}
	}
}
