package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// compileRules compiles rules written "deny git push" (decision, then the
// pattern) with default def and without the built-ins.
func compileRules(t testing.TB, def Decision, rules ...string) *Policy {
	t.Helper()
	cfg := Config{Default: def}
	for i, r := range rules {
		d, pat, ok := strings.Cut(r, " ")
		require.True(t, ok, "rule %q", r)
		dec, err := ParseDecision(d)
		require.NoError(t, err)
		cfg.Rules = append(cfg.Rules, Rule{Decision: dec, Pattern: pat, Source: fmt.Sprintf("test:%d", i+1)})
	}
	p, err := Compile(cfg)
	require.NoError(t, err)
	return p
}

// decideArgv decides argv run by name: Path and Resolved are argv[0].
func decideArgv(p *Policy, argv ...string) Result {
	return p.Decide(&Exec{Argv: argv, Path: argv[0], Resolved: argv[0]})
}

// fields splits a test command line on blanks.
func fields(s string) []string { return strings.Fields(s) }
