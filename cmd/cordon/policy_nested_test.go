package main

import (
	"bytes"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInnerCommands(t *testing.T) {
	pol, err := policy.Compile(policy.Config{Default: policy.Allow, Rules: []policy.Rule{{Decision: policy.Deny, Pattern: "git push"}}})
	require.NoError(t, err)
	var out bytes.Buffer
	d := printInner(&out, pol, []string{"bash", "-c", `ls && git push; echo "$(rm -rf x)"; $CMD a; 'git' "push" -f; sh -c 'git push'`})
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
	assert.Equal(t, policy.Allow, printInner(&out, pol, []string{"bash", "-c", "ls *.go; cat ~/x; echo {a,b}"}))
	assert.Contains(t, out.String(), `at exec time: "ls *.go"`)
	assert.Contains(t, out.String(), `at exec time: "cat ~/x"`)

	out.Reset()
	assert.Equal(t, policy.Allow, printInner(&out, pol, []string{"bash", "-c", "if then fi ("}))
	assert.Contains(t, out.String(), "does not parse")
}
