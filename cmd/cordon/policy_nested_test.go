package main

import (
	"bytes"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShellScript(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		script string
		ok     bool
	}{
		{[]string{"bash", "-c", "ls"}, "ls", true},
		{[]string{"/bin/sh", "-ec", "ls"}, "ls", true},
		{[]string{"bash", "-o", "pipefail", "-c", "ls"}, "ls", true},
		{[]string{"bash", "--norc", "-lc", "ls", "arg0"}, "ls", true},
		{[]string{"-bash", "-c", "ls"}, "ls", true},
		{[]string{"bash", "script.sh"}, "", false},
		{[]string{"bash", "-c"}, "", false},
		{[]string{"python3", "-c", "print()"}, "", false},
	} {
		s, _, ok := shellScript(tc.argv)
		assert.Equal(t, tc.ok, ok, "%q", tc.argv)
		assert.Equal(t, tc.script, s, "%q", tc.argv)
	}
}

func TestInnerCommands(t *testing.T) {
	pol, err := policy.Compile(policy.Config{Default: policy.Allow, Rules: []policy.Rule{{Decision: policy.Deny, Pattern: "git push"}}})
	require.NoError(t, err)
	var out bytes.Buffer
	d := printInner(&out, pol, []string{"bash", "-c", `ls && git push; echo "$(rm -rf x)"; $CMD a; 'git' "push" -f; sh -c 'git push'`}, 0)
	assert.Equal(t, policy.Deny, d)
	s := out.String()
	assert.Contains(t, s, "allow: ls (rule: default allow)")
	assert.Contains(t, s, `deny: git push (rule: deny "git push")`)
	assert.Contains(t, s, `deny: git push -f (rule: deny "git push")`, "quotes removed")
	assert.Contains(t, s, "allow: rm -rf x", "inside a command substitution")
	assert.Contains(t, s, `at exec time: "$CMD a"`)
	assert.Contains(t, s, "builtin: echo")
	assert.Contains(t, s, "      inner commands", "nested sh -c is followed")

	out.Reset()
	assert.Equal(t, policy.Allow, printInner(&out, pol, []string{"bash", "-c", "ls *.go; cat ~/x; echo {a,b}"}, 0))
	assert.Contains(t, out.String(), `at exec time: "ls *.go"`)
	assert.Contains(t, out.String(), `at exec time: "cat ~/x"`)

	out.Reset()
	assert.Equal(t, policy.Allow, printInner(&out, pol, []string{"bash", "-c", "if then fi ("}, 0))
	assert.Contains(t, out.String(), "does not parse")
}
