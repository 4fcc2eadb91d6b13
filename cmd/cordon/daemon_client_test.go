package main

import (
	"bytes"
	"testing"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/stretchr/testify/assert"
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
